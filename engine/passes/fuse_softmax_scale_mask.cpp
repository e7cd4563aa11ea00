// fuse_softmax_scale_mask: attention's score normalization as one row kernel.
//   Softmax(Add(Mul(X, c), M)) -> ScaledMaskedSoftmax(X, M; scale = c)
//   Softmax(Add(Div(X, c), M)) -> ScaledMaskedSoftmax(X, M; scale = 1 / c)
//   Softmax(Mul(X, c)), Softmax(Div(X, c)) -> ScaledMaskedSoftmax(X; scale)
//   Softmax(Add(X, M))         -> ScaledMaskedSoftmax(X, M; scale = 1)
// c is a scalar float constant, the Softmax normalizes the last axis (axis -1), and
//   softmax(v)_i = exp(v_i - max_j v_j) / sum_j exp(v_j - max_j v_j),  v = X * c + M
// with X and M broadcast to the output as Add broadcasts them (Add and Mul are
// commutative, so the mask and the constant may be either input; X / c is X * (1/c)
// within one rounding). Every intermediate value must have the next node as its only
// reader; a Mul whose product is read elsewhere stays, and the Add alone fuses.
#include <algorithm>
#include <map>

#include "passes/fusion_passes.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fuse_softmax_scale_mask";

// A default-domain node of type `op` with `inputs` named inputs and one output.
bool isOp(const Node& node, const char* op, size_t inputs) {
  return isOnnxOp(node, op, inputs) &&
         std::none_of(node.inputs.begin(), node.inputs.end(),
                      [](const std::string& in) { return in.empty(); });
}

// The value of a one-element float constant.
bool scalarValue(const Tensor* t, double* value) {
  if (!t || t->numel() != 1 || !isFloatingPoint(t->type()) || dataTypeSize(t->type()) == 0)
    return false;
  *value = t->valueAsDouble(0);
  return true;
}

struct Match {
  std::vector<int> nodes;  // ascending after sort
  std::string x, mask;
  double scale = 1.0;
};

// `value` made by Mul(X, c), Mul(c, X) or Div(X, c) (c a scalar constant, not 0 for
// Div) whose only reader is node `reader`.
bool matchScale(const Graph& g, const GraphIndex& index, const std::string& value, int reader,
                Match* m) {
  const int at = index.producer(value);
  if (at < 0 || index.soleReader(value) != reader) return false;
  const Node& node = g.nodes[at];
  double c = 0.0;
  if (isOp(node, "Mul", 2)) {
    for (int k = 0; k < 2; ++k) {
      if (!scalarValue(index.constant(node.inputs[1 - k]), &c)) continue;
      m->x = node.inputs[k];
      m->scale = c;
      m->nodes.push_back(at);
      return true;
    }
    return false;
  }
  if (!isOp(node, "Div", 2) || !scalarValue(index.constant(node.inputs[1]), &c) || c == 0.0)
    return false;
  m->x = node.inputs[0];
  m->scale = 1.0 / c;
  m->nodes.push_back(at);
  return true;
}

// The Softmax's axis is the last one: -1 given or (opset 13 on) by default. Before
// opset 13 axis -1 coerces to [rows, last dim], the same rows.
bool normalizesLastAxis(const Node& softmax) {
  return softmax.attrInt("axis", softmax.opset < 13 ? 1 : -1) == -1;
}

bool matchAt(const Graph& g, const GraphIndex& index, int at, Match* m) {
  const Node& softmax = g.nodes[at];
  if (!isOp(softmax, "Softmax", 1) || !normalizesLastAxis(softmax)) return false;
  m->nodes = {at};
  const std::string& in = softmax.inputs[0];
  const int add = index.producer(in);
  if (add < 0 || index.soleReader(in) != at) return false;
  if (!isOp(g.nodes[add], "Add", 2)) return matchScale(g, index, in, at, m);
  m->nodes.push_back(add);
  const Node& a = g.nodes[add];
  for (int k = 0; k < 2; ++k) {
    if (matchScale(g, index, a.inputs[k], add, m)) {
      m->mask = a.inputs[1 - k];
      return true;
    }
  }
  m->x = a.inputs[0];  // the mask alone: X + M needs no order, Y has the broadcast shape
  m->mask = a.inputs[1];
  return true;
}

std::string fusedName(const Graph& g, const Match& m) {
  std::string name;
  for (int i : m.nodes) name += (name.empty() ? "" : " + ") + g.nodes[i].displayName();
  return name;
}

Node fusedNode(const Graph& g, const Match& m, int softmax) {
  Node fused;
  fused.name = fusedName(g, m);
  fused.opType = "ScaledMaskedSoftmax";
  fused.domain = kKilnDomain;
  fused.opset = 1;
  fused.inputs = {m.x};
  if (!m.mask.empty()) fused.inputs.push_back(m.mask);
  fused.outputs = {g.nodes[softmax].outputs[0]};
  fused.attributes["scale"] = floatAttribute(static_cast<float>(m.scale));
  fused.attributes["axis"] = intAttribute(-1);
  return fused;
}

// Matched from the Softmax back: the scale and mask nodes come before it.
std::optional<Fusion> fuseAt(Graph& g, const GraphIndex& index, int at) {
  Match m;
  if (!matchAt(g, index, at, &m)) return std::nullopt;
  std::sort(m.nodes.begin(), m.nodes.end());
  return Fusion{m.nodes, fusedNode(g, m, at)};
}

}  // namespace

bool matchSoftmaxChain(const Graph& graph, const GraphIndex& index, int at, SoftmaxChain* chain) {
  Match m;
  if (!matchAt(graph, index, at, &m)) return false;
  *chain = {m.nodes, m.x, m.mask, m.scale};
  return true;
}

std::unique_ptr<Pass> makeFuseSoftmaxScaleMask() {
  return makeFusionPass(
      {kName, "Softmax(last axis) of X * c [+ M] or X + M -> one ScaledMaskedSoftmax row kernel",
       1},
      fuseAt);
}

}  // namespace kiln::passes
