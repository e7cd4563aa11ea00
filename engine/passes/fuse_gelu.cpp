// fuse_gelu: the pointwise GELU chains exporters write, as one Gelu node (ONNX
// opset 20 semantics; ai.kiln Gelu in models that import an older opset, see
// rewrite_helpers.h):
//   0.5 * x * (1 + erf(x / sqrt(2)))                         -> Gelu(x)
//   0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) -> Gelu(x; approximate = tanh)
// Products match in every association and operand order (product_terms.h): x / sqrt 2
// or x * (1 / sqrt 2); x^3 as Pow(x, 3), x * x * x or Mul(x, Mul(x, x)); the tanh
// argument also as sqrt(2 / pi) * x * (1 + 0.044715 * x^2); Add(1, e) either way.
// Constants are one-element float initializers or Constant nodes within relative
// 1e-5 of the exact values. Every intermediate must be read inside the chain alone;
// x is float and the output has x's shape and type. Runs before
// fuse_matmul_bias_activation, whose GEMM epilogue then takes the Gelu after a
// MatMul + bias (either form); the others (after a LayerNormalization, a residual
// Add, a Conv) stay this one node.
#include <algorithm>
#include <cmath>
#include <set>

#include "passes/fusion_passes.h"
#include "passes/product_terms.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fuse_gelu";
const double kSqrt2 = std::sqrt(2.0);
const double kSqrt2OverPi = std::sqrt(2.0 / 3.14159265358979323846);
constexpr double kCubic = 0.044715;

// `value` = 1 + F(arg) for a one-input F (Erf or Tanh) read by that Add alone;
// `value` itself read by a node of `chain` alone. Adds the Add and F; F's input in `arg`.
bool onePlus(const Graph& g, const GraphIndex& index, const std::string& value, const char* f,
             const std::set<int>& chain, std::vector<int>* nodes, int* fAt) {
  const int reader = index.soleReader(value);
  const int add = index.producer(value);
  if (reader < 0 || !chain.count(reader) || add < 0 || !isOnnxOp(g.nodes[add], "Add", 2))
    return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& t = g.nodes[add].inputs[side];
    const int fn = index.producer(t);
    if (!isNearScalar(index.constant(g.nodes[add].inputs[1 - side]), 1.0) || fn < 0 ||
        !isOnnxOp(g.nodes[fn], f, 1) || index.soleReader(t) != add)
      continue;
    nodes->insert(nodes->end(), {add, fn});
    *fAt = fn;
    return true;
  }
  return false;
}

// The Add `value` = a + b of x and the product `coefficient * x^power` (either
// order, read inside the chain alone); adds its nodes.
bool sumWithPower(const Graph& g, const GraphIndex& index, const std::string& value,
                  const std::string& x, const std::string& addend, double coefficient, int power,
                  const std::set<int>& chain, std::vector<int>* nodes) {
  const int add = index.producer(value);
  const int reader = index.soleReader(value);
  if (add < 0 || reader < 0 || !chain.count(reader) || !isOnnxOp(g.nodes[add], "Add", 2))
    return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& first = g.nodes[add].inputs[side];
    const bool firstIsAddend =
        addend.empty() ? isNearScalar(index.constant(first), 1.0) : first == addend;
    if (!firstIsAddend) continue;
    const Product q = productOf(g, index, g.nodes[add].inputs[1 - side], add);
    if (!isProduct(q, coefficient, {{x, power}})) continue;
    nodes->push_back(add);
    nodes->insert(nodes->end(), q.nodes.begin(), q.nodes.end());
    return true;
  }
  return false;
}

// e = 1 + erf(x / sqrt 2) or 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)); adds its nodes.
bool geluFactor(const Graph& g, const GraphIndex& index, const std::string& x, const std::string& e,
                const std::set<int>& chain, std::vector<int>* nodes, bool* tanhForm) {
  int f = -1;
  if (onePlus(g, index, e, "Erf", chain, nodes, &f)) {
    const Product z = productOf(g, index, g.nodes[f].inputs[0], f);
    if (!isProduct(z, 1.0 / kSqrt2, {{x, 1}})) return false;
    nodes->insert(nodes->end(), z.nodes.begin(), z.nodes.end());
    *tanhForm = false;
    return true;
  }
  if (!onePlus(g, index, e, "Tanh", chain, nodes, &f)) return false;
  const Product s = productOf(g, index, g.nodes[f].inputs[0], f);
  if (std::fabs(s.coefficient - kSqrt2OverPi) > 1e-5) return false;
  nodes->insert(nodes->end(), s.nodes.begin(), s.nodes.end());
  std::set<int> inner(s.nodes.begin(), s.nodes.end());
  *tanhForm = true;
  if (s.powers.size() == 1 && s.powers.begin()->second == 1)  // c * (x + 0.044715 x^3)
    return sumWithPower(g, index, s.powers.begin()->first, x, x, kCubic, 3, inner, nodes);
  if (s.powers.size() != 2 || s.powers.count(x) != 1 || s.powers.at(x) != 1) return false;
  for (const auto& [r, power] : s.powers)  // c * x * (1 + 0.044715 x^2)
    if (r != x) return power == 1 && sumWithPower(g, index, r, x, "", kCubic, 2, inner, nodes);
  return false;
}

std::optional<Fusion> geluAt(Graph& g, const GraphIndex& index, const Shapes& shapes, int at) {
  const Node& root = g.nodes[at];
  Product p;
  if (!isOnnxOp(root, "Mul", 2) || !flattenProduct(g, index, at, &p) ||
      std::fabs(p.coefficient - 0.5) > 1e-6 || p.powers.size() != 2)
    return std::nullopt;
  const std::set<int> chain(p.nodes.begin(), p.nodes.end());
  for (const auto& [x, power] : p.powers) {
    const std::string& e =
        p.powers.begin()->first == x ? p.powers.rbegin()->first : p.powers.begin()->first;
    std::vector<int> nodes = p.nodes;
    bool tanhForm = false;
    if (power != 1 || p.powers.at(e) != 1 || !geluFactor(g, index, x, e, chain, &nodes, &tanhForm))
      continue;
    if (!isFloatingPoint(typeOf(shapes, x)) || !sameShapeAndType(shapes, x, root.outputs[0]))
      return std::nullopt;
    std::sort(nodes.begin(), nodes.end());
    Fusion fusion;
    fusion.nodes = nodes;
    Node& gelu = fusion.fused;
    gelu.opType = "Gelu";
    placeNewerOnnxOp(&gelu, root.opset, 20);
    gelu.name = "PWN(";
    for (size_t i = 0; i < nodes.size(); ++i)
      gelu.name += (i ? ", " : "") + g.nodes[nodes[i]].displayName();
    gelu.name += ")";
    gelu.inputs = {x};
    gelu.outputs = {root.outputs[0]};
    if (tanhForm) gelu.attributes["approximate"] = stringAttribute("tanh");
    return fusion;
  }
  return std::nullopt;
}

}  // namespace

std::unique_ptr<Pass> makeFuseGelu() {
  return makeFusionPass({kName,
                         "0.5 x (1 + erf(x / sqrt 2)) -> Gelu; 0.5 x (1 + tanh(sqrt(2/pi)(x + "
                         "0.044715 x^3))) -> Gelu(tanh)",
                         1},
                        geluAt);
}

}  // namespace kiln::passes
