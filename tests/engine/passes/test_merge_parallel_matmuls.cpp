// merge_parallel_matmuls: Q, K and V projections of one input (biases on either side,
// one missing) become one GEMM with the concatenated weights and a Split, with the CPU
// reference's outputs unchanged. A projection read by an activation, a dynamic shape and
// a single GEMM stay.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "merge_parallel_matmuls";
// These tests look at the merged GEMM and its Split, which fold_split_views would otherwise
// turn into strided copies of the GEMM's output (its own tests: test_fold_split_views.cpp).
const std::vector<std::string> kKeepSplit = {"fold_split_views"};

struct ProjectionCase {
  bool symbolicBatch = false;
  bool activationOnV = false;  // V's projection read by a Relu instead of a head split
  int projections = 3;
};

// x [2, 5, 8] -> q = MatMul(x, Wq [8, 6]) + bq, k = MatMul(x, Wk [8, 6]) (no bias),
// v = bv + MatMul(x, Wv [8, 4]); each split into 2 heads ([2, 5, 2, D]) and transposed to
// [2, 2, 5, D], the graph's outputs.
Network projections(const ProjectionCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const DimExpr batch = c.symbolicBatch ? DimExpr::symbol("N") : DimExpr(2);
  g.inputs = {{"x", DataType::kFloat32, true, {batch, DimExpr(5), DimExpr(8)}}};
  const char* names[] = {"q", "k", "v"};
  const int64_t widths[] = {6, 6, 4};
  for (int i = 0; i < c.projections; ++i) {
    const std::string p = names[i];
    g.initializers["w" + p] = randomTensor(DataType::kFloat32, {8, widths[i]}, 1 + i);
    g.initializers["b" + p] = randomTensor(DataType::kFloat32, {widths[i]}, 5 + i);
    g.initializers["heads" + p] = Tensor::int64Vector({0, 5, 2, widths[i] / 2});
    g.nodes.push_back(makeNode("MatMul", {"x", "w" + p}, {p + "_mm"}));
    std::string result = p + "_mm";
    if (p == "q") g.nodes.push_back(makeNode("Add", {result, "b" + p}, {p + "_biased"}));
    if (p == "v") g.nodes.push_back(makeNode("Add", {"b" + p, result}, {p + "_biased"}));
    if (p != "k") result = p + "_biased";
    if (p == "v" && c.activationOnV) {
      g.nodes.push_back(makeNode("Relu", {result}, {p + "_out"}));
    } else {
      g.nodes.push_back(makeNode("Reshape", {result, "heads" + p}, {p + "_heads"}));
      g.nodes.push_back(
          withInts(makeNode("Transpose", {p + "_heads"}, {p + "_out"}), "perm", {0, 2, 1, 3}));
    }
    g.outputs.push_back({p + "_out", DataType::kFloat32, false, {}});
  }
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 5, 8}, 9)}});
}

TEST(MergeParallelMatMuls, QkvProjectionsBecomeOneGemmAndASplit) {
  Network fused;
  // FusedMatMul (the merged GEMM with its bias), Split, and each head split's Reshape
  // and Transpose.
  auto applied = fuseAndCompareOutputs(kPass, run, projections({}), 8, &fused, kKeepSplit);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"q_mm", "k_mm", "v_mm"}));
  const Graph& g = fused.graph;
  ASSERT_EQ(g.nodes[0].opType, "FusedMatMul");
  EXPECT_EQ(g.initializers.at(g.nodes[0].inputs[1]).shape(), (Shape{8, 16}));
  ASSERT_EQ(g.nodes[1].opType, "Split");
  EXPECT_EQ(g.nodes[1].outputs, (std::vector<std::string>{"q_biased", "k_mm", "v_biased"}));
  EXPECT_EQ(g.initializers.at(g.nodes[1].inputs[1]).toInt64Vector(),
            (std::vector<int64_t>{6, 6, 4}));
  // The merged bias: K's part is zeros.
  const Tensor& bias = g.initializers.at(g.nodes[0].inputs[2]);
  ASSERT_EQ(bias.numel(), 16);
  for (int i = 6; i < 12; ++i) EXPECT_EQ(bias.data<float>()[i], 0.0f) << i;
  EXPECT_EQ(bias.data<float>()[0], g.initializers.at("bq").data<float>()[0]);
}

