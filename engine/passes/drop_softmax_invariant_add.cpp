// drop_softmax_invariant_add: a constant added to a softmax's input that is the same along every
// axis the softmax normalizes over changes nothing: softmax(x + c) = softmax(x) (and so for
// LogSoftmax), so the Add goes and its reader reads x.
//   Add(X, C) -> [Transpose]* -> Softmax(axis)   with C constant along the softmax's axes
//   => X -> [Transpose]* -> Softmax(axis)
// C a floating-point constant of X's type, finite (a non-finite one makes NaN, which the Add must
// keep) and small enough that x + c keeps x (|c| at most 2^-12 / the type's epsilon: 2048 in
// float32, 0.25 in float16; a large constant, such as a whole row masked with -1e4, rounds x
// away and makes the row uniform, which the Add must keep too),
// broadcast to X's rank without changing it; the Transposes carry the softmax's axes back to the
// Add's (axis s after Transpose(perm) is axis perm[s] before it); every dim of C there is 1.
// Softmax from opset 13 normalizes one axis, before it every axis from `axis` on. Each value
// from the Add to the softmax is read by the next node alone and is no graph output. CaiT's
// talking heads: the bias of the Linear that mixes the heads before the softmax is one value a
// head, the same for every key (24 Adds of [B, H, N, N] scores at CaiT-XXS24). Runs before
// fold_transposes_around_linear and the GEMM fusion, which would otherwise keep the bias.
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "drop_softmax_invariant_add";

// The relative rounding of `type` (its epsilon), or 0 for a type the pass leaves alone.
double epsilonOf(DataType type) {
  switch (type) {
    case DataType::kFloat64:
      return std::ldexp(1.0, -52);
    case DataType::kFloat32:
      return std::ldexp(1.0, -23);
    case DataType::kFloat16:
      return std::ldexp(1.0, -10);
    case DataType::kBFloat16:
      return std::ldexp(1.0, -7);
    default:
      return 0.0;
  }
}

// Every element of `t` is finite and at most 2^-12 / epsilon in magnitude: adding it to a
// softmax input of t's type keeps that input's value to within 2^-12.
bool smallAndFinite(const Tensor& t) {
  const double epsilon = epsilonOf(t.type());
  if (epsilon == 0.0) return false;
  const double bound = std::ldexp(1.0, -12) / epsilon;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.valueAsDouble(i);
    if (!std::isfinite(v) || std::fabs(v) > bound) return false;
  }
  return true;
}

// The axes (of a rank-`rank` input) that `softmax` normalizes over, or none.
std::set<int64_t> softmaxAxes(const Node& softmax, int64_t rank) {
  const bool single = softmax.opset >= 13;
  int64_t axis = softmax.attrInt("axis", single ? -1 : 1);
  if (axis < -rank || axis >= rank) return {};
  if (axis < 0) axis += rank;
  std::set<int64_t> axes;
  for (int64_t a = axis; a < (single ? axis + 1 : rank); ++a) axes.insert(a);
  return axes;
}

struct Drop {
  int add = -1;
  std::string x, out, c;             // the Add's non-constant input, its output, the constant
  std::vector<std::string> sources;  // the Add, the Transposes, the softmax
};

std::optional<Drop> dropAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                           int at) {
  const Node& add = g.nodes[at];
  if (!isOnnxOp(add, "Add", 2) || add.outputs.size() != 1) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const std::string& x = add.inputs[side];
    const Tensor* c = index.constant(add.inputs[1 - side]);
    if (!c || index.constant(x) || !smallAndFinite(*c)) continue;
    const SymbolicShape* xShape = shapeOf(shapes, x);
    const SymbolicShape* outShape = shapeOf(shapes, add.outputs[0]);
    const DataType type = typeOf(shapes, x);
    if (!xShape || !outShape || *xShape != *outShape || type != c->type() ||
        c->rank() > static_cast<int64_t>(xShape->size()))
      continue;
    const int64_t rank = static_cast<int64_t>(xShape->size());
    // Follow the sole readers through Transposes to the softmax, recording the perms.
    Drop drop{at, x, add.outputs[0], add.inputs[1 - side], {add.displayName()}};
    std::vector<std::vector<int64_t>> perms;
    std::string value = add.outputs[0];
    int reader = index.soleReader(value);
    while (reader >= 0 && isOnnxOp(g.nodes[reader], "Transpose", 1)) {
      std::vector<int64_t> perm = g.nodes[reader].attrInts("perm");
      if (perm.empty())
        for (int64_t d = rank; d-- > 0;) perm.push_back(d);
      if (static_cast<int64_t>(perm.size()) != rank || !isPermutation(perm)) break;
      perms.push_back(perm);
      drop.sources.push_back(g.nodes[reader].displayName());
      value = g.nodes[reader].outputs[0];
      reader = index.soleReader(value);
    }
    if (reader < 0) continue;
    const Node& softmax = g.nodes[reader];
    if (!isOnnxOp(softmax, "Softmax", 1) && !isOnnxOp(softmax, "LogSoftmax", 1)) continue;
    std::set<int64_t> axes = softmaxAxes(softmax, rank);
    if (axes.empty()) continue;
    for (auto p = perms.rbegin(); p != perms.rend(); ++p) {
      std::set<int64_t> before;
      for (int64_t a : axes) before.insert((*p)[a]);
      axes = std::move(before);
    }
    bool invariant = true;
    const int64_t lead = rank - c->rank();  // C's dims aligned to the right
    for (int64_t a : axes) invariant = invariant && (a < lead || c->shape()[a - lead] == 1);
    if (!invariant) continue;
    drop.sources.push_back(softmax.displayName());
    return drop;
  }
  return std::nullopt;
}

class DropSoftmaxInvariantAdd final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Add(X, C) -> [Transpose]* -> Softmax with C constant along the softmax's axes -> the "
            "Add removed (softmax(x + c) = softmax(x))",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const InferredShapes shapes = inferredShapesOrNone(network);
    const GraphIndex index(g);
    std::vector<Drop> drops;
    for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n)
      if (std::optional<Drop> d = dropAt(g, index, shapes, n)) drops.push_back(std::move(*d));
    if (drops.empty()) return Status::ok();
    std::set<int> removed;
    std::set<std::string> constants;
    for (const Drop& d : drops) {
      removed.insert(d.add);
      constants.insert(d.c);
      // The Add's one reader (the first Transpose or the softmax) reads X instead.
      for (std::string& in : g.nodes[index.soleReader(d.out)].inputs)
        if (in == d.out) in = d.x;
      applied->push_back({kName, d.sources, d.sources.back()});
    }
    std::vector<Node> kept;
    for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n)
      if (!removed.count(n)) kept.push_back(std::move(g.nodes[n]));
    g.nodes = std::move(kept);
    dropUnreadInitializers(g, constants);  // a Constant node's value stays for remove_dead_nodes
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeDropSoftmaxInvariantAdd() {
  return std::make_unique<DropSoftmaxInvariantAdd>();
}

}  // namespace kiln::passes
