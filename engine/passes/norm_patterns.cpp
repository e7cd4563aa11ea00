#include "passes/norm_patterns.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "passes/product_terms.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

// A ReduceMean of `node.inputs[0]` over its last axis alone, keeping dims.
bool meanOverLastAxis(const Node& node, const GraphIndex& index, const Shapes& shapes) {
  if (!isOnnxOpType(node, "ReduceMean") || node.outputs.size() != 1 || !node.hasInput(0) ||
      node.attrInt("keepdims", 1) != 1)
    return false;
  const SymbolicShape* s = shapeOf(shapes, node.inputs[0]);
  if (!s || s->empty()) return false;
  std::vector<int64_t> axes;
  if (node.opset < 18) {
    axes = node.attrInts("axes");
  } else if (!node.hasInput(1) || !constantInts(index.constant(node.inputs[1]), &axes)) {
    return false;
  }
  const int64_t rank = static_cast<int64_t>(s->size());
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// a = ReduceMean(u^2) + eps with every step read by the next alone and a read by
// `consumer` alone; adds the nodes and sets the epsilon.
bool meanSquarePlusEps(const Graph& g, const GraphIndex& index, const Shapes& shapes,
                       const std::string& a, int consumer, const std::string& u,
                       NormalizationMatch* m) {
  const int add = index.producer(a);
  if (add < 0 || index.soleReader(a) != consumer || !isOnnxOp(g.nodes[add], "Add", 2)) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& v = g.nodes[add].inputs[side];
    const int mean = index.producer(v);
    double eps = 0;
    if (!scalarValue(index.constant(g.nodes[add].inputs[1 - side]), &eps) || eps < 0 || mean < 0 ||
        index.soleReader(v) != add || !meanOverLastAxis(g.nodes[mean], index, shapes))
      continue;
    const Product square = productOf(g, index, g.nodes[mean].inputs[0], mean);
    if (!isProduct(square, 1.0, {{u, 2}})) continue;
    m->nodes.insert(m->nodes.end(), {add, mean});
    m->nodes.insert(m->nodes.end(), square.nodes.begin(), square.nodes.end());
    m->epsilon = eps;
    return true;
  }
  return false;
}

// s = Sqrt(a) read by `consumer` alone, a = mean square + eps.
bool rootOfMeanSquare(const Graph& g, const GraphIndex& index, const Shapes& shapes,
                      const std::string& s, int consumer, const std::string& u,
                      NormalizationMatch* m) {
  const int sqrt = index.producer(s);
  if (sqrt < 0 || index.soleReader(s) != consumer || !isOnnxOp(g.nodes[sqrt], "Sqrt", 1) ||
      !meanSquarePlusEps(g, index, shapes, g.nodes[sqrt].inputs[0], sqrt, u, m))
    return false;
  m->nodes.push_back(sqrt);
  return true;
}

// Node `at` writes 1 / sqrt(mean(u^2) + eps) (Reciprocal(Sqrt), Div(1, Sqrt), Pow(a, -0.5)).
bool inverseRoot(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at,
                 const std::string& u, NormalizationMatch* m) {
  const Node& n = g.nodes[at];
  bool ok = false;
  if (isOnnxOp(n, "Reciprocal", 1)) {
    ok = rootOfMeanSquare(g, index, shapes, n.inputs[0], at, u, m);
  } else if (isOnnxOp(n, "Div", 2) && isNearScalar(index.constant(n.inputs[0]), 1.0)) {
    ok = rootOfMeanSquare(g, index, shapes, n.inputs[1], at, u, m);
  } else if (isOnnxOp(n, "Pow", 2) && isNearScalar(index.constant(n.inputs[1]), -0.5)) {
    ok = meanSquarePlusEps(g, index, shapes, n.inputs[0], at, u, m);
  }
  if (ok) m->nodes.push_back(at);
  return ok;
}

