// fold_pad_into_conv_pool: a constant Pad of the spatial dims becomes the pads of the
// Conv / AveragePool / MaxPool after it, in the Pad's opset 2, 11 and 18 forms; pads
// that would change the result (non-zero values, reflect mode, channel pads, pools
// that do not count pads, a MaxPool whose input may be negative) stay. Graphs run
// with and without the pipeline on the CPU reference (fuseAndCompareOutputs).
#include <gtest/gtest.h>

#include <limits>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_pad_into_conv_pool";

// x [2, 3, 7, 6] -> `nodes` ending in "y"; constants for every Pad form below.
Network padded(const std::vector<Node>& nodes) {
  Network net;
  net.opsets[""] = 18;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(7), DimExpr(6)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {4, 3, 3, 3}, 5);
  g.initializers["hw_pads"] = int64Tensor({8}, {0, 0, 1, 2, 0, 0, 2, 1});
  g.initializers["channel_pads"] = int64Tensor({8}, {0, 1, 1, 1, 0, 0, 1, 1});
  g.initializers["wide_pads"] = int64Tensor({8}, {0, 0, 3, 0, 0, 0, 0, 0});
  g.initializers["axes_hw"] = int64Tensor({2}, {2, 3});
  g.initializers["axis_pads"] = int64Tensor({4}, {1, 0, 1, 2});
  g.initializers["zero"] = floatTensor({}, {0.f});
  g.initializers["one"] = floatTensor({}, {1.f});
  g.initializers["minus_inf"] = floatTensor({}, {-std::numeric_limits<float>::infinity()});
  g.initializers["lowest"] = floatTensor({}, {std::numeric_limits<float>::lowest()});
  g.nodes = nodes;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 3, 7, 6}, 8, -2.0, 2.0)}});
}

Node conv(const std::string& in, std::vector<int64_t> pads = {1, 1, 1, 1}) {
  return withInts(makeNode("Conv", {in, "w"}, {"y"}), "pads", std::move(pads));
}

Node pool(const char* op, const std::string& in, std::vector<int64_t> pads = {0, 0, 0, 0}) {
  return withInts(withInts(makeNode(op, {in}, {"y"}), "kernel_shape", {3, 3}), "pads",
                  std::move(pads));
}

// The pipeline leaves one node (two with a Relu in front) whose pads are `pads`.
Node expectFolded(const std::vector<Node>& nodes, const std::vector<int64_t>& pads) {
  Network fused;
  auto applied = fuseAndCompareOutputs(kPass, run, padded(nodes), nodes.size() - 1, &fused);
  EXPECT_EQ(applied.size(), 1u);
  const Node& last = fused.graph.nodes.back();
  EXPECT_EQ(last.attrInts("pads"), pads);
  EXPECT_EQ(last.inputs[0], nodes[nodes.size() - 2].inputs[0]);
  EXPECT_EQ(last.attrString(kFusionPassAttribute, ""), kPass);
  return last;
}

void expectKept(const std::vector<Node>& nodes) {
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, padded(nodes), nodes.size()).empty());
}

TEST(FoldPadIntoConvPool, ConvTakesThePadInEveryOpsetForm) {
  // Spatial pads (top 1, left 2, bottom 2, right 1) on top of the Conv's own 1s.
  const std::vector<int64_t> sum = {2, 3, 3, 2};
  expectFolded({makeNode("Pad", {"x", "hw_pads"}, {"p"}), conv("p")}, sum);
  expectFolded({makeNode("Pad", {"x", "hw_pads", "zero"}, {"p"}, 11), conv("p")}, sum);
  expectFolded(
      {withInts(makeNode("Pad", {"x"}, {"p"}, 2), "pads", {0, 0, 1, 2, 0, 0, 2, 1}), conv("p")},
      sum);
  // Opset 18's axes input: pads for H and W only.
  expectFolded({makeNode("Pad", {"x", "axis_pads", "", "axes_hw"}, {"p"}, 18), conv("p")},
               {2, 1, 2, 3});
  // VALID padding means no own pads; the fold makes them explicit.
  Node valid = makeNode("Conv", {"p", "w"}, {"y"});
  valid.attributes["auto_pad"].kind = Attribute::Kind::kString;
  valid.attributes["auto_pad"].s = "VALID";
  const Node folded = expectFolded({makeNode("Pad", {"x", "hw_pads"}, {"p"}), valid}, {1, 2, 2, 1});
  EXPECT_FALSE(folded.hasAttr("auto_pad"));
}

