// mask_select_as_add: Softmax(Where(cond, lowest, X)) (torch's masked_fill(finfo.min), as
// DeBERTa's XSoftmax exports it) becomes one ScaledMaskedSoftmax of X and a mask computed at
// cond's size; the outputs stay the CPU reference's, a fully masked row (uniform) too. Either
// slot of the fill works; a fill that is not a masking one (-1e4) keeps the Where.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "mask_select_as_add";

// x [2, 3, 4, 5] scores; keep [2, 1, 4, 5] bool (row 0 of batch 0 fully masked).
// y = Softmax(Where(masked, fill, x)) or, with `fillSecond`, Where(keep, x, fill).
Network maskedSoftmax(float fill, bool fillSecond) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(4), DimExpr(5)}}};
  std::vector<uint8_t> keep(2 * 4 * 5);
  for (size_t i = 0; i < keep.size(); ++i) keep[i] = i >= 5 && (i * 7) % 3 != 0;
  g.initializers["keep"] = Tensor::fromVector(DataType::kBool, {2, 1, 4, 5}, keep);
  g.initializers["fill"] = Tensor::scalarFloat(fill);
  std::string cond = "keep";
  if (!fillSecond) {
    g.nodes.push_back(makeNode("Not", {"keep"}, {"masked"}));
    cond = "masked";
  }
  g.nodes.push_back(makeNode("Where",
                             fillSecond ? std::vector<std::string>{cond, "x", "fill"}
                                        : std::vector<std::string>{cond, "fill", "x"},
                             {"s"}));
  g.nodes.push_back(withInt(makeNode("Softmax", {"s"}, {"y"}), "axis", -1));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 3, 4, 5}, 9, -3.0, 3.0)}});
}

TEST(MaskSelectAsAdd, MaskingWhereBecomesTheFusedSoftmaxsMask) {
  for (bool fillSecond : {false, true}) {
    SCOPED_TRACE(fillSecond);
    Network fused;
    // Not(keep) folds (a constant); the Where (now the mask) and the fused softmax stay.
    auto applied = fuseAndCompareOutputs(
        kPass, run, maskedSoftmax(std::numeric_limits<float>::lowest(), fillSecond), 2, &fused);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(fused.graph.nodes[1].opType, "ScaledMaskedSoftmax");
    EXPECT_EQ(fused.graph.nodes[1].inputs[0], "x");
    // The uniform row of the fully masked query (batch 0, head 0, row 0).
    const auto y = run(fused);
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(y[0].tensor.valueAsDouble(i), 0.2, 1e-6);
  }
}

TEST(MaskSelectAsAdd, NonMaskingFillKeepsTheWhere) {
  auto applied = fuseAndCompareOutputs(kPass, run, maskedSoftmax(-1e4f, false), 2);
  EXPECT_TRUE(applied.empty());
}

}  // namespace
}  // namespace kiln::test
