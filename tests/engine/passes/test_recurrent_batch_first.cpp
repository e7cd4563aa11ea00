// recurrent_batch_first: a layout-0 LSTM / GRU / RNN reading Transpose(Z, [1, 0, 2]) becomes
// the layout-1 layer reading Z, with Transposes on its outputs (and initial states) that the
// level-1 pipeline merges with the model's own permutes. Outputs stay the CPU reference's.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "recurrent_batch_first";
constexpr int64_t kB = 2, kH = 3, kW = 5, kC = 6, kHidden = 4;

Tensor weights(const Shape& shape, uint32_t seed) {
  return randomTensor(DataType::kFloat32, shape, seed, -0.5, 0.5);
}

// Sequencer2D's horizontal LSTM as timm exports it: x [B, H, W, C] -> [B * H, W, C] ->
// Transpose(1, 0, 2) -> bidirectional LSTM -> Transpose(0, 2, 1, 3) -> [W, B * H, 2 * hidden]
// -> Transpose(1, 0, 2) -> [B, H, W, 2 * hidden].
Network horizontalLstm(int opset) {
  Network net;
  net.opsets[""] = opset;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({kB, kH, kW, kC})}};
  g.initializers["rows"] = Tensor::int64Vector({kB * kH, kW, kC});
  g.initializers["w"] = weights({2, 4 * kHidden, kC}, 1);
  g.initializers["r"] = weights({2, 4 * kHidden, kHidden}, 2);
  g.initializers["b"] = weights({2, 8 * kHidden}, 3);
  g.initializers["steps"] = Tensor::int64Vector({kW, kB * kH, 2 * kHidden});
  g.initializers["image"] = Tensor::int64Vector({kB, kH, kW, 2 * kHidden});
  g.nodes.push_back(makeNode("Reshape", {"x", "rows"}, {"z"}, opset));
  g.nodes.push_back(withInts(makeNode("Transpose", {"z"}, {"xt"}, opset), "perm", {1, 0, 2}));
  g.nodes.push_back(withString(
      withInt(makeNode("LSTM", {"xt", "w", "r", "b"}, {"y"}, opset), "hidden_size", kHidden),
      "direction", "bidirectional"));
  g.nodes.push_back(withInts(makeNode("Transpose", {"y"}, {"yt"}, opset), "perm", {0, 2, 1, 3}));
  g.nodes.push_back(makeNode("Reshape", {"yt", "steps"}, {"ys"}, opset));
  g.nodes.push_back(withInts(makeNode("Transpose", {"ys"}, {"yb"}, opset), "perm", {1, 0, 2}));
  g.nodes.push_back(makeNode("Reshape", {"yb", "image"}, {"out"}, opset));
  g.outputs = {{"out", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

TEST(RecurrentBatchFirst, HorizontalLstmLeavesNoCopy) {
  Network fused;
  const Network original = horizontalLstm(17);
  // Reshape + LSTM + Reshape: the three Transposes gone, the three Reshapes merged to two.
  auto applied = fuseAndCompareOutputs(kPass, run, original, 3, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "Transpose"), 0);
  for (const Node& n : fused.graph.nodes)
    if (n.opType == "LSTM") EXPECT_EQ(n.attrInt("layout", 0), 1);
}

// Before opset 14 the op has no layout attribute: the graph is what the pipeline makes of
// it without the pass, and at opset 17 without the pass the copies stay.
TEST(RecurrentBatchFirst, LayoutNeedsOpset14) {
  for (int opset : {13, 17}) {
    SCOPED_TRACE(opset);
    const Network original = horizontalLstm(opset);
    Network without = original;
    std::vector<PassApplication> ignored;
    ASSERT_TRUE(runPasses(without, 1, {kPass}, &ignored).isOk());
    EXPECT_GT(countOps(without, "Transpose"), 0);
    auto applied = fuseAndCompareOutputs(
        kPass, run, original, without.graph.nodes.size(), nullptr,
        opset == 17 ? std::vector<std::string>{kPass} : std::vector<std::string>{});
    EXPECT_TRUE(applied.empty());
  }
}

// A GRU with an initial state and every output read (Y_h a graph output): the states are
// transposed in and out, the values unchanged.
TEST(RecurrentBatchFirst, GruWithStatesAndEveryOutput) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"z", DataType::kFloat32, true, constantDims({kB, kW, kC})},
              {"h0", DataType::kFloat32, true, constantDims({1, kB, kHidden})}};
  g.initializers["w"] = weights({1, 3 * kHidden, kC}, 4);
  g.initializers["r"] = weights({1, 3 * kHidden, kHidden}, 5);
  g.initializers["b"] = weights({1, 6 * kHidden}, 6);
  g.nodes.push_back(withInts(makeNode("Transpose", {"z"}, {"xt"}), "perm", {1, 0, 2}));
  g.nodes.push_back(withInt(makeNode("GRU", {"xt", "w", "r", "b", "", "h0"}, {"y", "yh"}),
                            "hidden_size", kHidden));
  g.nodes.push_back(makeNode("Relu", {"y"}, {"out"}));
  g.outputs = {{"out", DataType::kFloat32, false, {}}, {"yh", DataType::kFloat32, false, {}}};
  Network fused;
  // Transpose(h0) + GRU + Transpose(Y) + Transpose(Y_h) + Relu.
  auto applied = fuseAndCompareOutputs(kPass, run, net, 5, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "Transpose"), 3);
}

}  // namespace
}  // namespace kiln::test
