// fuse_attention: the BERT attention block (head split, scores, scale, mask, softmax,
// context, head merge) becomes one ai.kiln FusedAttention whose inputs are the head
// split's Reshape outputs; graphs run with and without the pass on the CPU reference give
// the same outputs, and what must not fuse stays as it was.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <limits>
#include <set>

#include "engine/passes/attention_graph.h"
#include "engine/passes/pass_test_support.h"
#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fuse_attention";

// Runs the level-1 pipeline (minus `disabled`) on a copy of `original` and compares
// its outputs with the unfused graph's on two seeds of `c`'s inputs; returns this
// pass's records.
std::vector<PassApplication> fuseAndCompare(const Network& original, const AttentionCase& c,
                                            size_t expectedNodes, Network* fusedOut = nullptr,
                                            const std::vector<std::string>& disabled = {}) {
  Network fused = original;
  std::vector<PassApplication> applied;
  Status s = runPasses(fused, 1, disabled, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_EQ(fused.graph.nodes.size(), expectedNodes);
  for (uint32_t seed : {1u, 7u}) {
    const auto feeds = attentionFeeds(c, seed);
    const auto expected = runOnReference(original, feeds);
    const auto actual = runOnReference(fused, feeds);
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size() && i < expected.size(); ++i)
      expectTensorNear(actual[i].tensor, expected[i].tensor, 1e-5, 1e-5);
  }
  std::vector<PassApplication> mine;
  for (const PassApplication& a : applied)
    if (a.pass == kPass) mine.push_back(a);
  if (fusedOut) *fusedOut = std::move(fused);
  return mine;
}

std::vector<PassApplication> fuseAndCompare(const AttentionCase& c, size_t expectedNodes,
                                            Network* fusedOut = nullptr,
                                            const std::vector<std::string>& disabled = {}) {
  return fuseAndCompare(attentionNetwork(c), c, expectedNodes, fusedOut, disabled);
}

// `net` without its scale node: its reader reads the scores directly.
Network withoutScale(Network net) {
  auto& nodes = net.graph.nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name != "scaled") continue;
    nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  for (Node& n : nodes)
    for (std::string& in : n.inputs)
      if (in == "scaled") in = "scores";
  return net;
}

const Node* fusedAttention(const Network& net) {
  for (const Node& n : net.graph.nodes)
    if (n.opType == "FusedAttention" && n.domain == kKilnDomain) return &n;
  return nullptr;
}

TEST(FuseAttention, BertBlockIsOneLayerOverTheReshapeOutputs) {
  AttentionCase c;  // [2, 37, 3, 16], Div by 4, K^T by two transposes, [B, 1, 1, S] mask
  c.mask = {2, 1, 1, 37};
  Network fused;
  auto applied = fuseAndCompare(c, 4, &fused);  // three head-split Reshapes + the layer
  ASSERT_EQ(applied.size(), 1u);
  const std::vector<std::string> sources = {
      "qh", "kh", "kt", "vh", "scores", "scaled", "masked", "probs", "context", "context_t", "y"};
  EXPECT_EQ(applied[0].nodes, sources);
  EXPECT_EQ(applied[0].layer,
            "qh + kh + kt + vh + scores + scaled + masked + probs + context + context_t + y");
  const Node* node = fusedAttention(fused);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->inputs, (std::vector<std::string>{"q4", "k4", "v4", "mask"}));
  EXPECT_EQ(node->outputs, std::vector<std::string>{"y"});
  EXPECT_FLOAT_EQ(node->attrFloat("scale", 0.f), 0.25f);
  EXPECT_EQ(node->attrInt("num_heads", 0), 3);
  EXPECT_EQ(node->attrString("qkv_layout", ""), "BSHD");
  EXPECT_EQ(node->attrString("output_layout", ""), "BSHD");
  EXPECT_EQ(node->attrInt("merge_heads", 0), 1);
  EXPECT_EQ(node->attrStrings(kSourceNodesAttribute), sources);
  EXPECT_EQ(node->attrString(kFusionPassAttribute, ""), kPass);
  auto shapes = inferShapes(fused);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_EQ(symbolicShapeToString(shapes->values.at("y").shape), "2x37x48");
}

