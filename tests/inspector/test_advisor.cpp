// The advisor's rules (inspector/advisor.h) on a real TensorRT engine (the QAT MobileNet V2
// trtexec export with its profile) and on reports planted with each rule's problem.
#include <gtest/gtest.h>

#include <algorithm>

#include "advisor.h"
#include "kiln/json_reader.h"

namespace kiln::inspector {
namespace {

const std::string kDir = std::string(KILN_TEST_DATA_DIR) + "/trtexec/";

const Finding* findRule(const std::vector<Finding>& findings, const std::string& rule,
                        AdviceSeverity severity) {
  for (const Finding& f : findings)
    if (f.rule == rule && f.severity == severity) return &f;
  return nullptr;
}

TEST(Advisor, QatMobileNetEngineFindings) {
  auto report = reportFromTrtexec(kDir + "mobilenet.qat.onnx.engine.graph.json",
                                  kDir + "mobilenet.qat.onnx.engine.profile.json");
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  const std::vector<Finding> findings = adviseEngine(*report);
  const Finding* wide = findRule(findings, "int8-conv-wide-output", AdviceSeverity::kWarning);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->layers.size(), 17u);
  EXPECT_EQ(wide->layers[0], "features.2.conv.2.weight + QuantizeLinear_90 + Conv_94");
  EXPECT_GT(wide->costMs, 0);
  const Finding* types = findRule(findings, "reformat-changes-type", AdviceSeverity::kWarning);
  ASSERT_NE(types, nullptr);
  EXPECT_NE(types->message.find("13 FP16 -> INT8, 4 FP32 -> INT8"), std::string::npos)
      << types->message;
  const Finding* aligned = findRule(findings, "channel-alignment", AdviceSeverity::kWarning);
  // INT8 wants multiples of 16: MobileNet V2's 24-channel stage (the two projections
  // writing it and the two expansions reading it) and the classifier's 1000 outputs.
  ASSERT_NE(aligned, nullptr);
  EXPECT_EQ(aligned->layers.size(), 5u);
  EXPECT_EQ(aligned->layers[0], "features.2.conv.2.weight + QuantizeLinear_90 + Conv_94");
  const Finding* stem = findRule(findings, "channel-alignment", AdviceSeverity::kInfo);
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->layers.size(), 1u);
  // Ordered by cost, largest first; every timed finding's cost is its layers' sum.
  for (size_t i = 1; i < findings.size(); ++i)
    if (findings[i].costMs >= 0) EXPECT_LE(findings[i].costMs, findings[i - 1].costMs);
  const nlohmann::json doc = adviceJson(findings);
  EXPECT_EQ(doc["findings"].size(), findings.size());
  EXPECT_EQ(doc["findings"][0]["rule"], findings[0].rule);
  EXPECT_NE(formatAdvice(findings).find("fix: "), std::string::npos);
}

ReportTensor tensor(const std::string& name, std::vector<int64_t> dims, const std::string& fmt) {
  ReportTensor t;
  t.name = name;
  t.dimensions = std::move(dims);
  t.formatDatatype = fmt;
  return t;
}

ReportLayer layer(const std::string& name, const std::string& type, const std::string& precision,
                  ReportTensor in, ReportTensor out) {
  ReportLayer l;
  l.name = name;
  l.layerType = type;
  l.precision = precision;
  l.inputs = {std::move(in)};
  l.outputs = {std::move(out)};
  l.outputBytes = 1024;
  return l;
}

