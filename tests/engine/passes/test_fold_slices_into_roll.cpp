// fold_slices_into_roll: torch.roll as an export writes it (per axis, Concat of the tail Slice and
// the head Slice) becomes one ai.kiln Roll, consecutive axes merged; the CPU reference's outputs
// of the rewritten graph equal the original's on random non-zero data (which also checks the
// CPU Roll kernel, the innermost axis and the outermost included). Slices with a step, parts in
// the other order, a Slice read elsewhere and a symbolic rolled dim stay as they are.
#include <gtest/gtest.h>

#include <limits>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_slices_into_roll";
constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

struct RollCase {
  int64_t axis = 1;
  int64_t shift = 2;       // torch.roll's shift: tail x[d - shift:], head x[:d - shift]
  int64_t step = 1;        // of the tail Slice (2: not a roll)
  bool headFirst = false;  // Concat(head, tail): the identity, not a roll
  bool tailReadElsewhere = false;
};

void addRoll(Graph& g, const std::string& x, const std::string& y, const RollCase& c) {
  const std::string p = y + "_";
  g.initializers[p + "tail_start"] = Tensor::int64Vector({-c.shift});
  g.initializers[p + "tail_end"] = Tensor::int64Vector({kEnd});
  g.initializers[p + "head_start"] = Tensor::int64Vector({0});
  g.initializers[p + "head_end"] = Tensor::int64Vector({-c.shift});
  g.initializers[p + "axes"] = Tensor::int64Vector({c.axis});
  g.initializers[p + "steps"] = Tensor::int64Vector({c.step});
  std::vector<std::string> tailInputs = {x, p + "tail_start", p + "tail_end", p + "axes"};
  if (c.step != 1) tailInputs.push_back(p + "steps");
  g.nodes.push_back(makeNode("Slice", tailInputs, {p + "tail"}));
  g.nodes.push_back(
      makeNode("Slice", {x, p + "head_start", p + "head_end", p + "axes"}, {p + "head"}));
  const std::vector<std::string> parts = c.headFirst
                                             ? std::vector<std::string>{p + "head", p + "tail"}
                                             : std::vector<std::string>{p + "tail", p + "head"};
  g.nodes.push_back(withInt(makeNode("Concat", parts, {y}), "axis", c.axis));
  if (c.tailReadElsewhere) g.outputs.push_back({p + "tail", DataType::kFloat32, false, {}});
}

