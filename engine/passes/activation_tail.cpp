// The activation tails of FusedConv and FusedMatMul (contract: activation_tail.h).
#include "passes/activation_tail.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::passes {
namespace {

// Records a tail of `nodes` (any order) ending at `output`.
bool take(ActivationTail* tail, std::vector<int> nodes, const std::string& output,
          const char* activation, float alpha = 0.f, float beta = 0.f) {
  std::sort(nodes.begin(), nodes.end());
  tail->decomposed = nodes.size() > 1;
  tail->nodes = std::move(nodes);
  tail->output = output;
  tail->activation = activation;
  tail->alpha = alpha;
  tail->beta = beta;
  return true;
}

// Clip's bounds: attributes before opset 11, constant scalar inputs from then on.
bool clipBounds(const Node& clip, const GraphIndex& index, float* lo, float* hi) {
  *lo = -std::numeric_limits<float>::infinity();
  *hi = std::numeric_limits<float>::infinity();
  if (clip.opset < 11) {
    *lo = clip.attrFloat("min", *lo);
    *hi = clip.attrFloat("max", *hi);
    return true;
  }
  for (size_t i = 1; i < clip.inputs.size() && i < 3; ++i) {
    if (clip.inputs[i].empty()) continue;
    const Tensor* t = index.constant(clip.inputs[i]);
    if (!t || t->numel() != 1 || !isFloatingPoint(t->type())) return false;
    (i == 1 ? *lo : *hi) = static_cast<float>(t->valueAsDouble(0));
  }
  return *lo <= *hi;
}

// `value`'s two readers, the one of type `first` first; false unless there are
// exactly two nodes and one of them has that type.
bool twoReaders(const Graph& g, const GraphIndex& index, const std::string& value,
                const char* first, int* a, int* b) {
  const std::vector<int>& readers = index.readers(value);
  if (readers.size() != 2 || readers[0] < 0 || readers[1] < 0) return false;
  *a = readers[0];
  *b = readers[1];
  if (g.nodes[*a].opType != first) std::swap(*a, *b);
  return g.nodes[*a].opType == first;
}

// x * Sigmoid(x): SiLU (Swish).
bool takeSilu(const Graph& g, const GraphIndex& index, const std::string& value,
              ActivationTail* tail) {
  int sigmoid = -1, mul = -1;
  if (!twoReaders(g, index, value, "Sigmoid", &sigmoid, &mul) ||
      !isOnnxOp(g.nodes[sigmoid], "Sigmoid", 1) || !isOnnxOp(g.nodes[mul], "Mul", 2))
    return false;
  const std::string& s = g.nodes[sigmoid].outputs[0];
  const std::string* other = otherInput(g.nodes[mul], value);
  if (!other || *other != s || index.soleReader(s) != mul) return false;
  return take(tail, {sigmoid, mul}, g.nodes[mul].outputs[0], "silu");
}

// x * Clip(x + 3, 0, 6) / 6 = x * clamp(x / 6 + 0.5, 0, 1): HardSwish.
bool takeDecomposedHardSwish(const Graph& g, const GraphIndex& index, const std::string& value,
                             ActivationTail* tail) {
  int add = -1, mul = -1;
  if (!twoReaders(g, index, value, "Add", &add, &mul) || !isOnnxOp(g.nodes[add], "Add", 2) ||
      !isOnnxOp(g.nodes[mul], "Mul", 2))
    return false;
  const std::string* three = otherInput(g.nodes[add], value);
  if (!three || !isScalarConstant(index.constant(*three), 3.0)) return false;
  const int clip = index.soleReader(g.nodes[add].outputs[0]);
  float lo = 0.f, hi = 0.f;
  if (clip < 0 || g.nodes[clip].opType != "Clip" || g.nodes[clip].inputs.empty() ||
      g.nodes[clip].inputs[0] != g.nodes[add].outputs[0] || g.nodes[clip].outputs.size() != 1 ||
      !clipBounds(g.nodes[clip], index, &lo, &hi) || lo != 0.f || hi != 6.f)
    return false;
  const std::string* other = otherInput(g.nodes[mul], value);
  if (!other || *other != g.nodes[clip].outputs[0] || index.soleReader(*other) != mul) return false;
  const int div = index.soleReader(g.nodes[mul].outputs[0]);
  if (div < 0 || !isOnnxOp(g.nodes[div], "Div", 2) ||
      g.nodes[div].inputs[0] != g.nodes[mul].outputs[0] ||
      !isScalarConstant(index.constant(g.nodes[div].inputs[1]), 6.0))
    return false;
  return take(tail, {add, clip, mul, div}, g.nodes[div].outputs[0], "hard_swish");
}

// A Mul of `a` by the scalar constant `value` (either input order).
bool isMulByConstant(const Node& node, const GraphIndex& index, const std::string& a,
                     double value) {
  const std::string* other = isOnnxOp(node, "Mul", 2) ? otherInput(node, a) : nullptr;
  return other && isScalarConstant(index.constant(*other), value);
}

// e = 1 + erf(x / sqrt(2)) from x's Div: {div, erf, add}, or false.
bool erfFactor(const Graph& g, const GraphIndex& index, const std::string& x, int div,
               std::vector<int>* nodes, std::string* e) {
  const Node& d = g.nodes[div];
  if (!isOnnxOp(d, "Div", 2) || d.inputs[0] != x ||
      !isScalarConstant(index.constant(d.inputs[1]), std::sqrt(2.0)))
    return false;
  const int erf = index.soleReader(d.outputs[0]);
  if (erf < 0 || !isOnnxOp(g.nodes[erf], "Erf", 1)) return false;
  const int add = index.soleReader(g.nodes[erf].outputs[0]);
  if (add < 0 || !isOnnxOp(g.nodes[add], "Add", 2)) return false;
  const std::string* one = otherInput(g.nodes[add], g.nodes[erf].outputs[0]);
  if (!one || !isScalarConstant(index.constant(*one), 1.0)) return false;
  *nodes = {div, erf, add};
  *e = g.nodes[add].outputs[0];
  return true;
}

// x * 0.5 * (1 + erf(x / sqrt(2))): x's readers are exactly its Div and one Mul, and
// the two Muls multiply x, 0.5 and e = 1 + erf in any association:
//   (x * e) * 0.5,   (x * 0.5) * e,   x * (e * 0.5)
bool takeGeluErfChain(const Graph& g, const GraphIndex& index, const std::string& x,
                      ActivationTail* tail) {
  int div = -1, xMul = -1;
  std::vector<int> nodes;
  std::string e;
  if (!twoReaders(g, index, x, "Div", &div, &xMul) || !erfFactor(g, index, x, div, &nodes, &e))
    return false;
  const Node& first = g.nodes[xMul];
  if (!isOnnxOp(first, "Mul", 2) || !otherInput(first, x)) return false;
  const int eReader = index.soleReader(e);
  int second = -1, last = xMul;
  if (eReader == xMul) {  // (x * e) * 0.5
    second = index.soleReader(first.outputs[0]);
    if (second < 0 || !isMulByConstant(g.nodes[second], index, first.outputs[0], 0.5)) return false;
    last = second;
  } else if (isMulByConstant(first, index, x, 0.5)) {  // (x * 0.5) * e
    second = index.soleReader(first.outputs[0]);
    if (second < 0 || second != eReader || !isOnnxOp(g.nodes[second], "Mul", 2) ||
        !otherInput(g.nodes[second], e))
      return false;
    last = second;
  } else {  // x * (e * 0.5)
    second = eReader;
    if (second < 0 || !isMulByConstant(g.nodes[second], index, e, 0.5) ||
        index.soleReader(g.nodes[second].outputs[0]) != xMul ||
        *otherInput(first, x) != g.nodes[second].outputs[0])
      return false;
  }
  nodes.insert(nodes.end(), {xMul, second});
  return take(tail, nodes, g.nodes[last].outputs[0], "gelu_erf");
}

// ONNX Gelu (opset 20), or the ai.kiln alias fuse_gelu writes into older models.
bool takeGeluNode(const Node& n, int at, ActivationTail* tail) {
  const bool kilnAlias = n.domain == kKilnDomain && n.opType == "Gelu" && n.inputs.size() == 1 &&
                         n.outputs.size() == 1 && !n.outputs[0].empty();
  if (!kilnAlias && !isOnnxOp(n, "Gelu", 1)) return false;
  const std::string approximate = n.attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh") return false;
  return take(tail, {at}, n.outputs[0], approximate == "tanh" ? "gelu_tanh" : "gelu_erf");
}

// The one-node activations.
bool takeNode(const Graph& g, const GraphIndex& index, const std::string& value, int at,
              ActivationTail* tail) {
  const Node& n = g.nodes[at];
  const std::string& out = n.outputs.empty() ? value : n.outputs[0];
  if (isOnnxOp(n, "Relu", 1)) return take(tail, {at}, out, "relu");
  if (isOnnxOp(n, "Sigmoid", 1)) return take(tail, {at}, out, "sigmoid");
  if (isOnnxOp(n, "Tanh", 1)) return take(tail, {at}, out, "tanh");
  if (isOnnxOp(n, "HardSwish", 1)) return take(tail, {at}, out, "hard_swish");
  if (isOnnxOp(n, "LeakyRelu", 1))
    return take(tail, {at}, out, "leaky_relu", n.attrFloat("alpha", 0.01f));
  if (isOnnxOp(n, "HardSigmoid", 1))
    return take(tail, {at}, out, "hard_sigmoid", n.attrFloat("alpha", 0.2f),
                n.attrFloat("beta", 0.5f));
  float lo = 0.f, hi = 0.f;
  if (n.opType == "Clip" && isOnnxOp(n, "Clip", n.inputs.size()) && n.inputs.size() <= 3 &&
      n.inputs[0] == value && clipBounds(n, index, &lo, &hi))
    return lo == 0.f && std::isinf(hi) ? take(tail, {at}, out, "relu")
                                       : take(tail, {at}, out, "clip", lo, hi);
  return takeGeluNode(n, at, tail);
}

}  // namespace

bool matchActivationTail(const Graph& graph, const GraphIndex& index, const std::string& value,
                         ActivationTail* tail) {
  const int at = index.soleReader(value);
  if (at >= 0) return takeNode(graph, index, value, at, tail);
  return takeSilu(graph, index, value, tail) ||
         takeDecomposedHardSwish(graph, index, value, tail) ||
         takeGeluErfChain(graph, index, value, tail);
}

void setActivationAttributes(const ActivationTail& tail, Node* fused) {
  fused->attributes["activation"] = stringAttribute(tail.activation);
  const bool twoParams = tail.activation == "clip" || tail.activation == "hard_sigmoid";
  if (twoParams || tail.activation == "leaky_relu")
    fused->attributes["activation_alpha"] = floatAttribute(tail.alpha);
  if (twoParams) fused->attributes["activation_beta"] = floatAttribute(tail.beta);
}

}  // namespace kiln::passes
