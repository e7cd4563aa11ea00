// fuse_matmul_bias_activation:
//   Add(MatMul(X, W), b)                      -> FusedMatMul(X, W, b)               (W [K,N], b [N]
//   constants) Relu(Add(MatMul(X, W), b))                -> FusedMatMul(X, W, b, relu)
//   GELU(Add(MatMul(X, W), b)), GELU(x) = x * 0.5 * (1 + erf(x / sqrt(2))) with the
//   two products in any association (Div, Erf, Add, Mul, Mul) -> FusedMatMul(X, W, b, gelu_erf)
// Every intermediate value must have the next node as its only reader, so nothing
// outside the chain sees a value that stops existing.
#include <algorithm>
#include <cmath>

#include "passes/fusion_passes.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fuse_matmul_bias_activation";

// A default-domain node of type `op` with one output and the inputs the pattern
// expects (one for Erf and Relu, two for the rest): the importer does not check arity.
bool isOp(const Node& node, const char* op) {
  const bool unary = std::string(op) == "Erf" || std::string(op) == "Relu";
  return isOnnxOp(node, op, unary ? 1 : 2);
}

struct Match {
  std::vector<int> nodes;  // ascending after sort
  std::string bias, output, activation = "none";
};

// A Mul of `a` by the scalar constant `value` (either input order).
bool isMulByConstant(const Node& node, const GraphIndex& index, const std::string& a,
                     double value) {
  const std::string* other = isOp(node, "Mul") ? otherInput(node, a) : nullptr;
  return other && isScalarConstant(index.constant(*other), value);
}

// The erf-form GELU reading `x`: x's readers are exactly its Div and one Mul, and
// the two Muls multiply x, 0.5 and (1 + erf) in any association:
//   (x * e) * 0.5,   (x * 0.5) * e,   x * (e * 0.5)
bool matchGelu(const Graph& g, const GraphIndex& index, const std::string& x, Match* m) {
  const std::vector<int>& readers = index.readers(x);
  if (readers.size() != 2 || readers[0] < 0 || readers[1] < 0) return false;
  int div = readers[0], xMul = readers[1];
  if (!isOp(g.nodes[div], "Div")) std::swap(div, xMul);
  const Node& d = g.nodes[div];
  if (!isOp(d, "Div") || d.inputs[0] != x ||
      !isScalarConstant(index.constant(d.inputs[1]), std::sqrt(2.0)))
    return false;
  const int erf = index.soleReader(d.outputs[0]);
  if (erf < 0 || !isOp(g.nodes[erf], "Erf")) return false;
  const int add = index.soleReader(g.nodes[erf].outputs[0]);
  if (add < 0 || !isOp(g.nodes[add], "Add")) return false;
  const std::string* one = otherInput(g.nodes[add], g.nodes[erf].outputs[0]);
  if (!one || !isScalarConstant(index.constant(*one), 1.0)) return false;
  const std::string e = g.nodes[add].outputs[0];
  const Node& first = g.nodes[xMul];
  if (!isOp(first, "Mul") || !otherInput(first, x)) return false;
  int second = -1, last = -1;
  const int eReader = index.soleReader(e);
  if (eReader == xMul) {  // (x * e) * 0.5
    second = index.soleReader(first.outputs[0]);
    if (second < 0 || !isMulByConstant(g.nodes[second], index, first.outputs[0], 0.5)) return false;
    last = second;
  } else if (isMulByConstant(first, index, x, 0.5)) {  // (x * 0.5) * e
    second = index.soleReader(first.outputs[0]);
    if (second < 0 || second != eReader || !isOp(g.nodes[second], "Mul") ||
        !otherInput(g.nodes[second], e))
      return false;
    last = second;
  } else {  // x * (e * 0.5)
    second = eReader;
    if (second < 0 || !isMulByConstant(g.nodes[second], index, e, 0.5)) return false;
    if (index.soleReader(g.nodes[second].outputs[0]) != xMul ||
        *otherInput(first, x) != g.nodes[second].outputs[0])
      return false;
    last = xMul;
  }
  m->nodes.insert(m->nodes.end(), {div, erf, add, xMul, second});
  m->output = g.nodes[last].outputs[0];
  m->activation = "gelu_erf";
  return true;
}

bool matchAt(const Graph& g, const GraphIndex& index, int at, Match* m) {
  const Node& matmul = g.nodes[at];
  if (!isOp(matmul, "MatMul") || matmul.inputs.size() != 2) return false;
  const Tensor* w = index.constant(matmul.inputs[1]);
  if (!w || w->rank() != 2 || !isFloatingPoint(w->type())) return false;
  const int addIndex = index.soleReader(matmul.outputs[0]);
  if (addIndex < 0 || !isOp(g.nodes[addIndex], "Add")) return false;
  const std::string* bias = otherInput(g.nodes[addIndex], matmul.outputs[0]);
  if (!bias) return false;
  const Tensor* b = index.constant(*bias);
  if (!b || b->rank() != 1 || b->dim(0) != w->dim(1) || b->type() != w->type()) return false;
  m->nodes = {at, addIndex};
  m->bias = *bias;
  m->output = g.nodes[addIndex].outputs[0];
  const int next = index.soleReader(m->output);
  if (next >= 0 && isOp(g.nodes[next], "Relu")) {
    m->nodes.push_back(next);
    m->output = g.nodes[next].outputs[0];
    m->activation = "relu";
  } else {
    matchGelu(g, index, m->output, m);
  }
  std::sort(m->nodes.begin(), m->nodes.end());
  return true;
}

// TensorRT-style name: "MatMul_1 + Add_2 + PWN(Div_3, Erf_4, ...)".
std::string fusedName(const Graph& g, const Match& m) {
  std::string name = g.nodes[m.nodes[0]].displayName() + " + " + g.nodes[m.nodes[1]].displayName();
  if (m.nodes.size() > 2) {
    name += " + PWN(";
    for (size_t i = 2; i < m.nodes.size(); ++i)
      name += (i > 2 ? ", " : "") + g.nodes[m.nodes[i]].displayName();
    name += ")";
  }
  return name;
}

std::optional<Fusion> fuseAt(Graph& g, const GraphIndex& index, int at) {
  Match m;
  if (!matchAt(g, index, at, &m)) return std::nullopt;
  Node fused;
  fused.name = fusedName(g, m);
  fused.opType = "FusedMatMul";
  fused.domain = kKilnDomain;
  fused.opset = 1;
  fused.inputs = {g.nodes[at].inputs[0], g.nodes[at].inputs[1], m.bias};
  fused.outputs = {m.output};
  fused.attributes["activation"] = stringAttribute(m.activation);
  return Fusion{m.nodes, std::move(fused)};
}

}  // namespace

std::unique_ptr<Pass> makeFuseMatMulBiasActivation() {
  return makeFusionPass(
      {kName,
       "MatMul(X, W) + b [-> Relu | GELU(erf)] -> one FusedMatMul (cuBLASLt bias/ReLU epilogue)",
       1},
      fuseAt);
}

}  // namespace kiln::passes
