// EngineReport from trtexec exports of real TensorRT engines (tests/data/trtexec:
// MobileNet V2 QAT engines built on a TITAN RTX, graph + profile JSON), the CSV,
// text and JSON forms, and the errors for bad exports.
// mobilenet_v2_residuals.names_only.graph.json is the residuals graph reduced to
// layer names, as trtexec writes it at --profilingVerbosity=layer_names_only.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine_report.h"
#include "inspector/csv_reader.h"

namespace kiln::inspector {
namespace {
using nlohmann::json;

const std::string kDir = std::string(KILN_TEST_DATA_DIR) + "/trtexec/";
const std::string kGraph = kDir + "mobilenet.qat.onnx.engine.graph.json";
const std::string kProfile = kDir + "mobilenet.qat.onnx.engine.profile.json";
const std::string kResidualsGraph = kDir + "mobilenet_v2_residuals.qat.onnx.engine.graph.json";
const std::string kResidualsProfile = kDir + "mobilenet_v2_residuals.qat.onnx.engine.profile.json";
const std::string kNamesOnly = kDir + "mobilenet_v2_residuals.names_only.graph.json";
// The same engine in TensorRT 11.x's IEngineInspector layout (make_trt11_fixture.py).
const std::string kTrt11Graph = kDir + "mobilenet_v2_residuals.trt11.graph.json";

EngineReport load(const std::string& graph, const std::string& profile) {
  auto report = reportFromTrtexec(graph, profile);
  EXPECT_TRUE(report.isOk()) << report.status().toString();
  return report.isOk() ? std::move(report.value()) : EngineReport{};
}

const ReportLayer* findLayer(const EngineReport& report, const std::string& name) {
  for (const ReportLayer& l : report.layers)
    if (l.name == name) return &l;
  return nullptr;
}

json readJson(const std::string& path) {
  std::ifstream file(path);
  return json::parse(file);
}

std::string writeTemp(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("kiln_report_" + name)).string();
  std::ofstream(path) << text;
  return path;
}

TEST(TrtexecReport, ReadsLayersTypesPrecisionsAndTactics) {
  EngineReport r = load(kGraph, "");
  ASSERT_EQ(r.layers.size(), 73u);
  EXPECT_EQ(r.origin, "trtexec export");
  EXPECT_EQ(r.backend, "tensorrt");
  EXPECT_EQ(r.title, "mobilenet.qat.onnx.engine.graph.json");
  EXPECT_EQ(r.layers.front().name, "QuantizeLinear_2");
  EXPECT_EQ(r.layers.back().name, "copied_squeeze_after_(Unnamed Layer* 850) [ElementWise]");
  EXPECT_EQ(r.bindings, (std::vector<std::string>{"input1", "1179"}));
  // A Reformat keeps its output's precision (FP32 in, Int8 out).
  EXPECT_EQ(r.layers[0].layerType, "Reformat");
  EXPECT_EQ(r.layers[0].precision, "INT8");
  EXPECT_EQ(r.layers[0].parameters.at("Origin"), "QDQ");
  const ReportLayer& conv = r.layers[1];
  EXPECT_EQ(conv.layerType, "CaskConvolution");
  EXPECT_EQ(conv.precision, "INT8");
  EXPECT_EQ(conv.tactic, "volta_int8x4_icudnn_int8x4_128x32_relu_xregs_medium_c32_nn_v1");
  EXPECT_EQ(conv.tacticValue, "0x10d7116a3fad9b7a");
  EXPECT_EQ(conv.parameters.at("Activation"), "CLIPPED_RELU");
  EXPECT_EQ(conv.parameters.at("Kernel"), "[3,3]");
  EXPECT_EQ(conv.outputBytes, 32 * 112 * 112);  // Int8 output 1x32x112x112
  ASSERT_EQ(conv.outputs.size(), 1u);
  EXPECT_EQ(conv.outputs[0].dimensions, (std::vector<int64_t>{1, 32, 112, 112}));
  // Int8 input and weights, FP16 output: an INT8 convolution (i8816 MMA, its tactic
  // says) with a fused dequantize. Read by its output's type, it used to say FP16.
  const ReportLayer* int8ToFp16 =
      findLayer(r, "features.2.conv.2.weight + QuantizeLinear_90 + Conv_94");
  ASSERT_NE(int8ToFp16, nullptr);
  EXPECT_EQ(int8ToFp16->precision, "INT8");
  EXPECT_EQ(int8ToFp16->outputs[0].formatDatatype,
            "Thirty-two wide channel vectorized row major FP16 format");
  EXPECT_EQ(int8ToFp16->tactic, "turing_fp16_i8816cudnn_int8_128x128_ldg16_relu_small_nt_v1");
  const ReportLayer* pool = findLayer(r, "GlobalAveragePool_843");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->layerType, "TiledPooling");
  EXPECT_EQ(pool->precision, "FP16");
  EXPECT_EQ(pool->tactic, "");
  // The classifier (Int8 in, Int8 weights, FP32 out) computes in INT8 too; the NoOp
  // copy after it keeps its FP32 output.
  EXPECT_EQ(r.layers[r.layers.size() - 2].precision, "INT8");
  EXPECT_EQ(r.layers.back().precision, "FP32");
  // Untimed without a profile; weights from the layers' Weights/Bias counts.
  EXPECT_EQ(r.totalMs, -1);
  EXPECT_EQ(conv.milliseconds, -1);
  EXPECT_EQ(conv.percentage, -1);
  EXPECT_GT(r.weightBytes, 3'000'000);
}