// Each rule's problem planted once: a 3-channel FP16 stem, an FP16 convolution with 12 -> 20
// channels, a Transpose that changes FP32 to FP16, an FP32 island in an FP16 engine.
TEST(Advisor, PlantedProblemsEachFindTheirRule) {
  EngineReport r;
  r.layers.push_back(layer("stem", "Convolution", "FP16",
                           tensor("x", {1, 3, 32, 32}, "Row major linear FP16"),
                           tensor("s", {1, 16, 16, 16}, "Row major linear FP16")));
  r.layers.push_back(layer("odd", "Convolution", "FP16",
                           tensor("s", {1, 12, 16, 16}, "Row major linear FP16"),
                           tensor("o", {1, 20, 16, 16}, "Row major linear FP16")));
  r.layers.push_back(layer("to_half", "Transpose", "FP16",
                           tensor("o", {1, 20, 16, 16}, "Row major linear FP32"),
                           tensor("t", {1, 16, 16, 20}, "Row major linear FP16")));
  r.layers.push_back(layer("island", "MatrixMultiply", "FP32",
                           tensor("t", {1, 16, 16, 20}, "Row major linear FP32"),
                           tensor("y", {1, 16, 16, 8}, "Row major linear FP32")));
  // A Kiln channels-last convolution records NHWC dims: 128 -> 256 channels, aligned
  // (read as C = 7 from dims[1], ResNet-50's layer4 was flagged on the device).
  r.layers.push_back(layer("nhwc", "Convolution", "FP16",
                           tensor("y", {1, 7, 7, 128}, "Channels-last linear (NHWC) FP16"),
                           tensor("z", {1, 7, 7, 256}, "Channels-last linear (NHWC) FP16")));
  const std::vector<Finding> findings = adviseEngine(r);
  const Finding* odd = findRule(findings, "channel-alignment", AdviceSeverity::kWarning);
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->layers, std::vector<std::string>{"odd"});
  EXPECT_EQ(odd->costMs, -1);  // untimed report: no cost
  const Finding* stem = findRule(findings, "channel-alignment", AdviceSeverity::kInfo);
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->layers, std::vector<std::string>{"stem"});
  const Finding* types = findRule(findings, "reformat-changes-type", AdviceSeverity::kWarning);
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->layers, std::vector<std::string>{"to_half"});
  EXPECT_NE(findRule(findings, "layout-copies", AdviceSeverity::kInfo), nullptr);
  const Finding* island = findRule(findings, "fp32-layers", AdviceSeverity::kInfo);
  ASSERT_NE(island, nullptr);
  EXPECT_EQ(island->layers, std::vector<std::string>{"island"});
  EXPECT_EQ(findRule(findings, "int8-conv-wide-output", AdviceSeverity::kWarning), nullptr);
}

// An FP32 MatMul between FP16 convolutions, with a reformat each way: an island whose
// cost is its reformats. The FP16 convolution after it sits between two FP32 layers: an
// island too. The first and last layers have a neighbour on one side only: none.
TEST(Advisor, PrecisionIslandCostsItsReformats) {
  EngineReport r;
  r.origin = "trtexec export";
  const std::string h = "Row major linear FP16", f = "Row major linear FP32";
  struct Row {
    const char *name, *type, *precision, *in, *out;
    const std::string &inFormat, &outFormat;
    double ms;
  };
  const Row rows[] = {{"a", "Convolution", "FP16", "x", "a", h, h, 0.1},
                      {"r1", "Reformat", "FP32", "a", "a32", h, f, 0.02},
                      {"island", "MatrixMultiply", "FP32", "a32", "b32", f, f, 0.2},
                      {"r2", "Reformat", "FP16", "b32", "b", f, h, 0.03},
                      {"c", "Convolution", "FP16", "b", "c", h, h, 0.1},
                      {"r3", "Reformat", "FP32", "c", "c32", h, f, 0.01},
                      {"tail", "SoftMax", "FP32", "c32", "y", f, f, 0.05}};
  for (const Row& row : rows) {
    r.layers.push_back(layer(row.name, row.type, row.precision,
                             tensor(row.in, {1, 16, 8, 8}, row.inFormat),
                             tensor(row.out, {1, 16, 8, 8}, row.outFormat)));
    r.layers.back().milliseconds = row.ms;
  }
  const std::vector<Finding> findings = adviseEngine(r);
  std::vector<const Finding*> islands;
  for (const Finding& x : findings)
    if (x.rule == "precision-island") islands.push_back(&x);
  ASSERT_EQ(islands.size(), 2u);
  EXPECT_EQ(islands[0]->layers, (std::vector<std::string>{"island", "r1", "r2"}));
  EXPECT_NEAR(islands[0]->costMs, 0.05, 1e-9);
  EXPECT_NE(islands[0]->message.find("'island' computes in FP32 between FP16 layers"),
            std::string::npos)
      << islands[0]->message;
  EXPECT_NE(islands[0]->fix.find("--layerPrecisions='island':fp16"), std::string::npos)
      << islands[0]->fix;
  EXPECT_EQ(islands[1]->layers, (std::vector<std::string>{"c", "r2", "r3"}));
  EXPECT_NEAR(islands[1]->costMs, 0.04, 1e-9);
}

