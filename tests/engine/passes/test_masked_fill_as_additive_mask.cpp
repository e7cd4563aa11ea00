// masked_fill_as_additive_mask: GPT-Neo's attention (scores masked_fill'ed with float32's
// lowest under a causal condition, then the padding mask added, then the softmax) becomes one
// FusedAttention per layer; so does a masked_fill straight before the softmax, with -inf or
// float32's lowest in either slot of the Where. The outputs stay the CPU reference's on the
// original graph, a row the condition hides entirely (uniform) included. A fill that does not
// absorb the scores (-1e4) keeps the Where, and the attention unfused.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "masked_fill_as_additive_mask";
constexpr int64_t kB = 2, kH = 3, kS = 5, kD = 4;

struct Form {
  float fill = std::numeric_limits<float>::lowest();
  bool fillFirst = false;  // Where(masked, F, S) instead of Where(keep, S, F)
  bool padding = true;     // the padding mask added after the Where
  bool hiddenRow = false;  // query row 0 sees no key
};

// y = MatMul(Softmax(Where(causal, MatMul(q, Transpose(k)), F) [+ pad]), v).
Network maskedAttention(const Form& f) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  for (const char* name : {"q", "k", "v"})
    g.inputs.push_back({name, DataType::kFloat32, true, constantDims({kB, kH, kS, kD})});
  if (f.padding)
    g.inputs.push_back({"pad", DataType::kFloat32, true, constantDims({kB, 1, 1, kS})});
  std::vector<uint8_t> keep(kS * kS);
  for (int64_t i = 0; i < kS; ++i)
    for (int64_t j = 0; j < kS; ++j) keep[i * kS + j] = j <= i && !(f.hiddenRow && i == 0);
  g.initializers["keep"] = Tensor::fromVector(DataType::kBool, {1, 1, kS, kS}, keep);
  g.initializers["fill"] = Tensor::scalarFloat(f.fill);
  g.nodes.push_back(withInts(makeNode("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2}));
  g.nodes.push_back(makeNode("MatMul", {"q", "kt"}, {"s"}));
  if (f.fillFirst) {
    g.nodes.push_back(makeNode("Not", {"keep"}, {"masked"}));
    g.nodes.push_back(makeNode("Where", {"masked", "fill", "s"}, {"w"}));
  } else {
    g.nodes.push_back(makeNode("Where", {"keep", "s", "fill"}, {"w"}));
  }
  std::string logits = "w";
  if (f.padding) {
    g.nodes.push_back(makeNode("Add", {"w", "pad"}, {"a"}));
    logits = "a";
  }
  g.nodes.push_back(withInt(makeNode("Softmax", {logits}, {"p"}), "axis", -1));
  g.nodes.push_back(makeNode("MatMul", {"p", "v"}, {"y"}));
  g.outputs.push_back({"y", DataType::kFloat32, false, {}});
  return net;
}

// Random Q, K, V; the padding mask hides key 3 of batch 1 with float32's lowest, as
// transformers builds it.
std::vector<NamedTensor> run(const Network& net) {
  std::map<std::string, Tensor> feeds = randomFloatInputs(net);
  if (auto pad = feeds.find("pad"); pad != feeds.end()) {
    float* p = pad->second.data<float>();
    for (int64_t i = 0; i < kB * kS; ++i) p[i] = 0.f;
    p[kS + 3] = std::numeric_limits<float>::lowest();
  }
  return runOnReference(net, feeds);
}

TEST(MaskedFillAsAdditiveMask, GptNeoAttentionFuses) {
  for (bool hiddenRow : {false, true}) {
    SCOPED_TRACE(hiddenRow ? "a row the condition hides" : "causal");
    Form form;
    form.hiddenRow = hiddenRow;
    Network fused;
    // The causal mask becomes a constant: the two masks' sum, then the attention.
    auto applied = fuseAndCompareOutputs(kPass, run, maskedAttention(form), 2, &fused);
    EXPECT_EQ(applied.size(), 1u);
    EXPECT_EQ(countOps(fused, "FusedAttention"), 1);
    EXPECT_EQ(countOps(fused, "Softmax"), 0);
  }
}

TEST(MaskedFillAsAdditiveMask, WhereRightBeforeTheSoftmaxFuses) {
  for (bool fillFirst : {false, true}) {
    for (float fill :
         {std::numeric_limits<float>::lowest(), -std::numeric_limits<float>::infinity()}) {
      SCOPED_TRACE(std::string(fillFirst ? "Where(masked, F, S)" : "Where(keep, S, F)") +
                   (fill < std::numeric_limits<float>::lowest() ? ", -inf" : ", lowest"));
      Form form;
      form.fill = fill;
      form.fillFirst = fillFirst;
      form.padding = false;
      Network fused;
      auto applied = fuseAndCompareOutputs(kPass, run, maskedAttention(form), 1, &fused);
      EXPECT_EQ(applied.size(), 1u);
      EXPECT_EQ(countOps(fused, "FusedAttention"), 1);
    }
  }
}

TEST(MaskedFillAsAdditiveMask, FillThatDoesNotAbsorbTheScoresStays) {
  // S + -1e4 is not -1e4: the Where stays a replacing mask and the attention unfused.
  Form form;
  form.fill = -1e4f;
  Network fused;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, maskedAttention(form), 5, &fused).empty());
  EXPECT_EQ(countOps(fused, "FusedAttention"), 0);
  EXPECT_EQ(countOps(fused, "Where"), 1);
}

}  // namespace
}  // namespace kiln::test