// A layer's precision is what it computes in (TensorRT's and TensorRT Engine Explorer's
// convention), not the type it writes: an INT8 (FP8) activation or INT8 weights make it
// INT8 (FP8); Reformat, Shuffle and copies take their output's; the rest their first
// input's. Layer name = expected precision.
TEST(TrtexecReport, PrecisionIsWhatALayerComputesIn) {
  const json graph = json::parse(R"({"Layers": [
    {"Name": "INT8", "LayerType": "CaskConvolution", "ParameterType": "Convolution",
     "Inputs": [{"Name": "a", "Format/Datatype": "Thirty-two wide channel vectorized row major Int8 format"}],
     "Outputs": [{"Name": "b", "Format/Datatype": "Channel major FP16 format where channel % 8 == 0"}],
     "Weights": {"Type": "Int8", "Count": 64}, "Bias": {"Type": "Float", "Count": 8}},
    {"Name": "FP32", "LayerType": "Reformat", "ParameterType": "Reformat",
     "Inputs": [{"Name": "b", "Format/Datatype": "Four wide channel vectorized row major Int8 format"}],
     "Outputs": [{"Name": "c", "Format/Datatype": "Row major linear FP32"}]},
    {"Name": "FP16", "LayerType": "CaskConvolution", "ParameterType": "Convolution",
     "Inputs": [{"Name": "c", "Format/Datatype": "Channel major FP16 format where channel % 8 == 0"}],
     "Outputs": [{"Name": "d", "Format/Datatype": "Row major linear FP32"}],
     "Weights": {"Type": "Half", "Count": 64}},
    {"Name": "INT8", "LayerType": "CaskGemm", "Comment": "INT8 weights, FP16 activation",
     "Inputs": [{"Name": "d", "Format/Datatype": "Row major linear FP16 format"}],
     "Outputs": [{"Name": "e", "Format/Datatype": "Row major linear FP16 format"}],
     "Weights": {"Type": "Int8", "Count": 64}},
    {"Name": "FP8", "LayerType": "CaskConvolution",
     "Inputs": [{"Name": "e", "Format": "Row major linear", "DataType": "FP8"}],
     "Outputs": [{"Name": "f", "Format": "Row major linear", "DataType": "Half"}]},
    {"Name": "INT8", "LayerType": "ElementWise", "Comment": "a residual add with one Int8 input",
     "Inputs": [{"Name": "f", "Format/Datatype": "Row major linear FP16 format"},
                {"Name": "a", "Format/Datatype": "Row major linear Int8 format"}],
     "Outputs": [{"Name": "g", "Format/Datatype": "Row major linear FP16 format"}]},
    {"Name": "FP16", "LayerType": "Shuffle",
     "Inputs": [{"Name": "g", "Format/Datatype": "Row major linear Int8 format"}],
     "Outputs": [{"Name": "h", "Format/Datatype": "Row major linear FP16 format"}]},
    {"Name": "FP16", "LayerType": "TiledPooling", "Comment": "FP16 in, FP32 out",
     "Inputs": [{"Name": "h", "Format/Datatype": "Row major linear FP16 format"}],
     "Outputs": [{"Name": "i", "Format/Datatype": "Row major linear FP32"}]},
    {"Name": "FP32", "LayerType": "Constant",
     "Outputs": [{"Name": "j", "Format/Datatype": "Row major linear FP32"}]},
    {"Name": "BF16", "LayerType": "Myelin", "Precision": "BF16", "Comment": "the key wins",
     "Inputs": [{"Name": "j", "Format/Datatype": "Row major linear Int8 format"}]}
  ]})");
  auto r = reportFromTrtexecJson(graph, "precisions.json");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->layers.size(), 10u);
  for (size_t i = 0; i < r->layers.size(); ++i)
    EXPECT_EQ(r->layers[i].precision, r->layers[i].name) << "layer #" << i;
}