TEST(FoldPadIntoConvPool, AveragePoolCountsThePads) {
  // A pool that counts its pads already takes more of them.
  expectFolded({makeNode("Pad", {"x", "hw_pads"}, {"p"}),
                withInt(pool("AveragePool", "p", {1, 1, 1, 1}), "count_include_pad", 1)},
               {2, 3, 3, 2});
  // A pool without pads starts counting them: the Pad's zeros were real elements.
  const Node folded = expectFolded(
      {makeNode("Pad", {"x", "hw_pads"}, {"p"}), pool("AveragePool", "p")}, {1, 2, 2, 1});
  EXPECT_EQ(folded.attrInt("count_include_pad", 0), 1);
}

TEST(FoldPadIntoConvPool, MaxPoolTakesMinusInfinityOrZeroAfterRelu) {
  expectFolded({makeNode("Pad", {"x", "hw_pads", "minus_inf"}, {"p"}), pool("MaxPool", "p")},
               {1, 2, 2, 1});
  expectFolded({makeNode("Pad", {"x", "hw_pads", "lowest"}, {"p"}), pool("MaxPool", "p")},
               {1, 2, 2, 1});
  expectFolded({makeNode("Relu", {"x"}, {"r"}), makeNode("Pad", {"r", "hw_pads"}, {"p"}),
                pool("MaxPool", "p")},
               {1, 2, 2, 1});
}

TEST(FoldPadIntoConvPool, PadsThatChangeTheResultStay) {
  expectKept({makeNode("Pad", {"x", "hw_pads", "one"}, {"p"}), conv("p")});  // pads with 1
  expectKept({makeNode("Pad", {"x", "channel_pads"}, {"p"}), pool("AveragePool", "p")});
  Node reflect = makeNode("Pad", {"x", "hw_pads"}, {"p"});
  reflect.attributes["mode"].kind = Attribute::Kind::kString;
  reflect.attributes["mode"].s = "reflect";
  expectKept({reflect, conv("p")});
  // Own pads not counted: the divisor near the border would change.
  expectKept({makeNode("Pad", {"x", "hw_pads"}, {"p"}), pool("AveragePool", "p", {1, 1, 1, 1})});
  expectKept({makeNode("Pad", {"x", "hw_pads"}, {"p"}),
              withInt(pool("AveragePool", "p"), "ceil_mode", 1)});
  // A zero pad can beat negative inputs of a MaxPool.
  expectKept({makeNode("Pad", {"x", "hw_pads"}, {"p"}), pool("MaxPool", "p")});
  // A pad as wide as the kernel could leave a window without a real element.
  expectKept({makeNode("Relu", {"x"}, {"r"}),
              makeNode("Pad", {"r", "wide_pads", "minus_inf"}, {"p"}), pool("MaxPool", "p")});
  expectKept({makeNode("Pad", {"x", "wide_pads", "minus_inf"}, {"p"}),
              withInts(pool("MaxPool", "p"), "kernel_shape", {2, 2})});
}

TEST(FoldPadIntoConvPool, PaddedValueReadElsewhereStays) {
  Network net = padded({makeNode("Pad", {"x", "hw_pads"}, {"p"}), conv("p")});
  net.graph.outputs.push_back({"p", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, net, 2).empty());
}

}  // namespace
}  // namespace kiln::test