// TensorRT's "Weights" entries and Kiln plans' "weights NAME" parameters: FP32 weights of
// FP16 layers are reported with the bytes they add; INT8 weights of an INT8 layer and FP32
// weights of an FP32 layer are not.
TEST(Advisor, WeightsWiderThanTheLayerComputesIn) {
  EngineReport r;
  const std::string h = "Row major linear FP16";
  struct Row {
    const char *name, *type, *precision, *in, *out, *key, *value;
  };
  const Row rows[] = {
      {"trt_conv", "Convolution", "FP16", "x", "a", "Weights",
       R"({"Count":1048576,"Type":"Float"})"},
      {"kiln_gemm", "MatMul", "FP16", "a", "b", "weights w", "float32 x 524288"},
      {"int8_conv", "Convolution", "INT8", "b", "c", "Weights", R"({"Count":4096,"Type":"Int8"})"},
      {"fp32_gemm", "MatMul", "FP32", "c", "d", "weights v", "float32 x 4096"}};
  for (const Row& row : rows) {
    r.layers.push_back(layer(row.name, row.type, row.precision, tensor(row.in, {1, 8, 8, 8}, h),
                             tensor(row.out, {1, 8, 8, 8}, h)));
    r.layers.back().parameters[row.key] = row.value;
  }
  const std::vector<Finding> findings = adviseEngine(r);
  const Finding* wide = findRule(findings, "weights-wider-than-compute", AdviceSeverity::kInfo);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->layers, (std::vector<std::string>{"trt_conv", "kiln_gemm"}));
  EXPECT_NE(wide->message.find("2 FP32 weights, FP16 layer"), std::string::npos) << wide->message;
  EXPECT_NE(wide->message.find("3.00 MiB"), std::string::npos) << wide->message;
  EXPECT_EQ(wide->costMs, -1);
}

TEST(Advisor, AnFp32EngineWithAlignedLayersHasNothingToSay) {
  EngineReport r;
  r.layers.push_back(layer("conv", "Convolution", "FP32",
                           tensor("x", {1, 3, 32, 32}, "Row major linear FP32"),
                           tensor("y", {1, 16, 32, 32}, "Row major linear FP32")));
  EXPECT_TRUE(adviseEngine(r).empty());
  EXPECT_EQ(formatAdvice({}), "no findings\n");
}

}  // namespace
}  // namespace kiln::inspector

namespace kiln::inspector {
namespace {

const std::string kAdvisorDir = std::string(KILN_TEST_DATA_DIR) + "/advisor/";

EngineReport fixture(const std::string& name) {
  auto report = reportFromTrtexec(kAdvisorDir + name, "");
  EXPECT_TRUE(report.isOk()) << report.status().toString();
  return report.isOk() ? std::move(report.value()) : EngineReport{};
}

const Finding* ruleFinding(const std::vector<Finding>& findings, const std::string& rule,
                           AdviceSeverity severity = AdviceSeverity::kWarning) {
  for (const Finding& f : findings)
    if (f.rule == rule && f.severity == severity) return &f;
  return nullptr;
}

TEST(AdvisorRules, HostFallbackFromTheBuildDetailAndFromKilnRun) {
  EngineReport r = fixture("host_fallback.graph.json");
  std::vector<Finding> findings = adviseEngine(r);
  const Finding* host = ruleFinding(findings, "host-fallback", AdviceSeverity::kError);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->layers, std::vector<std::string>{"nonzero"});
  EXPECT_DOUBLE_EQ(host->costMs, 0.5);
  EXPECT_NE(host->fix.find("kiln ops"), std::string::npos);
  // `kiln run --json` places TopK on the host too; the build could not tell.
  auto run = readJsonFile(kAdvisorDir + "host_fallback.run.json");
  ASSERT_TRUE(run.isOk());
  auto marked = applyRunPlacements(*run, &r);
  ASSERT_TRUE(marked.isOk());
  EXPECT_EQ(*marked, 1);
  EXPECT_EQ(r.layers[2].parameters["placement note"], "int64 K on the host");
  findings = adviseEngine(r);
  host = ruleFinding(findings, "host-fallback", AdviceSeverity::kError);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->layers, (std::vector<std::string>{"nonzero", "topk"}));
  EXPECT_DOUBLE_EQ(host->costMs, 0.6);
  EXPECT_FALSE(applyRunPlacements(nlohmann::json::object(), &r).isOk());
}