// u * r [* gamma] with its last node at `at` (a Mul, or a Div(u, Sqrt) without gamma).
bool matchScaled(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at,
                 NormalizationMatch* m) {
  const Node& root = g.nodes[at];
  m->output = root.outputs.empty() ? "" : root.outputs[0];
  if (isOnnxOp(root, "Div", 2) && !index.constant(root.inputs[1])) {
    m->x = root.inputs[0];
    m->nodes = {at};
    return rootOfMeanSquare(g, index, shapes, root.inputs[1], at, m->x, m);
  }
  Product p;
  if (!isOnnxOp(root, "Mul", 2) || !flattenProduct(g, index, at, &p) ||
      std::fabs(p.coefficient - 1.0) > 1e-6)
    return false;
  std::vector<std::string> leaves;
  for (const auto& [leaf, power] : p.powers) {
    if (power != 1) return false;
    leaves.push_back(leaf);
  }
  if (leaves.size() < 2 || leaves.size() > 3) return false;
  const std::set<int> product(p.nodes.begin(), p.nodes.end());
  for (const std::string& f : leaves) {
    const int writer = index.producer(f);
    if (writer < 0 || !product.count(index.soleReader(f))) continue;
    std::vector<std::string> rest;
    for (const std::string& l : leaves)
      if (l != f) rest.push_back(l);
    const Node& w = g.nodes[writer];
    if (isOnnxOp(w, "Div", 2) && !index.constant(w.inputs[1]) && rest.size() == 1) {
      NormalizationMatch trial = *m;  // (u / sqrt) * gamma
      trial.x = w.inputs[0];
      trial.scale = rest[0];
      trial.nodes = p.nodes;
      trial.nodes.push_back(writer);
      if (rootOfMeanSquare(g, index, shapes, w.inputs[1], writer, trial.x, &trial)) {
        *m = trial;
        return true;
      }
    }
    for (size_t i = 0; i < rest.size(); ++i) {  // u * r [* gamma], u either leaf
      NormalizationMatch trial = *m;
      trial.x = rest[i];
      trial.scale = rest.size() == 2 ? rest[1 - i] : "";
      trial.nodes = p.nodes;
      if (inverseRoot(g, index, shapes, writer, trial.x, &trial)) {
        *m = trial;
        return true;
      }
    }
  }
  return false;
}

// u = x - ReduceMean(x) read inside the pattern alone: the pattern is x's LayerNorm.
void findCentering(const Graph& g, const GraphIndex& index, const Shapes& shapes,
                   NormalizationMatch* m) {
  const int sub = index.producer(m->x);
  if (sub < 0 || !isOnnxOp(g.nodes[sub], "Sub", 2)) return;
  const std::string& x = g.nodes[sub].inputs[0];
  const int mean = index.producer(g.nodes[sub].inputs[1]);
  if (mean < 0 || g.nodes[mean].inputs.empty() || g.nodes[mean].inputs[0] != x ||
      index.soleReader(g.nodes[sub].inputs[1]) != sub ||
      !meanOverLastAxis(g.nodes[mean], index, shapes))
    return;
  const std::set<int> inside(m->nodes.begin(), m->nodes.end());
  if (!readOnlyBy(index, m->x, inside)) return;
  m->nodes.insert(m->nodes.end(), {sub, mean});
  m->x = x;
  m->centered = true;
}

// gamma or beta: [n] of x's type, n x's last dim.
bool isRowVector(const Shapes& shapes, const std::string& value, const std::string& x) {
  const SymbolicShape* v = shapeOf(shapes, value);
  const SymbolicShape* s = shapeOf(shapes, x);
  return v && s && v->size() == 1 && !s->empty() && (*v)[0] == s->back() &&
         typeOf(shapes, value) == typeOf(shapes, x);
}

bool matchRaw(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at,
              NormalizationMatch* m) {
  const Node& root = g.nodes[at];
  bool ok = false;
  if (isOnnxOp(root, "Add", 2)) {
    for (int side = 0; side < 2 && !ok; ++side) {  // y + beta
      const std::string& y = root.inputs[side];
      const int yAt = index.producer(y);
      *m = NormalizationMatch();
      if (yAt < 0 || index.soleReader(y) != at || !matchScaled(g, index, shapes, yAt, m)) continue;
      m->bias = root.inputs[1 - side];
      m->nodes.push_back(at);
      m->output = root.outputs[0];
      ok = true;
    }
  } else {
    ok = matchScaled(g, index, shapes, at, m);
  }
  if (!ok) return false;
  findCentering(g, index, shapes, m);
  std::sort(m->nodes.begin(), m->nodes.end());
  m->nodes.erase(std::unique(m->nodes.begin(), m->nodes.end()), m->nodes.end());
  if (!isFloatingPoint(typeOf(shapes, m->x)) || !sameShapeAndType(shapes, m->x, m->output))
    return false;
  for (const std::string* v : {&m->scale, &m->bias})
    if (!v->empty() && !isRowVector(shapes, *v, m->x)) return false;
  return true;
}

}  // namespace

bool matchNormalization(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at,
                        const NormalizationFilter& accept, NormalizationMatch* m) {
  if (!matchRaw(g, index, shapes, at, m) || !accept(*m)) return false;
  const int next = index.soleReader(m->output);
  NormalizationMatch larger;
  return next < 0 || !matchRaw(g, index, shapes, next, &larger) || !accept(larger) ||
         !std::binary_search(larger.nodes.begin(), larger.nodes.end(), at);
}

std::string scaleOrOnes(Graph& g, const Shapes& shapes, const NormalizationMatch& m) {
  if (!m.scale.empty()) return m.scale;
  Shape s;
  if (typeOf(shapes, m.x) != DataType::kFloat32 || !staticShape(shapes, m.x, &s) || s.empty())
    return "";
  const std::string name = freshName(g, m.output + "_unit_scale");
  Tensor ones(DataType::kFloat32, {s.back()});
  std::fill(ones.data<float>(), ones.data<float>() + s.back(), 1.f);
  g.initializers[name] = std::move(ones);
  return name;
}

}  // namespace kiln::passes