TEST(MergeParallelMatMuls, ActivationsDynamicShapesAndLoneGemmsStay) {
  ProjectionCase activation;  // Q and K still merge; V keeps its own GEMM for the Relu
  activation.activationOnV = true;
  auto applied = fuseAndCompareOutputs(kPass, run, projections(activation), 7, nullptr, kKeepSplit);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"q_mm", "k_mm"}));

  ProjectionCase dynamic;
  dynamic.symbolicBatch = true;
  ProjectionCase lone;
  lone.projections = 1;
  for (const ProjectionCase& c : {dynamic, lone}) {
    Network net = projections(c);
    std::vector<PassApplication> records;
    ASSERT_TRUE(runPasses(net, 1, {}, &records).isOk());
    for (const PassApplication& a : records) EXPECT_NE(a.pass, kPass);
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// A strongly typed INT8 export's projections: x float16 -> Cast float32 -> Q -> DQ read by
// three MatMuls of DequantizeLinear'd int8 weights (per column for q and v, per tensor for
// k, zero points 0), biases, and a Cast back to float16 before each head split.
Network typedInt8Projections() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat16, true, {DimExpr(2), DimExpr(5), DimExpr(8)}}};
  g.initializers["s"] = Tensor::scalarFloat(0.05f);
  g.initializers["z"] = Tensor(DataType::kInt8, {});
  g.nodes = {withInt(makeNode("Cast", {"x"}, {"x32"}), "to", 1),
             makeNode("QuantizeLinear", {"x32", "s", "z"}, {"xq"}),
             makeNode("DequantizeLinear", {"xq", "s", "z"}, {"xd"})};
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string p = names[i];
    g.initializers["wq" + p] =
        castTensor(randomTensor(DataType::kInt64, {8, 6}, 1 + i, -100, 100), DataType::kInt8);
    g.initializers["ws" + p] = p == "k" ? Tensor::scalarFloat(0.01f)
                                        : randomTensor(DataType::kFloat32, {6}, 4 + i, 0.005, 0.02);
    g.initializers["wz" + p] = Tensor(DataType::kInt8, p == "k" ? Shape{} : Shape{6});
    g.initializers["b" + p] = randomTensor(DataType::kFloat32, {6}, 7 + i);
    g.initializers["heads" + p] = Tensor::int64Vector({0, 5, 2, 3});
    g.nodes.push_back(makeNode("DequantizeLinear", {"wq" + p, "ws" + p, "wz" + p}, {"w" + p}));
    g.nodes.push_back(makeNode("MatMul", {"xd", "w" + p}, {p + "_mm"}));
    g.nodes.push_back(makeNode("Add", {p + "_mm", "b" + p}, {p + "_biased"}));
    g.nodes.push_back(withInt(makeNode("Cast", {p + "_biased"}, {p + "_16"}), "to", 10));
    g.nodes.push_back(makeNode("Reshape", {p + "_16", "heads" + p}, {p + "_heads"}));
    g.nodes.push_back(
        withInts(makeNode("Transpose", {p + "_heads"}, {p + "_out"}), "perm", {0, 2, 1, 3}));
    g.outputs.push_back({p + "_out", DataType::kFloat16, false, {}});
  }
  return net;
}

// A strongly typed FP16 export: x, the weights and the biases in float16.
TEST(MergeParallelMatMuls, Float16WeightsMergeWithAFloat16Bias) {
  Network net = projections({});
  net.graph.inputs[0].type = DataType::kFloat16;
  for (auto& [name, t] : net.graph.initializers)
    if (t.type() == DataType::kFloat32) t = castTensor(t, DataType::kFloat16);
  for (ValueInfo& out : net.graph.outputs) out.type = DataType::kFloat16;
  Network fused = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  ASSERT_FALSE(fused.graph.nodes.empty());
  const Node& gemm = fused.graph.nodes[0];
  ASSERT_EQ(gemm.opType, "FusedMatMul");
  EXPECT_EQ(fused.graph.initializers.at(gemm.inputs[1]).type(), DataType::kFloat16);
  EXPECT_EQ(fused.graph.initializers.at(gemm.inputs[1]).shape(), (Shape{8, 16}));
  EXPECT_EQ(fused.graph.initializers.at(gemm.inputs[2]).type(), DataType::kFloat16);
  const std::map<std::string, Tensor> feeds = {
      {"x", castTensor(randomTensor(DataType::kFloat32, {2, 5, 8}, 9), DataType::kFloat16)}};
  const auto expected = runOnReference(net, feeds), actual = runOnReference(fused, feeds);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    expectTensorNear(castTensor(actual[i].tensor, DataType::kFloat32),
                     castTensor(expected[i].tensor, DataType::kFloat32), 2e-3, 2e-3);
}

