#include "engine/passes/attention_graph.h"

#include <cmath>
#include <limits>

#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

Node transpose(const std::string& in, const std::string& out, std::vector<int64_t> perm) {
  return withInts(makeNode("Transpose", {in}, {out}), "perm", std::move(perm));
}

Node concat(std::vector<std::string> in, const std::string& out) {
  return withInt(makeNode("Concat", std::move(in), {out}), "axis", 0);
}

// Shape(x)[0:2] as transformers' input_shape: adds the nodes, returns the value.
std::string leadingDims(Graph& g, const std::string& x) {
  g.initializers["zero"] = int64Tensor({1}, {0});
  g.initializers["two"] = int64Tensor({1}, {2});
  g.nodes.push_back(makeNode("Shape", {x}, {x + "_shape"}));
  g.nodes.push_back(makeNode("Slice", {x + "_shape", "zero", "two"}, {x + "_lead"}));
  return x + "_lead";
}

SymbolicShape dims(const AttentionCase& c, const Shape& shape) {
  SymbolicShape out;
  for (int64_t d : shape) out.push_back(DimExpr(d));
  if (c.symbolicBatch) out[0] = DimExpr::symbol("batch");
  return out;
}

// Q's or K's shape (head size D), or V's with `dim` = Dv.
Shape inputShape(const AttentionCase& c, int64_t seq, int64_t dim) {
  return c.headSplit ? Shape{c.batch, seq, c.heads * dim} : Shape{c.batch, c.heads, seq, dim};
}

// Q, K, V as the scores and context MatMuls read them: [B, H, S, D] and K^T [B, H, D, S].
void headTensors(const AttentionCase& c, Graph& g) {
  g.initializers["split_tail"] = int64Tensor({2}, {-1, c.headDim});
  g.initializers["v_split_tail"] = int64Tensor({2}, {-1, c.vDim()});
  if (!c.headSplit) {
    g.nodes.push_back(transpose("k", "kt", {0, 1, 3, 2}));
    return;
  }
  g.initializers["split_shape"] = int64Tensor({4}, {0, 0, c.heads, c.headDim});
  g.initializers["v_split_shape"] = int64Tensor({4}, {0, 0, c.heads, c.vDim()});
  for (const std::string x : {"q", "k", "v"}) {
    const std::string prefix = x == "v" ? "v_" : "";
    std::string shape = prefix + "split_shape";
    if (c.computedShapes) {
      const std::string lead = leadingDims(g, x);
      shape = lead + "_split";
      g.nodes.push_back(concat({lead, prefix + "split_tail"}, shape));
    }
    g.nodes.push_back(makeNode("Reshape", {x, shape}, {x + "4"}));
  }
  g.nodes.push_back(transpose("q4", "qh", {0, 2, 1, 3}));
  if (c.splitKeyTranspose) {
    g.nodes.push_back(transpose("k4", "kh", {0, 2, 1, 3}));
    g.nodes.push_back(transpose("kh", "kt", {0, 1, 3, 2}));
  } else {
    g.nodes.push_back(transpose("k4", "kt", {0, 2, 3, 1}));
  }
  g.nodes.push_back(transpose("v4", "vh", {0, 2, 1, 3}));
}

}  // namespace

