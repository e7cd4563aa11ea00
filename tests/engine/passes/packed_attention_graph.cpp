#include "engine/passes/packed_attention_graph.h"

#include <cmath>

#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

Node transpose(const std::string& in, const std::string& out, std::vector<int64_t> perm) {
  return withInts(makeNode("Transpose", {in}, {out}), "perm", std::move(perm));
}

Shape inputShape(const PackedAttentionCase& c) {
  if (c.batchFirstProjections) return {c.batch, c.seq, c.heads * c.headDim};
  const int64_t width = 3 * c.heads * c.headDim;
  return c.sequenceFirst ? Shape{c.seq, c.batch, width} : Shape{c.batch, c.seq, width};
}

// timm: Q, K, V named "q", "k", "v" ([B, H, N, D]) from "qkv".
void batchFirstSplit(const PackedAttentionCase& c, Graph& g) {
  g.initializers["qkv_shape"] = int64Tensor({5}, {0, 0, 3, c.heads, c.headDim});
  g.initializers["split_sizes"] = int64Tensor({3}, {1, 1, 1});
  g.initializers["axis0"] = int64Tensor({1}, {0});
  g.nodes.push_back(makeNode("Reshape", {"qkv", "qkv_shape"}, {"qkv5"}));
  g.nodes.push_back(transpose("qkv5", "qkv_t", {2, 0, 3, 1, 4}));
  g.nodes.push_back(
      withInt(makeNode("Split", {"qkv_t", "split_sizes"}, {"q1", "k1", "v1"}), "axis", 0));
  for (const std::string x : {"q", "k", "v"})
    g.nodes.push_back(makeNode("Squeeze", {x + "1", "axis0"}, {x}));
}

// nn.MultiheadAttention: the same from a sequence-first "qkv".
void sequenceFirstSplit(const PackedAttentionCase& c, Graph& g) {
  const int64_t e = c.heads * c.headDim;
  g.initializers["unflatten"] = int64Tensor({4}, {0, 0, 3, e});
  g.initializers["axis0"] = int64Tensor({1}, {0});
  g.initializers["axis3"] = int64Tensor({1}, {3});
  g.initializers["heads_seq"] = int64Tensor({3}, {c.seq, c.batch * c.heads, c.headDim});
  g.initializers["bhsd"] = int64Tensor({4}, {c.batch, c.heads, c.seq, c.headDim});
  g.nodes.push_back(makeNode("Reshape", {"qkv", "unflatten"}, {"qkv4"}));
  g.nodes.push_back(makeNode("Unsqueeze", {"qkv4", "axis0"}, {"qkv5"}));
  g.nodes.push_back(transpose("qkv5", "qkv_t", {3, 1, 2, 0, 4}));
  g.nodes.push_back(makeNode("Squeeze", {"qkv_t", "axis3"}, {"qkv3"}));
  int64_t i = 0;
  for (const std::string x : {"q", "k", "v"}) {
    g.initializers[x + "_index"] = int64Tensor({}, {i++});
    g.nodes.push_back(withInt(makeNode("Gather", {"qkv3", x + "_index"}, {x + "_sbe"}), "axis", 0));
    g.nodes.push_back(makeNode("Reshape", {x + "_sbe", "heads_seq"}, {x + "_s"}));
    g.nodes.push_back(transpose(x + "_s", x + "_h", {1, 0, 2}));
    g.nodes.push_back(makeNode("Reshape", {x + "_h", "bhsd"}, {x}));
  }
}

}  // namespace

