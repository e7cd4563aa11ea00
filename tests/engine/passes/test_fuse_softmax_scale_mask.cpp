// fuse_softmax_scale_mask: Softmax(X * c + M) and its variants become one
// ai.kiln ScaledMaskedSoftmax; graphs run with and without the pass on the CPU
// reference give the same outputs, and what must not fuse stays as it was.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fuse_softmax_scale_mask";

Node softmax(const std::string& in, int64_t axis = -1, int opset = 17) {
  return withInt(makeNode("Softmax", {in}, {"y"}, opset), "axis", axis);
}

// Attention scores x [2, 3, 5, 7] and an additive mask [2, 1, 1, 7] (the BERT shapes,
// smaller), the scalars "c" (0.125) and "d" (sqrt(8)); `nodes` end in output "y".
Network attention(const std::vector<Node>& nodes, Shape maskShape = {2, 1, 1, 7}) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(5), DimExpr(7)}},
              {"mask", DataType::kFloat32, true, {}},
              {"s", DataType::kFloat32, true, {}}};
  for (int64_t d : maskShape) g.inputs[1].shape.push_back(DimExpr(d));
  g.initializers["c"] = floatTensor({}, {0.125f});
  g.initializers["d"] = floatTensor({1}, {2.8284271f});
  g.nodes = nodes;
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::map<std::string, Tensor> feeds(const Network& net) {
  std::map<std::string, Tensor> in;
  Shape mask;
  for (const DimExpr& d : net.graph.inputs[1].shape) mask.push_back(d.constValue());
  in["x"] = randomTensor(DataType::kFloat32, {2, 3, 5, 7}, 1, -8.0, 8.0);
  // A padding mask: large negative on some keys, zero elsewhere.
  Tensor m = randomTensor(DataType::kFloat32, mask, 2);
  for (int64_t i = 0; i < m.numel(); ++i)
    m.data<float>()[i] = m.data<float>()[i] < -0.5f ? -1e4f : 0.f;
  in["mask"] = m;
  in["s"] = floatTensor({}, {0.3f});
  return in;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, feeds(net));
}

std::vector<PassApplication> fuseAndCompare(const Network& original, size_t expectedNodes,
                                            Network* fusedOut = nullptr) {
  return fuseAndCompareOutputs(kPass, run, original, expectedNodes, fusedOut);
}

TEST(FuseSoftmaxScaleMask, ScaleMaskSoftmaxIsOneNodeWithProvenance) {
  Network fused;
  auto applied = fuseAndCompare(
      attention({makeNode("Mul", {"x", "c"}, {"scaled"}),
                 makeNode("Add", {"scaled", "mask"}, {"masked"}), softmax("masked")}),
      1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"scaled", "masked", "y"}));
  EXPECT_EQ(applied[0].layer, "scaled + masked + y");
  const Node& node = fused.graph.nodes[0];
  EXPECT_EQ(node.opType, "ScaledMaskedSoftmax");
  EXPECT_EQ(node.domain, kKilnDomain);
  EXPECT_EQ(node.inputs, (std::vector<std::string>{"x", "mask"}));
  EXPECT_FLOAT_EQ(node.attrFloat("scale", 0.f), 0.125f);
  EXPECT_EQ(node.attrInt("axis", 0), -1);
  EXPECT_EQ(node.attrStrings(kSourceNodesAttribute),
            (std::vector<std::string>{"scaled", "masked", "y"}));
  EXPECT_EQ(node.attrString(kFusionPassAttribute, ""), kPass);
  EXPECT_EQ(fused.opsets.at(kKilnDomain), 1);
  // The fused graph's shapes still infer: Y is X's shape.
  auto shapes = inferShapes(fused);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_EQ(shapes->values.at("y").shape.size(), 4u);
  EXPECT_EQ(shapes->values.at("y").shape[3], DimExpr(7));
}

