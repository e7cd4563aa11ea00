// fold_scale_into_matmul: a constant scale after a GEMM with constant weights goes into
// the weights (and the bias), so the GEMM writes the scaled values itself:
//   Mul(Add(MatMul(X, W), b), c)  = Add(MatMul(X, W * c), b * c)
//   Mul(MatMul(X, W), c)          = MatMul(X, W * c)
//   Div(..., d)                   as Mul by 1 / d
// (c on either side of the Mul). c is a scalar, or one factor per output column: N
// elements with every dim but the last 1 ([N], [1, N], [1, 1, N]), W's column n and
// b[n] scaled by c[n], where the Mul's output has the GEMM output's shape (c does not
// broadcast the rank up). The exporters write the scalar for attention's query scaling
// (Whisper, BART, T5-style `q_proj(x) * scaling`) and the vector for layer scale
// (BEiT, CaiT, DINOv2: `gamma * proj(x)`); fuse_matmul_bias_activation then makes one
// FusedMatMul with the bias in its epilogue. Conditions: c a float32 constant; W a
// float32 constant [K, N] and b a float32 constant [N]; the MatMul output read by the
// Add alone (or by the Mul) and the Add output by the Mul alone. W and b get new names,
// so weights other nodes share stay as they were.
#include <algorithm>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_scale_into_matmul";

struct Match {
  int matmul = -1, add = -1, scale = -1;  // add -1 when the Mul reads the MatMul
  std::string bias;
  std::vector<double> factors;  // one (a scalar) or one per output column
};

// The factors of a Mul or Div node reading `value` (c on either side of a Mul): a scalar
// (rank <= 1: a rank-3 [1,1,1] would broadcast the rank up), or `columns` factors along
// the last axis when the node's output keeps `value`'s shape.
bool scaleOf(const Node& node, const GraphIndex& index, const Shapes& shapes,
             const std::string& value, int64_t columns, std::vector<double>* factors) {
  const bool mul = isOnnxOp(node, "Mul", 2), div = isOnnxOp(node, "Div", 2);
  if (!mul && !div) return false;
  if (div && node.inputs[0] != value) return false;
  const std::string* other = otherInput(node, value);
  if (!other || *other == value) return false;
  const Tensor* t = float32Constant(index, *other, -1);
  if (!t) return false;
  const bool scalar = t->numel() == 1 && t->rank() <= 1;
  const bool perColumn = t->numel() == columns && columns > 1 && alongLastAxis(*t) &&
                         sameShapeAndType(shapes, node.outputs[0], value);
  if (!scalar && !perColumn) return false;
  factors->clear();
  for (int64_t i = 0; i < t->numel(); ++i) {
    const double f = t->valueAsDouble(i);
    if (div && f == 0) return false;
    factors->push_back(div ? 1.0 / f : f);
  }
  return true;
}

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, Match* m) {
  const Node& mm = g.nodes[at];
  if (!isOnnxOp(mm, "MatMul", 2)) return false;
  const Tensor* w = float32Constant(index, mm.inputs[1], -1);
  if (!w || w->rank() != 2) return false;
  m->matmul = at;
  std::string value = mm.outputs[0];
  int next = index.soleReader(value);
  if (next >= 0 && isOnnxOp(g.nodes[next], "Add", 2)) {
    const std::string* b = otherInput(g.nodes[next], value);
    if (!b || !float32Constant(index, *b, w->dim(1))) return false;
    m->add = next;
    m->bias = *b;
    value = g.nodes[next].outputs[0];
    next = index.soleReader(value);
  }
  if (next < 0 || !scaleOf(g.nodes[next], index, shapes, value, w->dim(1), &m->factors))
    return false;
  m->scale = next;
  return true;
}

// t ([K, N] or [N]) with element i of its rows times factors[i % N] (or the one factor).
Tensor scaled(const Tensor& t, const std::vector<double>& factors) {
  Tensor out = t.clone();  // copies share storage: the original stays
  float* p = out.data<float>();
  const int64_t n = static_cast<int64_t>(factors.size());
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<float>(p[i] * factors[i % n]);
  return out;
}

class FoldScaleIntoMatMul final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Mul(Add(MatMul(X, W), b), c) -> Add(MatMul(X, W * c), b * c) (c a scalar or "
            "one factor per output column)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // A fold renames no value that stays, so one inference serves every match.
    const Shapes shapes = inferredShapesOrNone(network);
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      Match m;
      if (!matchAt(g, *index, shapes, static_cast<int>(at), &m)) continue;
      Node& mm = g.nodes[m.matmul];
      const std::string w = freshName(g, mm.inputs[1] + "_scaled");
      g.initializers[w] = scaled(*index->constant(mm.inputs[1]), m.factors);
      mm.inputs[1] = w;
      const int last = m.add >= 0 ? m.add : m.matmul;
      if (m.add >= 0) {
        Node& add = g.nodes[m.add];
        const std::string b = freshName(g, m.bias + "_scaled");
        g.initializers[b] = scaled(*index->constant(m.bias), m.factors);
        std::replace(add.inputs.begin(), add.inputs.end(), m.bias, b);
      }
      const Node scale = g.nodes[m.scale];
      g.nodes[last].outputs[0] = scale.outputs[0];
      std::vector<std::string> names = {g.nodes[m.matmul].displayName()};
      if (m.add >= 0) names.push_back(g.nodes[m.add].displayName());
      names.push_back(scale.displayName());
      g.nodes.erase(g.nodes.begin() + m.scale);
      applied->push_back({kName, names, ""});
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldScaleIntoMatMul() {
  return std::make_unique<FoldScaleIntoMatMul>();
}

}  // namespace kiln::passes