TEST(AdvisorRules, AHostFallbackCandidateThatLostIsNoFinding) {
  // The stem kernel and its host fallback are timed under one tactic id (ResNet-50's
  // INT8 plan: 0.095 ms against 1,562 ms): of the layer's precision, the fastest won.
  EngineReport r = fixture("host_fallback.graph.json");
  auto it = std::find_if(r.layers.begin(), r.layers.end(),
                         [](const ReportLayer& l) { return l.name == "nonzero"; });
  ASSERT_NE(it, r.layers.end());
  ReportLayer& nonzero = *it;
  ASSERT_FALSE(nonzero.candidates.empty());
  ReportCandidate gpu = nonzero.candidates[0];
  gpu.detail = "gpu: a kernel";
  gpu.milliseconds = 0.095;
  for (ReportCandidate& c : nonzero.candidates)
    if (c.tactic == nonzero.tactic) c.milliseconds = 1562.3;
  nonzero.candidates.push_back(gpu);
  const Finding* host = ruleFinding(adviseEngine(r), "host-fallback", AdviceSeverity::kError);
  EXPECT_EQ(host, nullptr);
  // The layer runs in its own precision: an FP16 layer whose fp16 candidate is the host
  // fallback runs on the host, however fast its fp32 GPU candidate timed.
  nonzero.precision = "FP16";
  for (ReportCandidate& c : nonzero.candidates)
    c.precision = c.detail.rfind("host-fallback", 0) == 0 ? "fp16" : "fp32";
  host = ruleFinding(adviseEngine(r), "host-fallback", AdviceSeverity::kError);
  ASSERT_NE(host, nullptr);
}

TEST(AdvisorRules, SliceThatChangesType) {
  const std::vector<Finding> findings = adviseEngine(fixture("slice_changes_type.graph.json"));
  const Finding* slice = ruleFinding(findings, "slice-changes-type");
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(slice->layers, std::vector<std::string>{"Slice_5"});
  EXPECT_DOUBLE_EQ(slice->costMs, 0.02);
  // A Slice is not a reformat: the reformat rule leaves it to this one.
  EXPECT_EQ(ruleFinding(findings, "reformat-changes-type"), nullptr);
}

TEST(AdvisorRules, UnfusedQuantizeAndDequantize) {
  const std::vector<Finding> findings = adviseEngine(fixture("unfused_qdq.graph.json"));
  const Finding* qdq = ruleFinding(findings, "unfused-qdq");
  ASSERT_NE(qdq, nullptr);
  // The Scale layer TensorRT made of QuantizeLinear_7 and the Dequantize; not the folded
  // convolution nor the quantizing input reformat.
  EXPECT_EQ(qdq->layers, (std::vector<std::string>{"QuantizeLinear_7", "DequantizeLinear_9"}));
  EXPECT_DOUBLE_EQ(qdq->costMs, 0.07);
}

