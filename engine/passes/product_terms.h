// Products as exporters spell them, for the pattern passes (GELU, RMSNorm,
// LayerNormalization): a tree of Mul nodes with constant scalar factors, Divs by a
// constant and small integer Pows, flattened to
//   coefficient * prod(leaf ^ power)
// so every association and operand order of one product matches alike
// ((x * 0.5) * e, x * (e * 0.5), 0.5 * (x * e) all give 0.5 * x * e).
// Internal to kiln_engine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace kiln::passes {

struct Product {
  std::vector<int> nodes;             // the Mul / Div / Pow nodes it spans (unsorted)
  std::map<std::string, int> powers;  // leaf value -> exponent
  double coefficient = 1.0;
  // The relative rounding the coefficient's 16-bit constants may carry (half a unit in the
  // last place of each float16 / bfloat16 factor; 0 when every factor is float32).
  double constantRounding = 0;
};

// The product node `root` computes: a Mul, a Div by a one-element constant or a Pow
// with a constant integer exponent 2..4. An operand joins as a product itself only
// when the node consuming it is its sole reader; a one-element float constant joins
// the coefficient; anything else is a leaf. False (and `out` unspecified) when
// `root` is none of those nodes.
bool flattenProduct(const Graph& g, const GraphIndex& index, int root, Product* out);

// The product `value` is as read by node `consumer`: flattened when `consumer` is
// its sole reader and its writer is a product node, a coefficient when it is a
// one-element float constant, else the single leaf `value`.
Product productOf(const Graph& g, const GraphIndex& index, const std::string& value, int consumer);

// `p` is exactly coefficient * prod(leaf ^ power) of `powers`, coefficient within
// relative 1e-5 of `coefficient` (within the rounding of its 16-bit constants, when it has any).
bool isProduct(const Product& p, double coefficient, const std::map<std::string, int>& powers);

}  // namespace kiln::passes
