// fuse_masked_fill_softmax: Softmax(Where(cond, F, X)) (torch's masked_fill(finfo.min), as
// DeBERTa's XSoftmax exports it) becomes one ScaledMaskedSoftmax of X and a mask computed at
// cond's size that replaces the masked scores; the outputs stay the CPU reference's for fills
// of float32's lowest and -1e4, a fully masked row (uniform) and an inf or NaN score at a
// masked position (never read) included. Either slot of the fill works; a zero fill keeps the
// Where.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fuse_masked_fill_softmax";

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

// Scores in [-3, 3], with inf and NaN at the masked positions of batch 0's row 1 (keep[6] and
// keep[9] are false; the mask broadcasts over heads: head 0's elements 6 and 9).
std::vector<NamedTensor> run(const Network& net) {
  Tensor x = randomTensor(DataType::kFloat32, {2, 3, 4, 5}, 9, -3.0, 3.0);
  x.data<float>()[6] = std::numeric_limits<float>::infinity();
  x.data<float>()[9] = std::numeric_limits<float>::quiet_NaN();
  return runOnReference(net, {{"x", x}});
}

TEST(FuseMaskedFillSoftmax, MaskedFillBecomesTheFusedSoftmaxsReplacingMask) {
  for (float fill : {std::numeric_limits<float>::lowest(), -1e4f}) {
    for (bool fillSecond : {false, true}) {
      SCOPED_TRACE(std::to_string(fill) + (fillSecond ? " second" : " first"));
      Network fused;
      // Not(keep) folds (a constant); the Where (now the mask) and the fused softmax stay.
      auto applied = fuseAndCompareOutputs(kPass, run, maskedSoftmax(fill, fillSecond), 2, &fused);
      ASSERT_EQ(applied.size(), 1u);
      const Node& softmax = fused.graph.nodes[1];
      EXPECT_EQ(softmax.opType, "ScaledMaskedSoftmax");
      EXPECT_EQ(softmax.inputs[0], "x");
      EXPECT_EQ(softmax.attrInt("mask_replaces", 0), 1);
      // The uniform row of the fully masked query (batch 0, head 0, row 0); no NaN in row 1.
      const auto y = run(fused);
      for (int i = 0; i < 5; ++i) EXPECT_NEAR(y[0].tensor.valueAsDouble(i), 0.2, 1e-6);
      for (int i = 5; i < 10; ++i) EXPECT_FALSE(std::isnan(y[0].tensor.valueAsDouble(i)));
    }
  }
}

TEST(FuseMaskedFillSoftmax, ZeroFillKeepsTheWhere) {
  auto applied = fuseAndCompareOutputs(kPass, run, maskedSoftmax(0.f, false), 2);
  EXPECT_TRUE(applied.empty());
}

}  // namespace
}  // namespace kiln::test