TEST(AdvisorRules, ConvolutionsOffTensorCores) {
  const std::vector<Finding> findings = adviseEngine(fixture("conv_tensor_cores.graph.json"));
  const Finding* off = ruleFinding(findings, "conv-not-on-tensor-cores");
  ASSERT_NE(off, nullptr);
  // The 3-channel FP16 stem (C < 8) and the FP16 conv on a pre-tensor-core kernel; not the
  // xmma one, not the FP32 one.
  EXPECT_EQ(off->layers, (std::vector<std::string>{"stem", "slow"}));
  EXPECT_NE(off->message.find("1 by kernel name, 1 with C < 8"), std::string::npos) << off->message;
  EXPECT_DOUBLE_EQ(off->costMs, 0.8);
  const Finding* dw = ruleFinding(findings, "conv-not-on-tensor-cores", AdviceSeverity::kInfo);
  ASSERT_NE(dw, nullptr);
  EXPECT_EQ(dw->layers, std::vector<std::string>{"dw"});
}

TEST(AdvisorRules, OptShapeFarFromTheRunShapes) {
  const EngineReport r = fixture("opt_shape_far.graph.json");
  ASSERT_EQ(r.ioTensors.size(), 2u);
  AdviseOptions options;
  EXPECT_EQ(ruleFinding(adviseEngine(r, options), "opt-shape-far"), nullptr);  // run unknown
  options.runShapes["images"] = {2, 3, 224, 224};  // opt 1: 2x, not more
  EXPECT_EQ(ruleFinding(adviseEngine(r, options), "opt-shape-far"), nullptr);
  options.runShapes["images"] = {16, 3, 224, 224};
  const std::vector<Finding> findings = adviseEngine(r, options);
  const Finding* far = ruleFinding(findings, "opt-shape-far");
  ASSERT_NE(far, nullptr);
  EXPECT_NE(far->message.find("images ran at 16x3x224x224, profile 0's opt is 1x3x224x224"),
            std::string::npos)
      << far->message;
  EXPECT_NE(far->fix.find("--opt-shapes images:16x3x224x224"), std::string::npos) << far->fix;
  EXPECT_EQ(far->layers, std::vector<std::string>{"conv"});
}

TEST(AdvisorRules, OptShapeFarOnAKilnPlansProfiles) {
  Plan plan;
  OptimizationProfile profile;
  profile.inputs["input_ids"] = {{1, 4}, {2, 16}, {4, 128}};
  plan.profiles = {profile};
  EngineReport r;
  addPlanProfiles(plan, &r);
  ASSERT_EQ(r.ioTensors.size(), 1u);
  ASSERT_EQ(r.ioTensors[0].profiles.size(), 1u);
  EXPECT_EQ(r.ioTensors[0].profiles[0].opt, (std::vector<int64_t>{2, 16}));
  AdviseOptions options;
  options.runShapes["input_ids"] = {2, 128};  // sequence 128 against opt 16
  EXPECT_NE(ruleFinding(adviseEngine(r, options), "opt-shape-far"), nullptr);
}

TEST(AdvisorRules, LayersFarBelowTheirRoofline) {
  EngineReport r = fixture("below_roofline.graph.json");
  EXPECT_EQ(ruleFinding(adviseEngine(r), "below-roofline"), nullptr);  // no device, no peaks
  const DevicePeaks h100 = *peaksForDevice("H100 SXM");
  AdviseOptions options;
  options.peaks = &h100;
  const std::vector<Finding> findings = adviseEngine(r, options);
  const Finding* below = ruleFinding(findings, "below-roofline");
  ASSERT_NE(below, nullptr);
  // The GEMM (2 TFLOP/s of 989) and the 0.3 ms reformat; the ReLU runs near its memory
  // roof and the tiny copy takes under 5% of the time.
  EXPECT_EQ(below->layers, (std::vector<std::string>{"gemm", "to_fp32"}));
  EXPECT_DOUBLE_EQ(below->costMs, 1.3);
  // The report's device picks the same peaks.
  r.device = "NVIDIA H100 80GB HBM3";
  EXPECT_NE(ruleFinding(adviseEngine(r), "below-roofline"), nullptr);
}

}  // namespace
}  // namespace kiln::inspector