TEST(FuseAttention, ShapesAcrossTheTileBoundaries) {
  // Sequence lengths below, at, and across the CUDA kernel's 64-row tiles; head sizes
  // of 8, 64 and 96; a symbolic batch (the exported models' dynamic axis).
  for (auto [b, s, h, d] : {std::tuple{1, 5, 4, 8}, std::tuple{2, 64, 2, 64},
                            std::tuple{1, 70, 2, 96}, std::tuple{3, 13, 1, 32}}) {
    AttentionCase c;
    c.batch = b;
    c.seqQ = c.seqK = s;
    c.heads = h;
    c.headDim = d;
    c.mask = {c.batch, 1, 1, c.seqK};
    c.symbolicBatch = (s == 13);
    SCOPED_TRACE(std::to_string(s) + " x " + std::to_string(d));
    EXPECT_EQ(fuseAndCompare(c, 4).size(), 1u);
  }
}

TEST(FuseAttention, ComputedShapesWithADynamicBatch) {
  // transformers 5's export: the split is Reshape(x, Concat(Shape(x)[0:2], [-1, D])), the
  // merge Reshape(ctx, Concat(Shape(q)[0:2], [-1])): heads and the merged width come out
  // of symbolic shape inference as numbers, so the block fuses; the merge's Concat is
  // left unread and removed (3 x Shape, Slice, Concat + 3 Reshapes + the layer).
  AttentionCase c;
  c.symbolicBatch = true;
  c.computedShapes = true;
  c.mask = {2, 1, 1, 37};
  Network fused;
  ASSERT_EQ(fuseAndCompare(c, 13, &fused).size(), 1u);
  EXPECT_EQ(fusedAttention(fused)->attrInt("merge_heads", 0), 1);
  auto shapes = inferShapes(fused);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_EQ(symbolicShapeToString(shapes->values.at("y").shape), "batchx37x48");
}

TEST(FuseAttention, MulScaleWithoutMaskAndOneKeyTranspose) {
  AttentionCase c;
  c.divide = false;
  c.splitKeyTranspose = false;
  Network fused;
  auto applied = fuseAndCompare(c, 4, &fused);
  ASSERT_EQ(applied.size(), 1u);
  const Node* node = fusedAttention(fused);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->inputs.size(), 3u);
  EXPECT_FLOAT_EQ(node->attrFloat("scale", 0.f), 0.25f);
}

TEST(FuseAttention, MaskShapesThatBroadcast) {
  // Per-query masks [B, 1, S, S] (transformers 5's Where output), per head [B, H, S, S],
  // one for all [S, S], and the key padding without its batch [1, 1, S].
  for (const Shape& mask :
       {Shape{2, 1, 37, 37}, Shape{2, 3, 37, 37}, Shape{37, 37}, Shape{1, 1, 37}}) {
    SCOPED_TRACE(shapeToString(mask));
    AttentionCase c;
    c.mask = mask;
    EXPECT_EQ(fuseAndCompare(c, 4).size(), 1u);
  }
}

TEST(FuseAttention, CrossAttentionWithOtherKeyLength) {
  AttentionCase c;
  c.seqQ = 9;
  c.seqK = 41;
  c.mask = {2, 1, 1, 41};
  EXPECT_EQ(fuseAndCompare(c, 4).size(), 1u);
}

TEST(FuseAttention, RawSoftmaxChainWhenTheSoftmaxPassIsDisabled) {
  AttentionCase c;
  c.mask = {2, 1, 1, 37};
  Network fused;
  auto applied = fuseAndCompare(c, 4, &fused, {"fuse_softmax_scale_mask"});
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes.size(), 11u);
  // No scale at all: Softmax(Add(S, M)) with and without the softmax pass (scale 1,
  // the scores as either input of the Add), and a bare Softmax(S).
  for (bool softmaxPass : {true, false}) {
    Network unscaled = withoutScale(attentionNetwork(c));
    for (Node& n : unscaled.graph.nodes)
      if (n.name == "masked" && !softmaxPass) std::swap(n.inputs[0], n.inputs[1]);
    const std::vector<std::string> off = {softmaxPass ? "" : "fuse_softmax_scale_mask"};
    ASSERT_EQ(fuseAndCompare(unscaled, c, 4, &fused, softmaxPass ? std::vector<std::string>{} : off)
                  .size(),
              1u);
    EXPECT_FLOAT_EQ(fusedAttention(fused)->attrFloat("scale", 0.f), 1.f);
    EXPECT_EQ(fusedAttention(fused)->inputs[3], "mask");
  }
  AttentionCase bare;
  ASSERT_EQ(fuseAndCompare(withoutScale(attentionNetwork(bare)), bare, 4, &fused,
                           {"fuse_softmax_scale_mask"})
                .size(),
            1u);
  EXPECT_EQ(fusedAttention(fused)->inputs.size(), 3u);
}

