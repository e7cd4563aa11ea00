// The engine's layer graph as ONNX (engine_graph_onnx.h): a real TensorRT engine's trtexec
// export and a Kiln plan, exported, read back by Kiln's importer (unsupported custom ops
// allowed) and checked node by node: op types, attributes, edges, bindings, shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "engine/builder/builder_fixture.h"
#include "engine_graph_onnx.h"
#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"

namespace kiln::inspector {
namespace {

const std::string kGraph =
    std::string(KILN_TEST_DATA_DIR) + "/trtexec/mobilenet.qat.onnx.engine.graph.json";

Network roundTrip(const EngineReport& report) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "kiln_engine_graph_test.onnx").string();
  const Status written = exportEngineGraphOnnx(report, path);
  EXPECT_TRUE(written.isOk()) << written.toString();
  ImportOptions options;
  options.checkSupport = false;  // custom "ai.kiln.engine" ops: for viewers, not to run
  auto imported = importOnnxFile(path, options);
  EXPECT_TRUE(imported.isOk()) << imported.status().toString();
  std::filesystem::remove(path);
  return imported.isOk() ? std::move(imported.value()) : Network{};
}

TEST(EngineGraphOnnx, TrtexecEngineBecomesOneNodePerLayer) {
  auto report = reportFromTrtexec(kGraph, "");
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  const Network net = roundTrip(*report);
  ASSERT_EQ(net.graph.nodes.size(), report->layers.size());
  const Node& conv = net.graph.nodes[1];
  EXPECT_EQ(conv.name, report->layers[1].name);
  EXPECT_EQ(conv.opType, "CaskConvolution");
  EXPECT_EQ(conv.domain, kEngineGraphDomain);
  EXPECT_EQ(conv.attrString("precision", ""), "INT8");
  EXPECT_EQ(conv.attrString("tactic", ""),
            "volta_int8x4_icudnn_int8x4_128x32_relu_xregs_medium_c32_nn_v1");
  EXPECT_EQ(conv.attrString("tactic_value", ""), "0x10d7116a3fad9b7a");
  EXPECT_EQ(conv.attrString("param:Kernel", ""), "[3,3]");
  // Edges: layer 1 reads what layer 0 writes; the bindings are the graph's ends.
  EXPECT_EQ(conv.inputs.at(0), net.graph.nodes[0].outputs.at(0));
  ASSERT_EQ(net.graph.inputs.size(), 1u);
  EXPECT_EQ(net.graph.inputs[0].name, "input1");
  EXPECT_EQ(net.graph.inputs[0].type, DataType::kFloat32);
  ASSERT_EQ(net.graph.outputs.size(), 1u);
  EXPECT_EQ(net.graph.outputs[0].name, "1179");
  // The convolution's output keeps its dims and INT8 type as value_info.
  const auto vi = net.graph.valueInfo.find(conv.outputs.at(0));
  ASSERT_NE(vi, net.graph.valueInfo.end());
  EXPECT_EQ(vi->second.type, DataType::kInt8);
  EXPECT_EQ(symbolicShapeToString(vi->second.shape), "1x32x112x112");
}

TEST(EngineGraphOnnx, KilnPlanKeepsSourceNodesTimesAndNamesItsWeights) {
  BuilderConfig config;
  config.profiles = {test::classifierProfile(1, 2, 4)};
  config.optimizationLevel = 1;
  const Plan plan = test::buildOnCpu(test::classifierNetwork(), config);
  const EngineReport report = reportFromPlan(plan, "classifier.kiln");
  const Network net = roundTrip(report);
  ASSERT_EQ(net.graph.nodes.size(), report.layers.size());
  bool sawWeights = false, sawSources = false;
  for (size_t i = 0; i < net.graph.nodes.size(); ++i) {
    const Node& n = net.graph.nodes[i];
    const ReportLayer& l = report.layers[i];
    EXPECT_EQ(n.opType, l.layerType);
    EXPECT_EQ(n.attrString("precision", ""), l.precision);
    if (l.milliseconds >= 0) EXPECT_FLOAT_EQ(n.attrFloat("time_ms", -1.f), float(l.milliseconds));
    sawSources = sawSources || n.attrStrings("source_nodes") == l.sourceNodes;
    for (const std::string& w : n.attrStrings("weights")) {
      sawWeights = true;
      // A weight is named, not wired: no node input carries it.
      const std::string name = w.substr(0, w.find(' '));
      EXPECT_EQ(std::count(n.inputs.begin(), n.inputs.end(), name), 0) << w;
    }
  }
  EXPECT_TRUE(sawWeights);
  EXPECT_TRUE(sawSources);
}

}  // namespace
}  // namespace kiln::inspector