TEST(FuseSoftmaxScaleMask, DivisionAndEitherInputOrder) {
  // X / d with d = sqrt(8), the mask as the Add's first input.
  Network fused;
  auto applied = fuseAndCompare(
      attention({makeNode("Div", {"x", "d"}, {"scaled"}),
                 makeNode("Add", {"mask", "scaled"}, {"masked"}), softmax("masked")}),
      1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_NEAR(fused.graph.nodes[0].attrFloat("scale", 0.f), 1.0 / 2.8284271, 1e-7);
  EXPECT_EQ(fused.graph.nodes[0].inputs, (std::vector<std::string>{"x", "mask"}));
  // The constant as the Mul's first input.
  applied = fuseAndCompare(
      attention({makeNode("Mul", {"c", "x"}, {"scaled"}),
                 makeNode("Add", {"scaled", "mask"}, {"masked"}), softmax("masked")}),
      1);
  EXPECT_EQ(applied.size(), 1u);
}

TEST(FuseSoftmaxScaleMask, WithoutMaskOrWithoutScale) {
  Network fused;
  auto applied = fuseAndCompare(
      attention({makeNode("Mul", {"x", "c"}, {"scaled"}), softmax("scaled")}), 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].inputs, std::vector<std::string>{"x"});
  applied = fuseAndCompare(
      attention({makeNode("Add", {"x", "mask"}, {"masked"}), softmax("masked")}), 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_FLOAT_EQ(fused.graph.nodes[0].attrFloat("scale", 0.f), 1.f);
}

TEST(FuseSoftmaxScaleMask, MaskBroadcastingBothWays) {
  // A [5, 7] mask against [2, 3, 5, 7] scores, and a mask larger than X's last
  // dims: X [2, 3, 5, 7] + M [2, 3, 1, 7]; Y has the broadcast shape either way.
  for (const Shape& mask : {Shape{5, 7}, Shape{2, 3, 1, 7}, Shape{7}}) {
    SCOPED_TRACE(shapeToString(mask));
    auto applied = fuseAndCompare(
        attention({makeNode("Mul", {"x", "c"}, {"scaled"}),
                   makeNode("Add", {"scaled", "mask"}, {"masked"}), softmax("masked")},
                  mask),
        1);
    EXPECT_EQ(applied.size(), 1u);
  }
}

TEST(FuseSoftmaxScaleMask, ConstantNodeScaleIsFusedAndItsNodeRemoved) {
  Node c = makeNode("Constant", {}, {"c_node"});
  c.attributes["value"].kind = Attribute::Kind::kTensor;
  c.attributes["value"].t = floatTensor({}, {0.25f});
  Network fused;
  auto applied = fuseAndCompare(
      attention({c, makeNode("Mul", {"x", "c_node"}, {"scaled"}),
                 makeNode("Add", {"scaled", "mask"}, {"masked"}), softmax("masked")}),
      1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_FLOAT_EQ(fused.graph.nodes[0].attrFloat("scale", 0.f), 0.25f);
}

TEST(FuseSoftmaxScaleMask, ExtraConsumersKeepTheirValues) {
  // The scaled scores are also a graph output: the Mul stays, Add + Softmax fuse.
  Network net = attention({makeNode("Mul", {"x", "c"}, {"scaled"}),
                           makeNode("Add", {"scaled", "mask"}, {"masked"}), softmax("masked")});
  net.graph.outputs.push_back({"scaled", DataType::kFloat32, false, {}});
  Network fused;
  auto applied = fuseAndCompare(net, 2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"masked", "y"}));
  EXPECT_EQ(fused.graph.nodes[1].inputs, (std::vector<std::string>{"scaled", "mask"}));
  // The masked scores are read by another node: nothing fuses.
  Network shared = attention({makeNode("Mul", {"x", "c"}, {"scaled"}),
                              makeNode("Add", {"scaled", "mask"}, {"masked"}), softmax("masked"),
                              makeNode("Identity", {"masked"}, {"extra"})});
  shared.graph.outputs.push_back({"extra", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompare(shared, 4).empty());
}

TEST(FuseSoftmaxScaleMask, NonConstantScaleIsNotAScale) {
  // Softmax(X * s) with s a graph input: nothing fuses.
  EXPECT_TRUE(
      fuseAndCompare(attention({makeNode("Mul", {"x", "s"}, {"scaled"}), softmax("scaled")}), 2)
          .empty());
  // With a mask the Add still fuses, reading the product as X (scale 1).
  Network fused;
  auto applied = fuseAndCompare(
      attention({makeNode("Mul", {"x", "s"}, {"scaled"}),
                 makeNode("Add", {"scaled", "mask"}, {"masked"}), softmax("masked")}),
      2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_FLOAT_EQ(fused.graph.nodes[1].attrFloat("scale", 0.f), 1.f);
  // A constant that is not a scalar is not a scale either.
  Network vector = attention({makeNode("Mul", {"x", "v"}, {"scaled"}), softmax("scaled")});
  vector.graph.initializers["v"] = randomTensor(DataType::kFloat32, {7}, 5);
  EXPECT_TRUE(fuseAndCompare(vector, 2).empty());
}

TEST(FuseSoftmaxScaleMask, OnlyTheLastAxis) {
  EXPECT_TRUE(
      fuseAndCompare(attention({makeNode("Mul", {"x", "c"}, {"scaled"}), softmax("scaled", 1)}), 2)
          .empty());
  EXPECT_TRUE(
      fuseAndCompare(attention({makeNode("Mul", {"x", "c"}, {"scaled"}), softmax("scaled", 3)}), 2)
          .empty());
  // Before opset 13 the default axis is 1 (a 2-D coercion); axis -1 is the last axis.
  Node legacy = makeNode("Softmax", {"scaled"}, {"y"}, 11);
  EXPECT_TRUE(
      fuseAndCompare(attention({makeNode("Mul", {"x", "c"}, {"scaled"}), legacy}), 2).empty());
  EXPECT_EQ(fuseAndCompare(
                attention({makeNode("Mul", {"x", "c"}, {"scaled"}), softmax("scaled", -1, 11)}), 1)
                .size(),
            1u);
}

TEST(FuseSoftmaxScaleMask, DisabledByName) {
  Network net = attention({makeNode("Mul", {"x", "c"}, {"scaled"}),
                           makeNode("Add", {"scaled", "mask"}, {"masked"}), softmax("masked")});
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 1, {kPass}, &applied).isOk());
  EXPECT_TRUE(applied.empty());
  EXPECT_EQ(net.graph.nodes.size(), 3u);
  ASSERT_TRUE(runPasses(net, 0, {}, &applied).isOk());  // level 0 runs no fusion
  EXPECT_EQ(net.graph.nodes.size(), 3u);
  bool listed = false;
  for (const PassInfo& info : listPasses()) listed = listed || info.name == kPass;
  EXPECT_TRUE(listed);
}

