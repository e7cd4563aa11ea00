#include "engine/passes/attention_graph.h"

#include <cmath>

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

Shape inputShape(const AttentionCase& c, int64_t seq) {
  return c.headSplit ? Shape{c.batch, seq, c.heads * c.headDim}
                     : Shape{c.batch, c.heads, seq, c.headDim};
}

// Q, K, V as the scores and context MatMuls read them: [B, H, S, D] and K^T [B, H, D, S].
void headTensors(const AttentionCase& c, Graph& g) {
  g.initializers["split_tail"] = int64Tensor({2}, {-1, c.headDim});
  if (!c.headSplit) {
    g.nodes.push_back(transpose("k", "kt", {0, 1, 3, 2}));
    return;
  }
  g.initializers["split_shape"] = int64Tensor({4}, {0, 0, c.heads, c.headDim});
  for (const std::string x : {"q", "k", "v"}) {
    std::string shape = "split_shape";
    if (c.computedShapes) {
      const std::string lead = leadingDims(g, x);
      shape = lead + "_split";
      g.nodes.push_back(concat({lead, "split_tail"}, shape));
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
  g.inputs = {{"q", c.type, true, dims(c, inputShape(c, c.seqQ))},
              {"k", c.type, true, dims(c, inputShape(c, c.seqK))},
              {"v", c.type, true, dims(c, inputShape(c, c.seqK))}};
  if (!c.mask.empty()) g.inputs.push_back({"mask", c.type, true, dims(c, c.mask)});
  headTensors(c, g);
  const std::string q = c.headSplit ? "qh" : "q", v = c.headSplit ? "vh" : "v";
  g.nodes.push_back(makeNode("MatMul", {q, "kt"}, {"scores"}));
  const double root = std::sqrt(static_cast<double>(c.headDim));
  g.initializers["scale"] =
      castTensor(floatTensor({}, {float(c.divide ? root : 1.0 / root)}), c.type);
  g.nodes.push_back(makeNode(c.divide ? "Div" : "Mul", {"scores", "scale"}, {"scaled"}));
  std::string logits = "scaled";
  if (!c.mask.empty()) {
    g.nodes.push_back(makeNode("Add", {"scaled", "mask"}, {"masked"}));
    logits = "masked";
  }
  g.nodes.push_back(withInt(makeNode("Softmax", {logits}, {"probs"}), "axis", -1));
  const bool merge = c.headSplit && c.mergeHeads;
  g.nodes.push_back(makeNode("MatMul", {"probs", v}, {c.headSplit ? "context" : "y"}));
  if (c.headSplit) g.nodes.push_back(transpose("context", merge ? "context_t" : "y", {0, 2, 1, 3}));
  if (merge) {
    g.initializers["merge_shape"] = int64Tensor({3}, {0, 0, c.heads * c.headDim});
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
  in["q"] =
      castTensor(randomTensor(DataType::kFloat32, inputShape(c, c.seqQ), seed, -2.0, 2.0), c.type);
  in["k"] = castTensor(randomTensor(DataType::kFloat32, inputShape(c, c.seqK), seed + 1, -2.0, 2.0),
                       c.type);
  in["v"] = castTensor(randomTensor(DataType::kFloat32, inputShape(c, c.seqK), seed + 2, -2.0, 2.0),
                       c.type);
  if (!c.mask.empty()) {
    Tensor m = randomTensor(DataType::kFloat32, c.mask, seed + 3);
    for (int64_t i = 0; i < m.numel(); ++i)
      m.data<float>()[i] = m.data<float>()[i] < -0.5f ? -1e4f : 0.f;
    in["mask"] = castTensor(m, c.type);
  }
  return in;
}

}  // namespace kiln::test