TEST(FuseAttention, WithoutHeadTransposesTheLayoutIsBhsd) {
  AttentionCase c;
  c.headSplit = false;  // Q, K, V [2, 3, 37, 16]; Transpose(K, (0,1,3,2)); Y [2, 3, 37, 16]
  c.mask = {2, 1, 1, 37};
  Network fused;
  auto applied = fuseAndCompare(c, 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  const Node* node = fusedAttention(fused);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->inputs, (std::vector<std::string>{"q", "k", "v", "mask"}));
  EXPECT_EQ(node->attrString("qkv_layout", ""), "BHSD");
  EXPECT_EQ(node->attrString("output_layout", ""), "BHSD");
  EXPECT_EQ(node->attrInt("merge_heads", 1), 0);
}

TEST(FuseAttention, HeadTransposeWithoutTheMergeReshape) {
  AttentionCase c;
  c.mergeHeads = false;  // Y = Transpose(context) [2, 37, 3, 16]
  Network fused;
  ASSERT_EQ(fuseAndCompare(c, 4, &fused).size(), 1u);
  EXPECT_EQ(fusedAttention(fused)->attrString("output_layout", ""), "BSHD");
  EXPECT_EQ(fusedAttention(fused)->attrInt("merge_heads", 1), 0);
  // A Reshape to something else than [B, S, H * D] stays a Reshape after the layer.
  Network other = attentionNetwork(AttentionCase{});
  other.graph.initializers["merge_shape"] = int64Tensor({3}, {0, -1, 8});
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(other, 1, {}, &applied).isOk());
  ASSERT_NE(fusedAttention(other), nullptr);
  EXPECT_EQ(fusedAttention(other)->outputs, std::vector<std::string>{"context_t"});
  EXPECT_EQ(other.graph.nodes.back().opType, "Reshape");
}

TEST(FuseAttention, SharedIntermediatesOrOperandsThatDoNotFitDoNotFuse) {
  AttentionCase c;
  c.mask = {2, 1, 1, 37};
  // The scores are also a graph output: the softmax still fuses, attention does not.
  Network scoresOut = attentionNetwork(c);
  scoresOut.graph.outputs.push_back({"scores", DataType::kFloat32, false, {}});
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(scoresOut, 1, {}, &applied).isOk());
  EXPECT_EQ(fusedAttention(scoresOut), nullptr);
  // V's head transpose made an identity while Q and K keep theirs: the three are then read as
  // BHSD (mixed layouts), and V, still [B, S, H, D], has S (37) where the heads (3) belong.
  Network mixed = attentionNetwork(c);
  for (Node& n : mixed.graph.nodes)
    if (n.name == "vh") n.attributes["perm"].ints = {0, 1, 2, 3};
  ASSERT_TRUE(runPasses(mixed, 1, {}, &applied).isOk());
  EXPECT_EQ(fusedAttention(mixed), nullptr);
  // A mask that widens the scores (more heads than Q has) is not an attention mask.
  AttentionCase wide = c;
  wide.mask = {2, 6, 37, 37};
  Network widened = attentionNetwork(wide);
  ASSERT_TRUE(runPasses(widened, 1, {}, &applied).isOk());
  EXPECT_EQ(fusedAttention(widened), nullptr);
}