// `kiln inspect PLAN --json` names the plan's device: a report read back has its roofs.
TEST(TrtexecReport, KilnsOwnExportNamesItsDevice) {
  const json kiln = json::parse(R"({"Backend": "cuda", "Device": "NVIDIA H200", "Layers": [
    {"Name": "mm", "LayerType": "MatrixMultiply",
     "Inputs": [{"Name": "a", "Dimensions": [64, 64], "Format/Datatype": "Row major linear FP16"}],
     "Outputs": [{"Name": "b", "Dimensions": [64, 64], "Format/Datatype": "Row major linear FP16"}]}
  ]})");
  auto r = reportFromTrtexecJson(kiln, "plan.graph.json");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->device, "NVIDIA H200");
  auto trt = reportFromTrtexecJson(json::parse(R"({"Layers": []})"), "trt.json");
  ASSERT_TRUE(trt.isOk());
  EXPECT_EQ(trt->device, "");  // trtexec's exports name none
}

// TensorRT 11 replaced "Bindings" with "I/O Tensors" objects and split "Format/Datatype"
// into "Format" and "DataType": the same engine reads into the same layer table.
TEST(TrtexecReport, TensorRT11LayoutReadsLikeTheTensorRT10One) {
  const EngineReport old = load(kResidualsGraph, kResidualsProfile);
  const EngineReport now = load(kTrt11Graph, kResidualsProfile);
  EXPECT_EQ(old.inspectorLayout, "TensorRT 10.x");
  EXPECT_EQ(now.inspectorLayout, "TensorRT 11.x");
  EXPECT_EQ(now.bindings, old.bindings);
  ASSERT_EQ(now.layers.size(), old.layers.size());
  ASSERT_GT(now.layers.size(), 50u);
  for (size_t i = 0; i < now.layers.size(); ++i) {
    const ReportLayer& a = old.layers[i];
    const ReportLayer& b = now.layers[i];
    SCOPED_TRACE(a.name);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.layerType, a.layerType);
    EXPECT_EQ(b.precision, a.precision);
    EXPECT_EQ(b.tactic, a.tactic);
    EXPECT_EQ(b.tacticValue, a.tacticValue);
    EXPECT_EQ(b.outputBytes, a.outputBytes);
    EXPECT_EQ(b.milliseconds, a.milliseconds);
    ASSERT_EQ(b.outputs.size(), a.outputs.size());
    for (size_t o = 0; o < a.outputs.size(); ++o)
      EXPECT_EQ(b.outputs[o].dimensions, a.outputs[o].dimensions);
  }
  EXPECT_NEAR(now.totalMs, old.totalMs, 1e-12);
  // The first INT8 convolution's input: format and type joined again.
  EXPECT_EQ(now.layers[1].inputs[0].formatDatatype,
            "Four wide channel vectorized row major format Int8");
  ASSERT_EQ(now.ioTensors.size(), 2u);
  const ReportIoTensor& in = now.ioTensors[0];
  EXPECT_EQ(in.name, "inputs.1");
  EXPECT_EQ(in.ioMode, "Input");
  EXPECT_EQ(in.dataType, "Float");
  EXPECT_EQ(in.dimensions, (std::vector<int64_t>{1, 3, 224, 224}));
  ASSERT_EQ(in.profiles.size(), 1u);
  EXPECT_EQ(in.profiles[0].max, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(in.profiles[0].format, "Row major linear FP32 format (kLINEAR)");
  EXPECT_EQ(now.ioTensors[1].ioMode, "Output");
  EXPECT_NE(now.summary.find("layout: TensorRT 11.x"), std::string::npos) << now.summary;
  EXPECT_NE(now.summary.find("Input inputs.1: Float 1x3x224x224 (Device)"), std::string::npos)
      << now.summary;
  EXPECT_NE(now.summary.find("profile 0: min 1x3x224x224 opt 1x3x224x224 max 1x3x224x224"),
            std::string::npos)
      << now.summary;
}

