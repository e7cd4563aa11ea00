// fold_split_views: each head split after a Split (Reshape to heads, Transpose to [B, H, S, D])
// becomes one ai.kiln StridedCopy of the Split's input and the Split goes; the CPU reference's
// outputs of the rewritten graph equal the original's on random non-zero data. A chain node
// read elsewhere stays, a Split output read by a graph output keeps the Split, dynamic shapes
// and a fused attention's strided reads are left alone.
#include <gtest/gtest.h>

#include "engine/passes/packed_attention_graph.h"
#include "engine/passes/pass_test_support.h"
#include "ir/fused_attention.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_split_views";
constexpr int64_t kBatch = 2, kSeq = 5, kHeads = 2, kDim = 3, kWidth = 3 * kHeads * kDim;

struct SplitCase {
  bool symbolicBatch = false;
  bool valueReshapedOnly = false;  // V: Reshape to heads alone (a graph output), before Q's chain
  bool queryHeadsReadElsewhere = false;   // Q's Reshape output also a graph output
  bool splitOutputIsGraphOutput = false;  // the Split's Q output itself a graph output
  bool keyEndsFiveDims = false;           // K: Reshape [B, H, S, D, 1] after the Transpose
};

// qkv [B, S, 3 H D] -> Split (axis 2, sizes [H D] x 3) -> q, k, v; each -> Reshape
// [B, S, H, D] -> Transpose (0,2,1,3) -> Reshape [B H, S, D] (DeBERTa's transpose_for_scores)
// -> graph outputs q3, k3, v3.
Network splitHeads(const SplitCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const DimExpr batch = c.symbolicBatch ? DimExpr::symbol("N") : DimExpr(kBatch);
  g.inputs = {{"qkv", DataType::kFloat32, true, {batch, DimExpr(kSeq), DimExpr(kWidth)}}};
  g.initializers["sizes"] = Tensor::int64Vector({kHeads * kDim, kHeads * kDim, kHeads * kDim});
  g.initializers["heads"] = Tensor::int64Vector({0, kSeq, kHeads, kDim});
  g.initializers["merged"] = Tensor::int64Vector({-1, kSeq, kDim});
  g.initializers["five"] = Tensor::int64Vector({0, kHeads, kSeq, kDim, 1});
  g.nodes.push_back(withInt(makeNode("Split", {"qkv", "sizes"}, {"q", "k", "v"}), "axis", 2));
  if (c.valueReshapedOnly) {
    g.nodes.push_back(makeNode("Reshape", {"v", "heads"}, {"v_heads"}));
    g.outputs.push_back({"v_heads", DataType::kFloat32, false, {}});
  }
  for (const std::string p : {"q", "k", "v"}) {
    if (p == "v" && c.valueReshapedOnly) continue;
    g.nodes.push_back(makeNode("Reshape", {p, "heads"}, {p + "_heads"}));
    g.nodes.push_back(
        withInts(makeNode("Transpose", {p + "_heads"}, {p + "_t"}), "perm", {0, 2, 1, 3}));
    const bool five = p == "k" && c.keyEndsFiveDims;
    g.nodes.push_back(makeNode("Reshape", {p + "_t", five ? "five" : "merged"}, {p + "3"}));
    g.outputs.push_back({p + "3", DataType::kFloat32, false, {}});
  }
  if (c.queryHeadsReadElsewhere) g.outputs.push_back({"q_heads", DataType::kFloat32, false, {}});
  if (c.splitOutputIsGraphOutput) g.outputs.push_back({"q", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> runSplit(const Network& net) {
  // Values in [0.5, 2): no zero, so a misplaced or missing read shows.
  return runOnReference(
      net, {{"qkv", randomTensor(DataType::kFloat32, {kBatch, kSeq, kWidth}, 7, 0.5, 2.0)}});
}

const Node* writerOf(const Network& net, const std::string& value) {
  for (const Node& n : net.graph.nodes)
    if (std::find(n.outputs.begin(), n.outputs.end(), value) != n.outputs.end()) return &n;
  return nullptr;
}

TEST(FoldSplitViews, EachHeadSplitIsOneStridedCopyAndTheSplitGoes) {
  Network fused;
  // Per head a StridedCopy and the [B H, S, D] Reshape, which the runtime aliases.
  const auto applied = fuseAndCompareOutputs(kPass, runSplit, splitHeads({}), 6, &fused);
  EXPECT_EQ(applied.size(), 3u);
  EXPECT_EQ(countOps(fused, "Split"), 0);
  EXPECT_EQ(countOps(fused, "Transpose"), 0);
  ASSERT_EQ(countOps(fused, "StridedCopy"), 3);
  const int64_t offsets[] = {0, kHeads * kDim, 2 * kHeads * kDim};
  const char* heads[] = {"q_t", "k_t", "v_t"};
  for (int i = 0; i < 3; ++i) {
    const Node* copy = writerOf(fused, heads[i]);
    ASSERT_NE(copy, nullptr) << heads[i];
    EXPECT_EQ(copy->opType, "StridedCopy");
    EXPECT_EQ(copy->domain, kKilnDomain);
    EXPECT_EQ(copy->inputs, (std::vector<std::string>{"qkv"}));
    EXPECT_EQ(copy->attrInts("shape"), (std::vector<int64_t>{kBatch, kHeads, kSeq, kDim}));
    EXPECT_EQ(copy->attrInts("strides"), (std::vector<int64_t>{kSeq * kWidth, kDim, kWidth, 1}));
    EXPECT_EQ(copy->attrInt("offset", -1), offsets[i]);
    EXPECT_EQ(copy->attrString(kFusionPassAttribute, ""), kPass);
  }
  // The last head's copy took the Split over.
  const auto sources = writerOf(fused, "v_t")->attrStrings(kSourceNodesAttribute);
  EXPECT_NE(std::find(sources.begin(), sources.end(), "q"), sources.end());
}

TEST(FoldSplitViews, AChainThatComposesFurtherEndsLater) {
  SplitCase c;
  c.keyEndsFiveDims = true;  // [B, H, S, D, 1] has one stride per dim: the Reshape folds too
  Network fused;
  fuseAndCompareOutputs(kPass, runSplit, splitHeads(c), 5, &fused);
  const Node* key = writerOf(fused, "k3");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->opType, "StridedCopy");
  EXPECT_EQ(key->attrInts("shape"), (std::vector<int64_t>{kBatch, kHeads, kSeq, kDim, 1}));
  EXPECT_EQ(countOps(fused, "Split"), 0);
}

TEST(FoldSplitViews, AReshapeOnlyOutputBecomesTheCopyWhenTheSplitGoes) {
  SplitCase c;
  c.valueReshapedOnly = true;  // written before Q's chain: the second sweep takes it
  Network fused;
  fuseAndCompareOutputs(kPass, runSplit, splitHeads(c), 5, &fused);
  EXPECT_EQ(countOps(fused, "Split"), 0);
  const Node* value = writerOf(fused, "v_heads");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->opType, "StridedCopy");
  EXPECT_EQ(value->attrInts("strides"), (std::vector<int64_t>{kSeq * kWidth, kWidth, kDim, 1}));
  EXPECT_EQ(value->attrInt("offset", -1), 2 * kHeads * kDim);
}

TEST(FoldSplitViews, AChainNodeReadElsewhereStays) {
  SplitCase c;
  c.queryHeadsReadElsewhere = true;
  Network fused;
  const auto applied = fuseAndCompareOutputs(kPass, runSplit, splitHeads(c), 7, &fused);
  // Q's Transpose folds alone: its Reshape (a graph output) and the Split stay for their
  // other readers.
  ASSERT_FALSE(applied.empty());
  EXPECT_EQ(applied[0].nodes, (std::vector<std::string>{"q_t"}));
  EXPECT_EQ(writerOf(fused, "q_t")->opType, "StridedCopy");
  EXPECT_EQ(writerOf(fused, "q_t")->inputs, (std::vector<std::string>{"qkv"}));
  // Once K and V fold, Q's Reshape reads the Split's last read output: Split and Reshape
  // become one copy that still writes the graph output.
  ASSERT_NE(writerOf(fused, "q_heads"), nullptr);
  EXPECT_EQ(writerOf(fused, "q_heads")->opType, "StridedCopy");
  EXPECT_EQ(applied.back().nodes, (std::vector<std::string>{"q", "q_heads"}));
  EXPECT_EQ(countOps(fused, "Split"), 0);
}

TEST(FoldSplitViews, ASplitOutputReadByAGraphOutputKeepsTheSplit) {
  SplitCase c;
  c.splitOutputIsGraphOutput = true;
  Network fused;
  fuseAndCompareOutputs(kPass, runSplit, splitHeads(c), 7, &fused);
  ASSERT_NE(writerOf(fused, "q"), nullptr);
  EXPECT_EQ(writerOf(fused, "q")->opType, "Split");
  EXPECT_EQ(countOps(fused, "StridedCopy"), 3);
  std::vector<std::string> outputs;
  for (const ValueInfo& out : fused.graph.outputs) outputs.push_back(out.name);
  EXPECT_EQ(outputs, (std::vector<std::string>{"q3", "k3", "v3", "q"}));
}

TEST(FoldSplitViews, DynamicShapesAndTheDisabledPassKeepEverything) {
  SplitCase dynamic;
  dynamic.symbolicBatch = true;
  Network net = splitHeads(dynamic);
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 1, {}, &applied).isOk());
  for (const PassApplication& a : applied) EXPECT_NE(a.pass, kPass);
  EXPECT_EQ(countOps(net, "Split"), 1);
  EXPECT_EQ(countOps(net, "Transpose"), 3);

  Network disabled = splitHeads({});
  applied.clear();
  ASSERT_TRUE(runPasses(disabled, 1, {kPass}, &applied).isOk());
  EXPECT_EQ(countOps(disabled, "Split"), 1);
  EXPECT_EQ(countOps(disabled, "StridedCopy"), 0);
}