// LLaMA through the dynamo exporter: Q and K are computed after their head transposes (the
// rotary embedding; here a Mul by a per-feature table, which no scale fold takes) while V
// keeps its plain head split. The three are read as BHSD; V's head transpose stays outside
// the fused node (a later pass may fold it into strides).
TEST(FuseAttention, RotaryQueryAndKeyBesideAPlainValueFuseAsBhsd) {
  AttentionCase c;
  c.mask = {2, 1, 1, 37};
  Network net = attentionNetwork(c);
  Graph& g = net.graph;
  g.initializers["rot"] = randomTensor(DataType::kFloat32, {1, 1, 1, 16}, 9, 0.5, 1.5);
  for (Node& n : g.nodes)
    for (std::string& in : n.inputs) {
      if (n.name == "kt" && in == "kh") in = "kh_rot";
      if (n.opType == "MatMul" && in == "qh") in = "qh_rot";
    }
  // Each Mul right after the head transpose it reads (topological order).
  std::vector<Node> ordered;
  for (const Node& n : g.nodes) {
    ordered.push_back(n);
    if (n.outputs[0] == "qh" || n.outputs[0] == "kh")
      ordered.push_back(makeNode("Mul", {n.outputs[0], "rot"}, {n.outputs[0] + "_rot"}));
  }
  g.nodes = ordered;
  Network fused;
  const auto applied = fuseAndCompare(net, c, 7, &fused);
  ASSERT_EQ(applied.size(), 1u);
  const Node* attention = fusedAttention(fused);
  ASSERT_NE(attention, nullptr);
  EXPECT_NE(attention->attrString("qkv_layout", ""), "BSHD");
  // Left: Q's and K's head splits and their Muls; V's split is read through strides.
  std::multiset<std::string> left;
  for (const Node& n : fused.graph.nodes) left.insert(n.opType);
  EXPECT_EQ(left, (std::multiset<std::string>{"Reshape", "Reshape", "Transpose", "Transpose", "Mul",
                                              "Mul", "FusedAttention"}));
}

// GQA through the dynamo exporter: K is repeat_kv's Expand, [B, Hkv, H / Hkv, S, D], and
// K^T merges it straight into [B * H, S, D], transposes (0,2,1) and splits back to
// [B, H, D, S]: no Transpose folds (the ranks differ). The layer reads K's elements as a
// contiguous [B, H, S, D] and Q, V likewise (STRIDED views).
TEST(FuseAttention, KeyTransposedThroughAMergedReshapeReadsAView) {
  AttentionCase c;  // for the feeds' q, v and mask: B 2, H 4, S 37, D 16
  c.heads = 4;
  c.headSplit = false;
  c.mask = {2, 1, 1, 37};
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  auto dims = [](std::initializer_list<int64_t> d) {
    std::vector<DimExpr> out;
    for (int64_t x : d) out.push_back(DimExpr(x));
    return out;
  };
  g.inputs = {{"q", DataType::kFloat32, true, dims({2, 4, 37, 16})},
              {"k", DataType::kFloat32, true, dims({2, 2, 2, 37, 16})},
              {"v", DataType::kFloat32, true, dims({2, 4, 37, 16})},
              {"mask", DataType::kFloat32, true, dims({2, 1, 1, 37})}};
  g.initializers["merged"] = int64Tensor({3}, {8, 37, 16});
  g.initializers["split"] = int64Tensor({4}, {2, 4, 16, 37});
  g.initializers["scale"] = floatTensor({}, {4.f});
  g.nodes = {makeNode("Reshape", {"k", "merged"}, {"km"}),
             withInts(makeNode("Transpose", {"km"}, {"kmt"}), "perm", {0, 2, 1}),
             makeNode("Reshape", {"kmt", "split"}, {"kt"}),
             makeNode("MatMul", {"q", "kt"}, {"scores"}),
             makeNode("Div", {"scores", "scale"}, {"scaled"}),
             makeNode("Add", {"scaled", "mask"}, {"logits"}),
             withInt(makeNode("Softmax", {"logits"}, {"probs"}), "axis", -1),
             makeNode("MatMul", {"probs", "v"}, {"y"})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  std::map<std::string, Tensor> feeds = attentionFeeds(c, 3);
  feeds["k"] = randomTensor(DataType::kFloat32, {2, 2, 2, 37, 16}, 4, -2.0, 2.0);
  Network fused = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  ASSERT_EQ(fused.graph.nodes.size(), 1u);
  const Node* attention = fusedAttention(fused);
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->attrString("qkv_layout", ""), "STRIDED");
  EXPECT_EQ(attention->inputs[1], "k");
  EXPECT_EQ(attention->attrInts("k_view"),
            (std::vector<int64_t>{0, 2, 4, 37, 16, 4 * 37 * 16, 37 * 16, 16}));
  const auto expected = runOnReference(net, feeds);
  const auto actual = runOnReference(fused, feeds);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
}

TEST(FuseAttention, DisabledByNameAndListed) {
  Network net = attentionNetwork(AttentionCase{});
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 1, {kPass}, &applied).isOk());
  EXPECT_EQ(fusedAttention(net), nullptr);
  bool listed = false;
  for (const PassInfo& info : listPasses()) listed = listed || info.name == kPass;
  EXPECT_TRUE(listed);
}