TEST(TrtexecReport, InfersSourceNodesFromFusedNames) {
  EngineReport r = load(kGraph, "");
  EXPECT_EQ(
      r.layers[1].sourceNodes,
      (std::vector<std::string>{"features.0.0.weight", "QuantizeLinear_8", "Conv_12", "Clip_16"}));
  EXPECT_EQ(r.layers[0].sourceNodes, (std::vector<std::string>{"QuantizeLinear_2"}));
  const ReportLayer* copy =
      findLayer(r, "Reformatting CopyNode for Input Tensor 0 to GlobalAveragePool_843");
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(copy->sourceNodes.empty());  // made by TensorRT, no ONNX node
  const ReportLayer& gemm = r.layers[r.layers.size() - 2];
  EXPECT_EQ(gemm.sourceNodes, (std::vector<std::string>{"classifier.1.weight", "QuantizeLinear_860",
                                                        "Gemm_864", "classifier.1.bias"}));
  EXPECT_TRUE(r.layers.back().sourceNodes.empty());
}

// Issue 26 item 5: a reformat in front of a fused layer maps to none of its nodes.
TEST(TrtexecReport, ReformatOfAFusedLayerMapsToNoNode) {
  json graph = readJson(kGraph);
  graph["Layers"][0]["Name"] =
      "Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6 + Relu_7";
  graph["Layers"][0].erase("Metadata");
  graph["Layers"][1]["Name"] = "Reformatted Input Tensor 0 to Conv_5 + Add_6";
  graph["Layers"][1].erase("Metadata");
  auto report = reportFromTrtexecJson(graph, "fused-reformat.json");
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  EXPECT_TRUE(report->layers[0].sourceNodes.empty()) << report->layers[0].sourceNodes.size();
  EXPECT_TRUE(report->layers[1].sourceNodes.empty()) << report->layers[1].sourceNodes.size();
}

TEST(TrtexecReport, ProfileTimesAreTheFilesMedians) {
  EngineReport r = load(kGraph, kProfile);
  const json profile = readJson(kProfile);
  EXPECT_EQ(r.profileIterations, 6610);
  ASSERT_EQ(profile.size(), r.layers.size() + 1);
  double sum = 0;
  for (size_t i = 1; i < profile.size(); ++i) {
    const ReportLayer* layer = findLayer(r, profile[i]["name"].get<std::string>());
    ASSERT_NE(layer, nullptr) << profile[i]["name"];
    EXPECT_EQ(layer->milliseconds, profile[i]["medianMs"].get<double>());
    EXPECT_EQ(layer->averageMs, profile[i]["averageMs"].get<double>());
    sum += layer->milliseconds;
  }
  EXPECT_NEAR(r.totalMs, sum, 1e-12);
  EXPECT_NEAR(r.totalMs, 0.468768, 1e-6);
  EXPECT_EQ(findLayer(r, "QuantizeLinear_2")->milliseconds, 0.004544);
  double percent = 0;
  for (const ReportLayer& l : r.layers) percent += l.percentage;
  EXPECT_NEAR(percent, 100.0, 1e-9);
  EXPECT_NEAR(r.layers[0].percentage, 100 * 0.004544 / sum, 1e-9);
}