// x [2 or N, 6, 5, 4] -> roll(first) -> roll(second) -> Relu -> out.
Network rolls(const RollCase& first, const RollCase& second, bool symbolicBatch = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const DimExpr n = symbolicBatch ? DimExpr::symbol("N") : DimExpr(2);
  g.inputs = {{"x", DataType::kFloat32, true, {n, DimExpr(6), DimExpr(5), DimExpr(4)}}};
  addRoll(g, "x", "rolled1", first);
  addRoll(g, "rolled1", "rolled2", second);
  g.nodes.push_back(makeNode("Relu", {"rolled2"}, {"out"}));
  g.outputs.insert(g.outputs.begin(), {"out", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> runRolls(const Network& net) {
  // Values in [-2, -0.5) and [0.5, 2): no zero, and the Relu keeps half of them.
  Tensor x = randomTensor(DataType::kFloat32, {2, 6, 5, 4}, 11, 0.5, 2.0);
  for (int64_t i = 0; i < x.numel(); i += 2) x.data<float>()[i] = -x.data<float>()[i];
  return runOnReference(net, {{"x", x}});
}

const Node* onlyNodeOf(const Network& net, const std::string& op) {
  const Node* found = nullptr;
  for (const Node& n : net.graph.nodes) {
    if (n.opType != op) continue;
    if (found) return nullptr;
    found = &n;
  }
  return found;
}

TEST(FoldSlicesIntoRoll, SwinsShiftOverTwoAxesIsOneRoll) {
  Network fused;
  RollCase h{.axis = 1, .shift = 2}, w{.axis = 2, .shift = 3};
  const auto applied = fuseAndCompareOutputs(kPass, runRolls, rolls(h, w), 2, &fused);
  EXPECT_EQ(applied.size(), 2u);
  EXPECT_EQ(countOps(fused, "Slice"), 0);
  EXPECT_EQ(countOps(fused, "Concat"), 0);
  const Node* roll = onlyNodeOf(fused, "Roll");
  ASSERT_NE(roll, nullptr);
  EXPECT_EQ(roll->domain, kKilnDomain);
  EXPECT_EQ(roll->inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(roll->outputs, (std::vector<std::string>{"rolled2"}));
  EXPECT_EQ(roll->attrInts("shifts"), (std::vector<int64_t>{0, 2, 3, 0}));
}

TEST(FoldSlicesIntoRoll, TheOuterAndInnerAxesAndOneAxisTwice) {
  // The batch axis and the innermost one (the CPU kernel's in-row shift).
  RollCase n{.axis = 0, .shift = 1}, c{.axis = 3, .shift = 3};
  Network fused;
  fuseAndCompareOutputs(kPass, runRolls, rolls(n, c), 2, &fused);
  const Node* roll = onlyNodeOf(fused, "Roll");
  ASSERT_NE(roll, nullptr);
  EXPECT_EQ(roll->attrInts("shifts"), (std::vector<int64_t>{1, 0, 0, 3}));
  // The same axis twice: the shifts add up mod the dim (2 + 5 = 7 = 1 mod 6).
  RollCase a{.axis = 1, .shift = 2}, b{.axis = -3, .shift = 5};
  fuseAndCompareOutputs(kPass, runRolls, rolls(a, b), 2, &fused);
  roll = onlyNodeOf(fused, "Roll");
  ASSERT_NE(roll, nullptr);
  EXPECT_EQ(roll->attrInts("shifts"), (std::vector<int64_t>{0, 1, 0, 0}));
}

TEST(FoldSlicesIntoRoll, WhatIsNotARollStays) {
  RollCase roll{.axis = 2, .shift = 3};
  // A stepped tail, the parts in the other order: only the second (a real roll) folds.
  RollCase stepped{.axis = 1, .shift = 4, .step = 2}, headFirst{.axis = 1, .headFirst = true};
  for (const RollCase& first : {stepped, headFirst}) {
    Network fused;
    const auto applied = fuseAndCompareOutputs(kPass, runRolls, rolls(first, roll), 5, &fused);
    EXPECT_EQ(applied.size(), 1u);
    EXPECT_EQ(countOps(fused, "Slice"), 2);
    ASSERT_NE(onlyNodeOf(fused, "Roll"), nullptr);
    EXPECT_EQ(onlyNodeOf(fused, "Roll")->inputs, (std::vector<std::string>{"rolled1"}));
  }
  // The first roll's tail read elsewhere (a graph output): that roll stays.
  RollCase shared{.axis = 1, .shift = 2, .tailReadElsewhere = true};
  Network fused;
  fuseAndCompareOutputs(kPass, runRolls, rolls(shared, roll), 5, &fused);
  EXPECT_EQ(countOps(fused, "Concat"), 1);
  // A symbolic rolled dim (the batch): the size of the tail is unknown, that roll stays.
  RollCase onBatch{.axis = 0, .shift = 1};
  const Network symbolic = rolls(roll, onBatch, /*symbolicBatch=*/true);
  std::vector<PassApplication> applied;
  Network copy = symbolic;
  ASSERT_TRUE(runPasses(copy, 1, {}, &applied).isOk());
  int rolled = 0;
  for (const PassApplication& a : applied) rolled += a.pass == kPass;
  EXPECT_EQ(rolled, 1);  // the W roll only
  EXPECT_EQ(countOps(copy, "Concat"), 1);
}

// The CPU Roll kernel refuses shifts that do not name every axis, with the node's name.
TEST(FoldSlicesIntoRoll, RollWithShiftsOfTheWrongLengthIsAnError) {
  Network net;
  net.opsets[""] = 17;
  net.opsets[kKilnDomain] = 1;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3)}}};
  Node roll = withInts(makeNode("Roll", {"x"}, {"y"}, 1), "shifts", {1});
  roll.domain = kKilnDomain;
  roll.name = "the_roll";
  g.nodes.push_back(roll);
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  std::vector<NamedTensor> out;
  const Status status = ReferenceBackend(net).run(
      {{"x", randomTensor(DataType::kFloat32, {2, 3}, 12, 0.5, 2.0)}}, &out);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("the_roll"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("shifts has 1 entries for rank 2"), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace kiln::test