TEST(FuseAttention, TinyBertAttentionIsOneLayer) {
  auto imported = importOnnxFile(std::string(KILN_TEST_DATA_DIR) + "/builder/tiny_bert.onnx");
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  Network fused = imported.value();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  int attention = 0;
  for (const PassApplication& a : applied) attention += a.pass == kPass;
  EXPECT_EQ(attention, 1);
  const Node* node = fusedAttention(fused);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->attrInt("num_heads", 0), 2);
  EXPECT_EQ(node->attrInt("merge_heads", 0), 1);
  const Tensor ids = randomInputTensor(DataType::kInt64, {3, 20}, 4);
  std::vector<NamedTensor> a, b;
  ASSERT_TRUE(ReferenceBackend(imported.value()).run({{"input_ids", ids}}, &a).isOk());
  ASSERT_TRUE(ReferenceBackend(fused).run({{"input_ids", ids}}, &b).isOk());
  expectTensorNear(b[0].tensor, a[0].tensor, 1e-5, 1e-4);
}

// PyTorch's SDPA export (transformers' default attention): sqrt(scale) on Qh and on
// K^T, a boolean mask made additive by Where, the softmax guarded by
// Where(IsNaN(P), 0, P). One layer, both scales folded, nan_to_zero set.
TEST(FuseAttention, SdpaExportScalesBothSidesAndGuardsTheSoftmax) {
  AttentionCase c;
  c.sdpaExport = true;
  c.mask = {2, 1, 1, 37};
  Network fused;
  // Three head-split Reshapes, the mask's Where and the layer.
  auto applied = fuseAndCompare(c, 5, &fused);
  ASSERT_EQ(applied.size(), 1u);
  const Node* node = fusedAttention(fused);
  ASSERT_NE(node, nullptr);
  EXPECT_NEAR(node->attrFloat("scale", 0.f), 0.25f, 1e-6f);  // (1 / sqrt(sqrt(16)))^2
  EXPECT_EQ(node->attrInt("nan_to_zero", 0), 1);
  EXPECT_EQ(node->inputs, (std::vector<std::string>{"q4", "k4", "v4", "mask"}));
}

// A query row whose every key is masked: the guarded unfused graph gives 0 there (the
// plain Softmax would give NaN), and so must the fused layer; other rows are non-zero.
TEST(FuseAttention, SdpaFullyMaskedRowGivesZero) {
  AttentionCase c;
  c.sdpaExport = true;
  c.mask = {2, 1, 37, 37};
  const Network original = attentionNetwork(c);
  Network fused = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  ASSERT_NE(fusedAttention(fused), nullptr);
  auto feeds = attentionFeeds(c, 5);
  Tensor& keep = feeds["mask_bool"];
  for (int64_t j = 0; j < 37; ++j)
    keep.data<uint8_t>()[37 * 37 + 4 * 37 + j] = 0;  // batch 1, row 4
  const auto expected = runOnReference(original, feeds);
  const auto actual = runOnReference(fused, feeds);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
  const Tensor& y = actual[0].tensor;  // [2, 37, 3 * 16]
  const int64_t row = 37 * 48 + 4 * 48;
  double rowAbs = 0.0, otherAbs = 0.0;
  for (int64_t d = 0; d < 48; ++d) {
    rowAbs += std::fabs(y.data<float>()[row + d]);
    otherAbs += std::fabs(y.data<float>()[row + 48 + d]);
  }
  EXPECT_EQ(rowAbs, 0.0);
  EXPECT_GT(otherAbs, 0.0);
}

// LeViT: head size 16 for Q and K, 32 for V, an attention bias [H, N, N] added to the
// scaled scores. One layer over the Reshape outputs, V's head size its own.
TEST(FuseAttention, ValueHeadSizeDiffersWithAnAttentionBias) {
  AttentionCase c;
  c.valueDim = 32;
  c.divide = false;
  c.mask = {3, 37, 37};
  Network fused;
  auto applied = fuseAndCompare(c, 4, &fused);
  ASSERT_EQ(applied.size(), 1u);
  const Node* node = fusedAttention(fused);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->attrInt("merge_heads", 0), 1);
}