TEST(TrtexecReport, SecondEngineReadsWithItsProfile) {
  EngineReport r = load(kResidualsGraph, kResidualsProfile);
  ASSERT_EQ(r.layers.size(), 58u);
  EXPECT_EQ(r.profileIterations, 8657);
  EXPECT_EQ(r.layers[0].milliseconds, 0.004384);
  EXPECT_EQ(r.layers[1].tacticValue, "0xa65a77b0f5044138");
  EXPECT_EQ(findLayer(r, "GlobalAveragePool_747")->precision, "FP16");
}

TEST(TrtexecReport, NamesOnlyVerbosityGivesNamesAndProfileTimes) {
  EngineReport names = load(kNamesOnly, kResidualsProfile);
  EngineReport detailed = load(kResidualsGraph, "");
  ASSERT_EQ(names.layers.size(), detailed.layers.size());
  for (size_t i = 0; i < names.layers.size(); ++i) {
    EXPECT_EQ(names.layers[i].name, detailed.layers[i].name);
    EXPECT_EQ(names.layers[i].sourceNodes, detailed.layers[i].sourceNodes);
    EXPECT_EQ(names.layers[i].precision, "");
    EXPECT_GE(names.layers[i].milliseconds, 0);
  }
  EXPECT_EQ(names.layers[0].milliseconds, 0.004384);
}

TEST(TrtexecReport, BadExportsAreErrorsNamingTheFile) {
  const std::string notJson = writeTemp("not_json.json", "{\"Layers\": [ {\"Name\": ");
  auto r = reportFromTrtexec(notJson, "");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find(notJson + ": not valid JSON"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);

  const std::string noLayers = writeTemp("no_layers.json", "{\"Bindings\": []}");
  r = reportFromTrtexec(noLayers, "");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(),
            noLayers + ": not a trtexec --exportLayerInfo export (no \"Layers\" array)");

  const std::string noName =
      writeTemp("no_name.json", R"({"Layers": [{"Name": "a"}, {"LayerType": "Reformat"}]})");
  r = reportFromTrtexec(noName, "");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), noName + ": layer #1 has no \"Name\" string");

  r = reportFromTrtexec(kDir + "missing.graph.json", "");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), kDir + "missing.graph.json: cannot open");
}

TEST(TrtexecReport, ProfileNamingAnUnknownLayerIsAnError) {
  // The residuals profile names layers the plain MobileNet engine lacks.
  auto r = reportFromTrtexec(kGraph, kResidualsProfile);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(),
            kResidualsProfile +
                ": profile names layer 'features.0.0.weight + QuantizeLinear_7 + Conv_9 + "
                "PWN(Clip_13)', which the engine graph lacks");
  const std::string badEntry = writeTemp("bad_profile.json", R"([{"count": 3}, {"timeMs": 1}])");
  r = reportFromTrtexec(kGraph, badEntry);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), badEntry + ": profile entry #1 has no \"name\" string");
}