Network packedAttentionNetwork(const PackedAttentionCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  SymbolicShape in;
  for (int64_t d : inputShape(c)) in.push_back(DimExpr(d));
  if (c.symbolicBatch)
    in[c.sequenceFirst && !c.batchFirstProjections ? 1 : 0] = DimExpr::symbol("batch");
  const int64_t e = c.heads * c.headDim;
  // Projection weights as nn.Linear initializes them, U(+-1/sqrt(E)): attention logits of
  // order 1, so a 16-bit rounding of Q or K moves the softmax by a rounding, not by tens of %.
  const double bound = 1.0 / std::sqrt(static_cast<double>(e));
  if (c.batchFirstProjections) {
    g.inputs = {{"x", c.type, true, in}};
    g.initializers["w_in"] =
        castTensor(randomTensor(DataType::kFloat32, {e, 3 * e}, 5, -bound, bound), c.type);
    g.initializers["b_in"] =
        castTensor(randomTensor(DataType::kFloat32, {3 * e}, 6, -bound, bound), c.type);
    g.nodes.push_back(transpose("x", "x_sbe", {1, 0, 2}));
    g.nodes.push_back(makeNode("MatMul", {"x_sbe", "w_in"}, {"qkv_mm"}));
    g.nodes.push_back(makeNode("Add", {"qkv_mm", "b_in"}, {"qkv"}));
  } else {
    g.inputs = {{"qkv", c.type, true, in}};
  }
  if (c.sequenceFirst)
    sequenceFirstSplit(c, g);
  else
    batchFirstSplit(c, g);
  g.initializers["scale"] =
      castTensor(floatTensor({}, {float(1.0 / std::sqrt(double(c.headDim)))}), c.type);
  g.nodes.push_back(transpose("k", "kt", {0, 1, 3, 2}));
  g.nodes.push_back(makeNode("MatMul", {"q", "kt"}, {"scores"}));
  g.nodes.push_back(makeNode("Mul", {"scores", "scale"}, {"scaled"}));
  g.nodes.push_back(withInt(makeNode("Softmax", {"scaled"}, {"probs"}), "axis", -1));
  g.nodes.push_back(makeNode("MatMul", {"probs", "v"}, {"context"}));
  if (c.sequenceFirst) {
    g.initializers["merge_shape"] = int64Tensor({2}, {c.seq * c.batch, e});
    g.nodes.push_back(transpose("context", "context_t", {2, 0, 1, 3}));
  } else {
    g.initializers["merge_shape"] = int64Tensor({3}, {0, 0, e});
    g.nodes.push_back(transpose("context", "context_t", {0, 2, 1, 3}));
  }
  if (c.batchFirstProjections) {
    g.initializers["w_out"] =
        castTensor(randomTensor(DataType::kFloat32, {e, e}, 7, -bound, bound), c.type);
    g.initializers["b_out"] =
        castTensor(randomTensor(DataType::kFloat32, {e}, 8, -bound, bound), c.type);
    g.initializers["sbe_shape"] = int64Tensor({3}, {c.seq, c.batch, e});
    g.nodes.push_back(makeNode("Reshape", {"context_t", "merge_shape"}, {"merged"}));
    // The out-projection as torch exports it: Gemm with transB = 1 and its bias as C.
    g.nodes.push_back(
        withInt(makeNode("Gemm", {"merged", "w_out", "b_out"}, {"out_rows"}), "transB", 1));
    g.nodes.push_back(makeNode("Reshape", {"out_rows", "sbe_shape"}, {"out_sbe"}));
    g.nodes.push_back(transpose("out_sbe", "y", {1, 0, 2}));
  } else {
    g.nodes.push_back(makeNode("Reshape", {"context_t", "merge_shape"}, {"y"}));
  }
  g.outputs = {{"y", c.type, false, {}}};
  return net;
}

std::map<std::string, Tensor> packedAttentionFeeds(const PackedAttentionCase& c, uint32_t seed) {
  return {{c.batchFirstProjections ? "x" : "qkv",
           castTensor(randomTensor(DataType::kFloat32, inputShape(c), seed, -2.0, 2.0), c.type)}};
}

Network windowAttentionNetwork(const WindowAttentionCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const SymbolicShape in = {DimExpr(c.batch()), DimExpr(c.heads), DimExpr(c.seq), DimExpr(c.dim)};
  g.inputs = {{"q", DataType::kFloat32, true, in},
              {"k", DataType::kFloat32, true, in},
              {"v", DataType::kFloat32, true, in}};
  g.initializers["c"] = floatTensor({}, {0.35f});
  g.initializers["bias"] =
      randomTensor(DataType::kFloat32, {1, c.heads, c.seq, c.seq}, 3, -1.0, 1.0);
  Tensor w(DataType::kFloat32, {1, c.windows, 1, c.seq, c.seq});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<float>()[i] = (i % 7 == 3 && (i / (c.seq * c.seq)) % 2 == 1) ? -100.f : 0.f;
  g.initializers["window_mask"] = w;
  g.initializers["split"] = int64Tensor({5}, {c.images, c.windows, c.heads, c.seq, c.seq});
  g.initializers["merge"] = int64Tensor({4}, {c.batch(), c.heads, c.seq, c.seq});
  g.nodes.push_back(makeNode("Mul", {"q", "c"}, {"qs"}));
  g.nodes.push_back(transpose("k", "kt", {0, 1, 3, 2}));
  g.nodes.push_back(makeNode("MatMul", {"qs", "kt"}, {"scores"}));
  g.nodes.push_back(makeNode("Add", {"scores", "bias"}, {"biased"}));
  g.nodes.push_back(makeNode("Reshape", {"biased", "split"}, {"per_image"}));
  g.nodes.push_back(makeNode("Add", {"per_image", "window_mask"}, {"masked"}));
  g.nodes.push_back(makeNode("Reshape", {"masked", "merge"}, {"logits"}));
  g.nodes.push_back(withInt(makeNode("Softmax", {"logits"}, {"probs"}), "axis", -1));
  g.nodes.push_back(makeNode("MatMul", {"probs", "v"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::map<std::string, Tensor> windowAttentionFeeds(const WindowAttentionCase& c, uint32_t seed) {
  const Shape s = {c.batch(), c.heads, c.seq, c.dim};
  return {{"q", randomTensor(DataType::kFloat32, s, seed, -2.0, 2.0)},
          {"k", randomTensor(DataType::kFloat32, s, seed + 1, -2.0, 2.0)},
          {"v", randomTensor(DataType::kFloat32, s, seed + 2, -2.0, 2.0)}};
}

}  // namespace kiln::test