// The build target refuses the layer: the match stays unfused, the outputs are the
// original graph's, and the refusal names the pass, the nodes and the reason.
TEST(FuseAttention, ATargetThatRefusesKeepsTheMatchUnfused) {
  AttentionCase c;
  c.mask = {2, 1, 1, 37};
  const Network original = attentionNetwork(c);
  std::vector<std::string> refusals;
  std::vector<Shape> seenShapes;
  const FusionTarget target{[&](const Node& fused, const std::vector<DataType>& types,
                                const std::vector<Shape>& shapes) -> std::string {
                              if (fused.opType != "FusedAttention") return "";
                              EXPECT_EQ(types.size(), 4u);
                              seenShapes = shapes;
                              return "head size 16 is not for this target";
                            },
                            &refusals};
  Network fused = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied, false, false, &target).isOk());
  EXPECT_EQ(fusedAttention(fused), nullptr);
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_NE(refusals[0].find("fuse_attention: kept '"), std::string::npos) << refusals[0];
  EXPECT_NE(refusals[0].find("head size 16 is not for this target"), std::string::npos);
  ASSERT_EQ(seenShapes.size(), 4u);
  EXPECT_EQ(seenShapes[0], (Shape{2, 37, 3, 16}));  // Q4 in BSHD, as inferred
  for (PassApplication& a : applied) EXPECT_NE(a.pass, kPass);
  const auto feeds = attentionFeeds(c, 2);
  expectTensorNear(runOnReference(fused, feeds)[0].tensor,
                   runOnReference(original, feeds)[0].tensor, 1e-5, 1e-5);
}

// The reference kernel against attention worked out by hand: one head, two keys.
TEST(FusedAttentionOp, MatchesTheFormulaAndRefusesBadShapes) {
  // Q [1, 1, 1, 2] (BSHD), K rows (1, 0) and (0, 1), V rows (1, 2) and (3, 4), mask (0, -1).
  auto run = [](int64_t heads, const Tensor& k) {
    return OpTest("FusedAttention", 1, kKilnDomain)
        .attr("scale", 0.5f)
        .attr("num_heads", heads)
        .input(floatTensor({1, 1, 1, 2}, {2.f, 4.f}))
        .input(k)
        .input(floatTensor({1, 2, 1, 2}, {1.f, 2.f, 3.f, 4.f}))
        .input(floatTensor({1, 1, 1, 2}, {0.f, -1.f}))
        .run();
  };
  auto out = run(1, floatTensor({1, 2, 1, 2}, {1.f, 0.f, 0.f, 1.f}));
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  // Logits 0.5 * (2, 4) + (0, -1) = (1, 1): equal weights, Y = (2, 3).
  expectTensorNear(out.value()[0], floatTensor({1, 1, 1, 2}, {2.f, 3.f}), 1e-6, 1e-6);
  auto heads = run(2, floatTensor({1, 2, 1, 2}, {1.f, 0.f, 0.f, 1.f}));
  ASSERT_FALSE(heads.isOk());
  EXPECT_NE(heads.status().message().find("num_heads = 2"), std::string::npos)
      << heads.status().message();
  auto dim = run(1, floatTensor({1, 2, 1, 1}, {1.f, 0.f}));
  ASSERT_FALSE(dim.isOk());
  EXPECT_NE(dim.status().message().find("head size"), std::string::npos) << dim.status().message();
}

TEST(FusedAttentionOp, HalfStorageRoundsOnlyTheOutput) {
  AttentionCase c;
  c.mask = {2, 1, 1, 37};
  Network fused = attentionNetwork(c);
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  ASSERT_NE(fusedAttention(fused), nullptr);
  AttentionCase half = c;
  half.type = DataType::kFloat16;
  Network fusedHalf = attentionNetwork(half);
  ASSERT_TRUE(runPasses(fusedHalf, 1, {}, &applied).isOk());
  ASSERT_NE(fusedAttention(fusedHalf), nullptr);
  // The float16 inputs, widened, through the float32 layer: the half layer differs by
  // the output's rounding alone (|y| <= 2, half's step there is 2^-10).
  auto feeds = attentionFeeds(half, 3);
  std::map<std::string, Tensor> wide;
  for (const auto& [name, t] : feeds) wide[name] = castTensor(t, DataType::kFloat32);
  const auto expected = runOnReference(fused, wide);
  const auto actual = runOnReference(fusedHalf, feeds);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(castTensor(actual[0].tensor, DataType::kFloat32), expected[0].tensor, 1e-3,
                   1e-3);
}

}  // namespace
}  // namespace kiln::test
