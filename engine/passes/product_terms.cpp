#include "passes/product_terms.h"

#include <cmath>

#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using rewrite::scalarValue;

bool expandNode(const Graph& g, const GraphIndex& index, int at, Product* p);

// Operand `value` of product node `consumer`.
void addTerm(const Graph& g, const GraphIndex& index, const std::string& value, int consumer,
             Product* p) {
  double c = 0;
  if (scalarValue(index.constant(value), &c)) {
    p->coefficient *= c;
    p->constantRounding += rewrite::halfUlpOf(index.constant(value));
    return;
  }
  const int writer = index.producer(value);
  if (writer >= 0 && index.soleReader(value) == consumer && expandNode(g, index, writer, p)) return;
  p->powers[value] += 1;
}

// Adds node `at`'s product to `p`; false (and `p` untouched) when it is no product node.
bool expandNode(const Graph& g, const GraphIndex& index, int at, Product* p) {
  const Node& n = g.nodes[at];
  if (isOnnxOp(n, "Mul", 2)) {
    p->nodes.push_back(at);
    addTerm(g, index, n.inputs[0], at, p);
    addTerm(g, index, n.inputs[1], at, p);
    return true;
  }
  double c = 0;
  if (isOnnxOp(n, "Div", 2)) {
    if (!scalarValue(index.constant(n.inputs[1]), &c) || c == 0.0) return false;
    p->nodes.push_back(at);
    p->coefficient /= c;
    p->constantRounding += rewrite::halfUlpOf(index.constant(n.inputs[1]));
    addTerm(g, index, n.inputs[0], at, p);
    return true;
  }
  if (isOnnxOp(n, "Pow", 2)) {
    if (!scalarValue(index.constant(n.inputs[1]), &c) || c != std::round(c) || c < 2 || c > 4)
      return false;
    p->nodes.push_back(at);
    p->powers[n.inputs[0]] += static_cast<int>(c);  // the base is a leaf
    return true;
  }
  return false;
}

}  // namespace

bool flattenProduct(const Graph& g, const GraphIndex& index, int root, Product* out) {
  *out = Product();
  return expandNode(g, index, root, out);
}

Product productOf(const Graph& g, const GraphIndex& index, const std::string& value, int consumer) {
  Product p;
  addTerm(g, index, value, consumer, &p);
  return p;
}

bool isProduct(const Product& p, double coefficient, const std::map<std::string, int>& powers) {
  if (p.powers != powers) return false;
  const double error = std::fabs(p.coefficient - coefficient);
  if (p.constantRounding > 0) return error <= p.constantRounding * std::fabs(coefficient);
  return error <= 1e-5 * std::max(1.0, std::fabs(coefficient));
}

}  // namespace kiln::passes