Network attentionNetwork(const AttentionCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"q", c.type, true, dims(c, inputShape(c, c.seqQ, c.headDim))},
              {"k", c.type, true, dims(c, inputShape(c, c.seqK, c.headDim))},
              {"v", c.type, true, dims(c, inputShape(c, c.seqK, c.vDim()))}};
  if (!c.mask.empty())
    g.inputs.push_back(c.sdpaExport ? ValueInfo{"mask_bool", DataType::kBool, true, dims(c, c.mask)}
                                    : ValueInfo{"mask", c.type, true, dims(c, c.mask)});
  headTensors(c, g);
  std::string q = c.headSplit ? "qh" : "q", kt = "kt";
  const std::string v = c.headSplit ? "vh" : "v";
  const double root = std::sqrt(static_cast<double>(c.headDim));
  if (c.sdpaExport) {  // sqrt(1 / sqrt(D)) on each side of the product
    g.initializers["half_scale"] =
        castTensor(floatTensor({}, {float(1.0 / std::sqrt(root))}), c.type);
    g.nodes.push_back(makeNode("Mul", {q, "half_scale"}, {"q_scaled"}));
    g.nodes.push_back(makeNode("Mul", {kt, "half_scale"}, {"kt_scaled"}));
    q = "q_scaled";
    kt = "kt_scaled";
  }
  g.nodes.push_back(makeNode("MatMul", {q, kt}, {"scores"}));
  std::string logits = "scores";
  if (!c.sdpaExport) {
    g.initializers["scale"] =
        castTensor(floatTensor({}, {float(c.divide ? root : 1.0 / root)}), c.type);
    g.nodes.push_back(makeNode(c.divide ? "Div" : "Mul", {"scores", "scale"}, {"scaled"}));
    logits = "scaled";
  }
  if (!c.mask.empty()) {
    if (c.sdpaExport) {
      g.initializers["zero_f"] = castTensor(floatTensor({}, {0.f}), c.type);
      g.initializers["minus_inf"] =
          castTensor(floatTensor({}, {-std::numeric_limits<float>::infinity()}), c.type);
      g.nodes.push_back(makeNode("Where", {"mask_bool", "zero_f", "minus_inf"}, {"mask"}));
    }
    g.nodes.push_back(makeNode("Add", {logits, "mask"}, {"masked"}));
    logits = "masked";
  }
  g.nodes.push_back(
      withInt(makeNode("Softmax", {logits}, {c.sdpaExport ? "probs_raw" : "probs"}), "axis", -1));
  if (c.sdpaExport) {
    g.initializers["zero_p"] = castTensor(floatTensor({}, {0.f}), c.type);
    g.nodes.push_back(makeNode("IsNaN", {"probs_raw"}, {"probs_nan"}));
    g.nodes.push_back(makeNode("Where", {"probs_nan", "zero_p", "probs_raw"}, {"probs"}));
  }
  const bool merge = c.headSplit && c.mergeHeads;
  g.nodes.push_back(makeNode("MatMul", {"probs", v}, {c.headSplit ? "context" : "y"}));
  if (c.headSplit) g.nodes.push_back(transpose("context", merge ? "context_t" : "y", {0, 2, 1, 3}));
  if (merge) {
    g.initializers["merge_shape"] = int64Tensor({3}, {0, 0, c.heads * c.vDim()});
    g.initializers["merge_tail"] = int64Tensor({1}, {-1});
    if (c.computedShapes) g.nodes.push_back(concat({"q_lead", "merge_tail"}, "merge_dyn"));
    g.nodes.push_back(
        makeNode("Reshape", {"context_t", c.computedShapes ? "merge_dyn" : "merge_shape"}, {"y"}));
  }
  g.outputs = {{"y", c.type, false, {}}};
  return net;
}

std::map<std::string, Tensor> attentionFeeds(const AttentionCase& c, uint32_t seed) {
  std::map<std::string, Tensor> in;
  auto random = [&](int64_t seq, int64_t dim, uint32_t s) {
    return castTensor(randomTensor(DataType::kFloat32, inputShape(c, seq, dim), s, -2.0, 2.0),
                      c.type);
  };
  in["q"] = random(c.seqQ, c.headDim, seed);
  in["k"] = random(c.seqK, c.headDim, seed + 1);
  in["v"] = random(c.seqK, c.vDim(), seed + 2);
  if (!c.mask.empty() && c.sdpaExport) {
    const Tensor m = randomTensor(DataType::kFloat32, c.mask, seed + 3);
    Tensor keep(DataType::kBool, c.mask);
    for (int64_t i = 0; i < m.numel(); ++i) keep.data<uint8_t>()[i] = m.data<float>()[i] >= -0.5f;
    in["mask_bool"] = keep;
  } else if (!c.mask.empty()) {
    Tensor m = randomTensor(DataType::kFloat32, c.mask, seed + 3);
    for (int64_t i = 0; i < m.numel(); ++i)
      m.data<float>()[i] = m.data<float>()[i] < -0.5f ? -1e4f : 0.f;
    in["mask"] = castTensor(m, c.type);
  }
  return in;
}

}  // namespace kiln::test
