// The roofline (inspector/roofline.h): FLOPs and bytes of Kiln plans built on the CPU
// backend (a fused Conv + bias + Relu, a MatMul + bias, a Gemm, tiny BERT's fused
// attention, a pointwise chain) and of a real TensorRT engine's trtexec export, checked
// against hand counts; intensity and percent of roofline on a made-up peak table; the
// device table; the CSV columns.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/builder/builder_fixture.h"
#include "inspector/csv_reader.h"
#include "roofline.h"
#include "support/test_graph.h"

namespace kiln::inspector {
namespace {

const std::string kDir = std::string(KILN_TEST_DATA_DIR) + "/trtexec/";

ValueInfo floatInput(const std::string& name, std::vector<int64_t> dims) {
  ValueInfo v{name, DataType::kFloat32, true, {}};
  for (int64_t d : dims) v.shape.push_back(DimExpr(d));
  return v;
}

Tensor filled(Shape shape, float value) {
  std::vector<float> values(static_cast<size_t>(shapeNumel(shape)), value);
  return Tensor::fromVector(DataType::kFloat32, std::move(shape), values);
}

// A network of `nodes` over `inputs`, with `weights`, ending in "out"; built on the CPU.
EngineReport builtReport(std::vector<ValueInfo> inputs, std::map<std::string, Tensor> weights,
                         std::vector<Node> nodes) {
  auto net = std::make_shared<Network>();
  net->opsets[""] = 17;
  net->graph.inputs = std::move(inputs);
  net->graph.initializers = std::move(weights);
  net->graph.nodes = std::move(nodes);
  net->graph.outputs = {{"out", DataType::kUndefined, false, {}}};
  const Plan plan = test::buildOnCpu(net, BuilderConfig{});
  return reportFromPlan(plan, "in-code.kiln");
}

const ReportLayer* layerOfType(const EngineReport& r, const std::string& op) {
  for (const ReportLayer& l : r.layers)
    if (l.opType == op) return &l;
  return nullptr;
}

TEST(Roofline, FusedConvBiasReluHandCount) {
  using test::makeNode;
  EngineReport r =
      builtReport({floatInput("x", {1, 8, 16, 16})},
                  {{"w", filled({16, 8, 3, 3}, 0.1f)}, {"b", filled({16}, 0.f)}},
                  {test::withInts(makeNode("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1}),
                   makeNode("Relu", {"c"}, {"out"})});
  ASSERT_EQ(r.layers.size(), 1u);
  const ReportLayer& conv = r.layers[0];
  EXPECT_EQ(conv.opType, "FusedConv");
  // y [1, 16, 16, 16] = 4096 elements, each a dot product over 8 x 3 x 3: 2 * 4096 * 72 MACs'
  // FLOPs, then the bias and the Relu one each per element.
  EXPECT_EQ(conv.flops, 2.0 * 4096 * 72 + 4096 + 4096);
  // x 8*16*16, w 16*8*9, b 16 and y 4096 FP32 values.
  EXPECT_EQ(reportLayerBytes(conv).value(), 4.0 * (2048 + 1152 + 16 + 4096));
  const LayerRoofline roof = layerRooflines(r, nullptr)[0];
  EXPECT_DOUBLE_EQ(roof.intensity, (2.0 * 4096 * 72 + 8192) / (4.0 * 7312));
}

TEST(Roofline, MatMulWithBiasAndGemmHandCounts) {
  using test::makeNode;
  EngineReport r = builtReport(
      {floatInput("x", {2, 16, 32})}, {{"w", filled({32, 24}, 0.1f)}, {"b", filled({24}, 1.f)}},
      {makeNode("MatMul", {"x", "w"}, {"m"}), makeNode("Add", {"m", "b"}, {"out"})});
  const ReportLayer* mm = layerOfType(r, "FusedMatMul");
  ASSERT_NE(mm, nullptr);
  // y [2, 16, 24] = 768 elements over K = 32, plus the bias.
  EXPECT_EQ(mm->flops, 2.0 * 768 * 32 + 768);
  EngineReport g = builtReport(
      {floatInput("x", {4, 32})}, {{"wt", filled({24, 32}, 0.1f)}, {"c", filled({24}, 1.f)}},
      {test::withInt(makeNode("Gemm", {"x", "wt", "c"}, {"out"}), "transB", 1)});
  ASSERT_EQ(g.layers.size(), 1u);
  // A Gemm with its own C stays a Gemm (already one GEMM): y [4, 24] over K = 32, plus C.
  EXPECT_EQ(g.layers[0].flops, 2.0 * 96 * 32 + 96);
}

TEST(Roofline, PointwiseChainCountsOneFlopPerElementPerOp) {
  using test::makeNode;
  EngineReport r =
      builtReport({floatInput("x", {2, 3, 8}), floatInput("y", {2, 3, 8})}, {},
                  {makeNode("Add", {"x", "y"}, {"s"}), makeNode("Relu", {"s"}, {"r"}),
                   makeNode("Sigmoid", {"r"}, {"g"}), makeNode("Mul", {"g", "x"}, {"out"})});
  const ReportLayer* chain = layerOfType(r, "PointwiseChain");
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->flops, 48.0 * 4);
  // Reads x and y, writes out: 3 x 48 FP32 values.
  EXPECT_EQ(reportLayerBytes(*chain).value(), 3 * 48 * 4.0);
}

TEST(Roofline, FusedAttentionOfTinyBertAtTheOptShape) {
  BuilderConfig config;
  config.profiles = {test::bertProfile({1, 4}, {2, 16}, {4, 32})};
  const Plan plan = test::buildOnCpu(test::tinyBertNetwork(), config);
  const EngineReport r = reportFromPlan(plan, "bert.kiln");
  const ReportLayer* attention = layerOfType(r, "FusedAttention");
  ASSERT_NE(attention, nullptr);
  // B = 2, Sq = Sk = 16 at the opt shape; H x D = hidden 32: 4 B H Sq Sk D.
  EXPECT_EQ(attention->flops, 4.0 * 2 * 16 * 16 * 32);
  // The projections: [2, 16, 32] x [32, 32] + bias.
  const ReportLayer* q = layerOfType(r, "FusedMatMul");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->flops, 2.0 * 1024 * 32 + 1024);
  // Every layer of the plan gets a count; the Reshapes move nothing.
  for (const ReportLayer& l : r.layers) EXPECT_GE(l.flops, 0) << l.name;
}

TEST(Roofline, TrtexecLayersFromTheExportFields) {
  auto report = reportFromTrtexec(kDir + "mobilenet_v2_residuals.qat.onnx.engine.graph.json",
                                  kDir + "mobilenet_v2_residuals.qat.onnx.engine.profile.json");
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  const EngineReport& r = *report;
  // QuantizeLinear_2: a Reformat FP32 -> INT8 of [1, 3, 224, 224]: no FLOPs, 5 bytes each.
  EXPECT_EQ(reportLayerFlops(r.layers[0]).value(), 0.0);
  EXPECT_EQ(reportLayerBytes(r.layers[0]).value(), 150528.0 * 5);
  // The stem: 3 -> 32 channels, 3x3, stride 2, bias and clipped ReLU, INT8.
  const ReportLayer& stem = r.layers[1];
  const double out = 32.0 * 112 * 112;
  EXPECT_EQ(reportLayerFlops(stem).value(), 2 * out * 3 * 9 + 2 * out);
  // INT8 input and output, 864 INT8 weights and 32 FP32 biases.
  EXPECT_EQ(reportLayerBytes(stem).value(), 150528.0 + out + 864 + 32 * 4);
  // The depthwise 3x3 (groups 32): each output reads 1 channel x 9 taps.
  const ReportLayer& dw = r.layers[2];
  EXPECT_EQ(dw.layerType, "CudaDepthwiseConvolution");
  EXPECT_EQ(reportLayerFlops(dw).value(), 2 * out * 9 + 2 * out);
  // A 7x7 global average pooling of 1280 channels.
  for (const ReportLayer& l : r.layers)
    if (l.name == "GlobalAveragePool_747") EXPECT_EQ(reportLayerFlops(l).value(), 1280.0 * 49);
  // Timed: achieved FLOP/s is FLOPs over the median time.
  const LayerRoofline roof = layerRooflines(r, nullptr)[1];
  EXPECT_NEAR(roof.achievedFlops, roof.flops / (stem.milliseconds * 1e-3), 1);
  EXPECT_EQ(roof.percentOfRoof, -1);  // no peaks given
}

ReportLayer madeUpLayer(const std::string& type, double flops, double ms) {
  ReportLayer l;
  l.name = type;
  l.layerType = type;
  l.precision = "FP32";
  l.flops = flops;
  l.milliseconds = ms;
  l.inputs = {{"a", {1000}, "Row major linear FP32"}};
  l.outputs = {{"b", {1000}, "Row major linear FP32"}};
  return l;
}

TEST(Roofline, IntensityAndPercentOnAMadeUpPeakTable) {
  EngineReport r;
  r.layers = {madeUpLayer("Gemm", 4e6, 0.02), madeUpLayer("Reformat", -1, 0.01)};
  DevicePeaks memoryBound{"made-up", 1e12, 2e12, 4e12, 1e9};
  std::vector<LayerRoofline> roofs = layerRooflines(r, &memoryBound);
  EXPECT_EQ(roofs[0].bytes, 8000);
  EXPECT_EQ(roofs[0].intensity, 500);
  // min(1e12, 500 * 1e9) = 5e11; achieved 4e6 / 2e-5 s = 2e11: 40%.
  EXPECT_DOUBLE_EQ(roofs[0].roofFlops, 5e11);
  EXPECT_DOUBLE_EQ(roofs[0].achievedFlops, 2e11);
  EXPECT_DOUBLE_EQ(roofs[0].percentOfRoof, 40);
  EXPECT_DOUBLE_EQ(roofs[0].achievedBytesPerSecond, 8000 / 2e-5);
  // A reformat computes nothing: 8000 B over 1e-5 s = 8e8 B/s of 1e9.
  EXPECT_EQ(roofs[1].flops, 0);
  EXPECT_DOUBLE_EQ(roofs[1].percentOfRoof, 80);
  // Compute-bound with more bandwidth: min(1e12, 500 * 1e10) = 1e12: 20%.
  DevicePeaks computeBound{"made-up", 1e12, 2e12, 4e12, 1e10};
  roofs = layerRooflines(r, &computeBound);
  EXPECT_DOUBLE_EQ(roofs[0].percentOfRoof, 20);
  // The FP16 roof is the FP16 peak.
  r.layers[0].precision = "FP16";
  EXPECT_DOUBLE_EQ(layerRooflines(r, &computeBound)[0].roofFlops, 2e12);
}

TEST(Roofline, DynamicOrMissingDimsAreUnknownNotGuessed) {
  EngineReport r;
  ReportLayer l = madeUpLayer("ElementWise", -1, 0.01);
  l.outputs[0].dimensions = {-1, 1000};
  r.layers = {l};
  const LayerRoofline roof = layerRooflines(r, nullptr)[0];
  EXPECT_EQ(roof.flops, -1);
  EXPECT_EQ(roof.bytes, -1);
  EXPECT_EQ(roof.intensity, -1);
  EXPECT_NE(roof.unknown.find("dynamic"), std::string::npos) << roof.unknown;
  EXPECT_NE(formatRooflineTable(r, nullptr).find("1 with unknown counts"), std::string::npos);
}

TEST(Roofline, PeaksChosenByDeviceName) {
  EXPECT_EQ(peaksForDevice("NVIDIA H100 80GB HBM3")->name, "H100 SXM");
  EXPECT_EQ(peaksForDevice("NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_EQ(peaksForDevice("NVIDIA H200")->name, "H200");
  EXPECT_EQ(peaksForDevice("NVIDIA A100-SXM4-40GB")->name, "A100 40GB");
  EXPECT_EQ(peaksForDevice("NVIDIA A100-SXM4-80GB")->name, "A100 80GB");
  EXPECT_EQ(peaksForDevice("NVIDIA L4")->name, "L4");
  EXPECT_EQ(peaksForDevice("NVIDIA GeForce RTX 4090")->name, "RTX 4090");
  EXPECT_EQ(peaksForDevice("h100 sxm")->name, "H100 SXM");
  EXPECT_FALSE(peaksForDevice("NVIDIA L40S"));
  EXPECT_FALSE(peaksForDevice("AMD EPYC 9654"));
  EXPECT_FALSE(peaksForDevice(""));
  const DevicePeaks h200 = *peaksForDevice("H200");
  EXPECT_DOUBLE_EQ(h200.dramBytesPerSecond, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.computePeak("INT8"), 1979e12);
  EXPECT_DOUBLE_EQ(h200.computePeak("BF16"), 989.4e12);
  EXPECT_DOUBLE_EQ(h200.computePeak("FP32"), 67e12);
}

TEST(Roofline, CsvCarriesTheRooflineColumns) {
  auto report = reportFromTrtexec(kDir + "mobilenet_v2_residuals.qat.onnx.engine.graph.json",
                                  kDir + "mobilenet_v2_residuals.qat.onnx.engine.profile.json");
  ASSERT_TRUE(report.isOk());
  report->device = "NVIDIA H100 80GB HBM3";
  std::vector<std::vector<std::string>> rows;
  std::string error;
  ASSERT_TRUE(test::readCsv(reportCsv(*report), &rows, &error)) << error;
  ASSERT_EQ(rows[0].size(), 15u);
  EXPECT_EQ(rows[0][9], "flops");
  EXPECT_EQ(rows[0][14], "percent_of_roofline");
  const double out = 32.0 * 112 * 112;
  EXPECT_EQ(std::stod(rows[2][9]), 2 * out * 27 + 2 * out);
  EXPECT_EQ(std::stod(rows[2][10]), 150528.0 + out + 864 + 128);
  const DevicePeaks h100 = *peaksForDevice(report->device);
  const LayerRoofline roof = layerRooflines(*report, &h100)[1];
  EXPECT_NEAR(std::stod(rows[2][14]), roof.percentOfRoof, 0.01);
  EXPECT_GT(roof.percentOfRoof, 0);
  // Unknown peaks: the percent column is empty, the counts are not.
  report->device.clear();
  rows.clear();
  ASSERT_TRUE(test::readCsv(reportCsv(*report), &rows, &error)) << error;
  EXPECT_EQ(rows[2][14], "");
  EXPECT_FALSE(rows[2][9].empty());
}

}  // namespace
}  // namespace kiln::inspector