// The reference kernel against softmax computed here by hand.
TEST(ScaledMaskedSoftmaxOp, MatchesTheFormula) {
  const float inf = std::numeric_limits<float>::infinity();
  auto out = OpTest("ScaledMaskedSoftmax", 1, kKilnDomain)
                 .attr("scale", 0.5f)
                 .input(floatTensor({2, 3}, {1.f, 2.f, 3.f, -4.f, 0.f, 6.f}))
                 .input(floatTensor({1, 3}, {0.f, -1.f, -inf}))
                 .run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  // Row 0: v = [0.5, 0, -inf]; row 1: v = [-2, -1, -inf].
  const double a = std::exp(0.5), b = 1.0, c = std::exp(-2.0), d = std::exp(-1.0);
  expectTensorNear(out.value()[0],
                   floatTensor({2, 3}, {float(a / (a + b)), float(b / (a + b)), 0.f,
                                        float(c / (c + d)), float(d / (c + d)), 0.f}),
                   1e-6, 1e-6);
  auto bad = OpTest("ScaledMaskedSoftmax", 1, kKilnDomain)
                 .attr("axis", int64_t{0})
                 .input(floatTensor({2, 3}, {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}))
                 .run();
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("last axis"), std::string::npos) << bad.status().message();
  auto mismatch = OpTest("ScaledMaskedSoftmax", 1, kKilnDomain)
                      .input(floatTensor({2, 3}, {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}))
                      .input(floatTensor({2}, {0.f, 0.f}))
                      .run();
  ASSERT_FALSE(mismatch.isOk());
  EXPECT_NE(mismatch.status().message().find("X and M"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