TEST(ReportCsv, HasAHeaderAndOneRowPerLayer) {
  EngineReport r = load(kGraph, kProfile);
  std::vector<std::vector<std::string>> rows;
  std::string error;
  ASSERT_TRUE(test::readCsv(reportCsv(r), &rows, &error)) << error;
  ASSERT_EQ(rows.size(), r.layers.size() + 1);
  EXPECT_EQ(rows[0], (std::vector<std::string>{
                         "name", "type", "precision", "tactic", "time_ms", "percent",
                         "workspace_bytes", "output_bytes", "source_nodes", "flops", "bytes",
                         "intensity", "achieved_tflops", "achieved_gbps", "percent_of_roofline"}));
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 15u) << i;
    EXPECT_EQ(rows[i][0], r.layers[i - 1].name);
    EXPECT_NEAR(std::stod(rows[i][4]), r.layers[i - 1].milliseconds, 1e-6);
  }
  EXPECT_EQ(rows[2][2], "INT8");
  EXPECT_EQ(rows[2][7], std::to_string(32 * 112 * 112));
  EXPECT_EQ(rows[2][8], "features.0.0.weight; QuantizeLinear_8; Conv_12; Clip_16");
}

TEST(ReportCsv, QuotesNamesWithCommasQuotesAndLineBreaks) {
  EngineReport r;
  const std::vector<std::string> names = {"Conv_1, Relu_2", "say \"hi\"", "two\nlines", "plain"};
  for (const std::string& name : names) {
    ReportLayer l;
    l.name = name;
    l.layerType = "Convolution";
    l.milliseconds = 0.25;
    r.layers.push_back(l);
  }
  updateShares(&r);
  const std::string csv = reportCsv(r);
  EXPECT_NE(csv.find("\"say \"\"hi\"\"\""), std::string::npos) << csv;
  std::vector<std::vector<std::string>> rows;
  std::string error;
  ASSERT_TRUE(test::readCsv(csv, &rows, &error)) << error;
  ASSERT_EQ(rows.size(), 5u);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(rows[i + 1][0], names[i]);
    EXPECT_EQ(rows[i + 1][5], "25.00");
  }
}

TEST(ReportText, TableShowsLayersPrecisionsAndTotals) {
  EngineReport r = load(kGraph, kProfile);
  const std::string table = formatReportTable(r);
  EXPECT_NE(table.find("GlobalAveragePool_843"), std::string::npos);
  EXPECT_NE(table.find("features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)\n"),
            std::string::npos);  // long names keep a line of their own, uncut
  EXPECT_NE(table.find("73 layers; total 0.468768 ms (medians of a 6610-iteration profile)"),
            std::string::npos)
      << table;
  // Labelled by what they compute in, the 13 INT8 convolutions writing FP16 and the 4
  // writing FP32 are INT8 (the output-type labels said FP16 15 FP32 5 INT8 53); left
  // are the FP16 pooling and its FP16 reformat, and the FP32 NoOp copy.
  EXPECT_NE(table.find("precisions: FP16 2 FP32 1 INT8 70"), std::string::npos) << table;
}

TEST(ReportJson, ReadsBackThroughTheTrtexecReader) {
  EngineReport r = load(kGraph, kProfile);
  const json doc = reportJson(r);
  EXPECT_EQ(doc["Layers"].size(), 73u);
  EXPECT_EQ(doc["ProfileIterations"], 6610);
  auto back = reportFromTrtexecJson(json::parse(doc.dump()), "report.json");
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_EQ(back->layers.size(), r.layers.size());
  for (size_t i = 0; i < r.layers.size(); ++i) {
    EXPECT_EQ(back->layers[i].name, r.layers[i].name);
    EXPECT_EQ(back->layers[i].precision, r.layers[i].precision);
    EXPECT_EQ(back->layers[i].tactic, r.layers[i].tactic);
    EXPECT_EQ(back->layers[i].tacticValue, r.layers[i].tacticValue);
    EXPECT_EQ(back->layers[i].milliseconds, r.layers[i].milliseconds);
    EXPECT_EQ(back->layers[i].sourceNodes, r.layers[i].sourceNodes);
    EXPECT_EQ(back->layers[i].parameters, r.layers[i].parameters);
  }
  EXPECT_EQ(back->weightBytes, r.weightBytes);
  EXPECT_EQ(back->profileIterations, 6610);
  EXPECT_NEAR(back->totalMs, r.totalMs, 1e-12);
}

}  // namespace
}  // namespace kiln::inspector