TEST(MergeParallelMatMuls, Int8WeightsOfATypedExportMergeIntoOneInt8Gemm) {
  const Network net = typedInt8Projections();
  Network fused = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 2, kKeepSplit, &applied).isOk());
  int gemms = 0, casts = 0, splits = 0;
  for (const Node& n : fused.graph.nodes) {
    gemms += n.opType == "QuantizedMatMul";
    casts += n.opType == "Cast";
    splits += n.opType == "Split";
    if (n.opType == "QuantizedMatMul")
      EXPECT_EQ(n.attrInt("float_output_type", 0), static_cast<int64_t>(DataType::kFloat16));
  }
  EXPECT_EQ(gemms, 1) << "Q, K and V as one INT8 GEMM";
  EXPECT_EQ(casts, 0) << "the Cast to float16 folded into the GEMM";
  EXPECT_EQ(splits, 1);
  const std::map<std::string, Tensor> feeds = {
      {"x",
       castTensor(randomTensor(DataType::kFloat32, {2, 5, 8}, 9, -2.0, 2.0), DataType::kFloat16)}};
  const auto expected = runOnReference(net, feeds), actual = runOnReference(fused, feeds);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    expectTensorNear(castTensor(actual[i].tensor, DataType::kFloat32),
                     castTensor(expected[i].tensor, DataType::kFloat32), 4e-3, 4e-3);
}

// ALBERT's layers share one set of weights, each layer reading it through an Identity:
// fold_constants gives the Identity outputs the weight's own name (one storage, one name),
// and the layers' merged Q/K/V GEMMs share one merged weight and bias instead of a copy each.
TEST(MergeParallelMatMuls, LayersSharingWeightsShareTheMergedWeight) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const char* names[] = {"q", "k", "v"};
  for (const char* p : names) {
    g.initializers[std::string("w") + p] = randomTensor(DataType::kFloat32, {8, 6}, p[0]);
    g.initializers[std::string("b") + p] = randomTensor(DataType::kFloat32, {6}, p[0] + 1);
  }
  g.initializers["heads"] = Tensor::int64Vector({0, 5, 2, 3});
  for (const std::string layer : {"x", "y"}) {
    g.inputs.push_back({layer, DataType::kFloat32, true, {DimExpr(2), DimExpr(5), DimExpr(8)}});
    for (const std::string p : names) {
      const std::string v = layer + "_" + p;
      g.nodes.push_back(makeNode("Identity", {"w" + p}, {v + "_w"}));
      g.nodes.push_back(makeNode("Identity", {"b" + p}, {v + "_b"}));
      g.nodes.push_back(makeNode("MatMul", {layer, v + "_w"}, {v + "_mm"}));
      g.nodes.push_back(makeNode("Add", {v + "_mm", v + "_b"}, {v + "_biased"}));
      g.nodes.push_back(makeNode("Reshape", {v + "_biased", "heads"}, {v + "_heads"}));
      g.nodes.push_back(
          withInts(makeNode("Transpose", {v + "_heads"}, {v + "_out"}), "perm", {0, 2, 1, 3}));
      g.outputs.push_back({v + "_out", DataType::kFloat32, false, {}});
    }
  }
  auto runBoth = [](const Network& n) {
    return runOnReference(n, {{"x", randomTensor(DataType::kFloat32, {2, 5, 8}, 9)},
                              {"y", randomTensor(DataType::kFloat32, {2, 5, 8}, 10)}});
  };
  Network fused;
  // Per layer: the merged GEMM with its bias, the Split, each head split's Reshape and
  // Transpose.
  auto applied = fuseAndCompareOutputs(kPass, runBoth, net, 2 * 8, &fused, kKeepSplit);
  ASSERT_EQ(applied.size(), 2u);
  std::vector<const Node*> gemms;
  for (const Node& n : fused.graph.nodes)
    if (n.opType == "FusedMatMul") gemms.push_back(&n);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(gemms[0]->inputs[1], gemms[1]->inputs[1]);  // one merged weight
  EXPECT_EQ(gemms[0]->inputs[2], gemms[1]->inputs[2]);  // one merged bias
  int merged = 0;
  for (const auto& [name, t] : fused.graph.initializers) merged += t.shape() == Shape{8, 18};
  EXPECT_EQ(merged, 1);
}

}  // namespace
}  // namespace kiln::test