// A Split into a fused attention: fold_attention_views reads Q, K, V through strides first,
// and this pass finds nothing left to do.
TEST(FoldSplitViews, AFusedAttentionKeepsItsStridedReads) {
  PackedAttentionCase c;  // timm: Transpose -> Split -> Squeeze into the attention
  const Network original = packedAttentionNetwork(c);
  Network fused = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  for (const PassApplication& a : applied) EXPECT_NE(a.pass, kPass);
  EXPECT_EQ(countOps(fused, "StridedCopy"), 0);
  ASSERT_EQ(countOps(fused, kFusedAttentionOp), 1);
  for (const Node& n : fused.graph.nodes)
    if (n.opType == kFusedAttentionOp) EXPECT_EQ(n.attrString("qkv_layout", ""), "STRIDED");
  const auto expected = runOnReference(original, packedAttentionFeeds(c, 3));
  const auto actual = runOnReference(fused, packedAttentionFeeds(c, 3));
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    expectTensorNear(actual[i].tensor, expected[i].tensor, 1e-5, 1e-5);
}

// DeBERTa-v3's projections: merge_parallel_matmuls makes the GEMM and the Split, this pass
// reads each head from the GEMM's output.
Network projectedHeads() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(kBatch), DimExpr(kSeq), DimExpr(8)}}};
  g.initializers["heads"] = Tensor::int64Vector({0, kSeq, kHeads, kDim});
  g.initializers["merged"] = Tensor::int64Vector({-1, kSeq, kDim});
  int seed = 1;
  for (const std::string p : {"q", "k", "v"}) {
    g.initializers["w" + p] = randomTensor(DataType::kFloat32, {8, kHeads * kDim}, seed++);
    g.initializers["b" + p] = randomTensor(DataType::kFloat32, {kHeads * kDim}, seed++);
    g.nodes.push_back(makeNode("MatMul", {"x", "w" + p}, {p + "_mm"}));
    g.nodes.push_back(makeNode("Add", {p + "_mm", "b" + p}, {p}));
    g.nodes.push_back(makeNode("Reshape", {p, "heads"}, {p + "_heads"}));
    g.nodes.push_back(
        withInts(makeNode("Transpose", {p + "_heads"}, {p + "_t"}), "perm", {0, 2, 1, 3}));
    g.nodes.push_back(makeNode("Reshape", {p + "_t", "merged"}, {p + "3"}));
  }
  // Scores q3 k3^T (no softmax: no attention to fuse), times v3.
  g.nodes.push_back(withInts(makeNode("Transpose", {"k3"}, {"kT"}), "perm", {0, 2, 1}));
  g.nodes.push_back(makeNode("MatMul", {"q3", "kT"}, {"scores"}));
  g.nodes.push_back(makeNode("MatMul", {"scores", "v3"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

TEST(FoldSplitViews, MergedProjectionsReadTheirHeadsFromTheGemm) {
  const auto run = [](const Network& net) {
    return runOnReference(
        net, {{"x", randomTensor(DataType::kFloat32, {kBatch, kSeq, 8}, 11, 0.5, 2.0)}});
  };
  Network fused;
  // The merged GEMM, three StridedCopy, three Reshapes, K's transpose, two MatMuls.
  const auto applied = fuseAndCompareOutputs(kPass, run, projectedHeads(), 10, &fused);
  EXPECT_EQ(applied.size(), 3u);
  EXPECT_EQ(countOps(fused, "Split"), 0);
  ASSERT_EQ(countOps(fused, "StridedCopy"), 3);
  const std::string gemm = fused.graph.nodes[0].outputs[0];
  for (const Node& n : fused.graph.nodes)
    if (n.opType == "StridedCopy") EXPECT_EQ(n.inputs, (std::vector<std::string>{gemm}));
}

// A StridedCopy node whose reads leave its input fails the run with an error naming it.
// VOLO's unfold as the dynamo exporter writes it: x [B, C, H, W] -> Pad 1 -> Gather(axis 2,
// windows [K, P]: k + 2 p) -> Gather(axis 4, the same) -> Transpose(0, 1, 2, 4, 3, 5) ->
// Reshape [B, heads, C / heads, K K, P P] -> Transpose(0, 1, 4, 3, 2) -> MatMul. The Gathers and
// the first Transpose become one StridedCopy of the Pad's output; a window index that does not
// step (a shuffled one) keeps the Gathers.
Network unfoldChain(bool progression) {
  constexpr int64_t kC = 4, kSide = 6, kK = 3, kP = 3, kHeadsU = 2;
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({kBatch, kC, kSide, kSide})}};
  g.initializers["pads"] = Tensor::int64Vector({0, 0, 1, 1, 0, 0, 1, 1});
  std::vector<int64_t> windows;
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t p = 0; p < kP; ++p) windows.push_back(k + 2 * p);
  if (!progression) std::swap(windows[1], windows[2]);
  Tensor idx = Tensor::int64Vector(windows);
  g.initializers["windows"] = idx.reshaped({kK, kP});
  g.initializers["heads"] = Tensor::int64Vector({kBatch, kHeadsU, kC / kHeadsU, kK * kK, kP * kP});
  g.initializers["w"] = randomTensor(DataType::kFloat32, {kC / kHeadsU, 5}, 9, 0.5, 2.0);
  g.nodes.push_back(makeNode("Pad", {"x", "pads"}, {"padded"}));
  g.nodes.push_back(withInt(makeNode("Gather", {"padded", "windows"}, {"rows"}), "axis", 2));
  g.nodes.push_back(withInt(makeNode("Gather", {"rows", "windows"}, {"cols"}), "axis", 4));
  g.nodes.push_back(
      withInts(makeNode("Transpose", {"cols"}, {"patches"}), "perm", {0, 1, 2, 4, 3, 5}));
  g.nodes.push_back(makeNode("Reshape", {"patches", "heads"}, {"split_heads"}));
  g.nodes.push_back(
      withInts(makeNode("Transpose", {"split_heads"}, {"v"}), "perm", {0, 1, 4, 3, 2}));
  g.nodes.push_back(makeNode("MatMul", {"v", "w"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

TEST(FoldSplitViews, AnUnfoldChainIsOneStridedCopy) {
  const auto run = [](const Network& net) {
    return runOnReference(
        net, {{"x", randomTensor(DataType::kFloat32, {kBatch, 4, 6, 6}, 8, 0.5, 2.0)}});
  };
  Network fused;
  // Pad + StridedCopy [B, C, K, K, P, P] + Reshape + Transpose + MatMul: the copy ends where
  // every dim still has one stride (the Reshape merges the two K and the two P, whose strides
  // do not nest), the head transpose after it reads a contiguous tensor.
  auto applied = fuseAndCompareOutputs(kPass, run, unfoldChain(true), 5, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(countOps(fused, "Gather"), 0);
  EXPECT_EQ(countOps(fused, "Transpose"), 1);
  EXPECT_EQ(countOps(fused, "StridedCopy"), 1);
  Network kept;
  const Network shuffled = unfoldChain(false);
  applied = fuseAndCompareOutputs(kPass, run, shuffled, shuffled.graph.nodes.size(), &kept);
  EXPECT_TRUE(applied.empty());
  EXPECT_EQ(countOps(kept, "Gather"), 2);
}

TEST(StridedCopyNode, ReadsPastTheInputAreRefusedInANetwork) {
  Network net;
  net.opsets[""] = 17;
  net.opsets[kKilnDomain] = 1;
  net.graph.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(6)}}};
  Node copy = makeNode("StridedCopy", {"x"}, {"y"}, 1);
  copy.domain = kKilnDomain;
  copy = withInts(withInts(copy, "shape", {3, 2}), "strides", {1, 6});
  net.graph.nodes = {withInt(copy, "offset", 4)};  // reaches 4 + 2 + 6 = 12 of 12
  net.graph.outputs = {{"y", DataType::kFloat32, false, {}}};
  const std::map<std::string, Tensor> feeds = {
      {"x", randomTensor(DataType::kFloat32, {2, 6}, 3, 0.5, 2.0)}};
  std::vector<NamedTensor> out;
  const Status refused = ReferenceBackend(net).run(feeds, &out);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.toString().find("reads element 12"), std::string::npos) << refused.toString();
  EXPECT_NE(refused.toString().find("StridedCopy"), std::string::npos) << refused.toString();
  net.graph.nodes[0] = withInt(copy, "offset", 3);  // 11 of 12: runs
  out.clear();
  const Status ran = ReferenceBackend(net).run(feeds, &out);
  ASSERT_TRUE(ran.isOk()) << ran.toString();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor.shape(), (Shape{3, 2}));
  EXPECT_EQ(out[0].tensor.data<float>()[5], feeds.at("x").data<float>()[3 + 2 + 6]);
}

}  // namespace
}  // namespace kiln::test
