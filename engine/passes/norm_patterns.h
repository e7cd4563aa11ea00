// Decomposed normalizations over the last axis, as exporters write them, for
// fuse_layer_norm and fuse_rms_norm:
//   v   = ReduceMean(u^2)       u^2 as Pow(u, 2) or u * u; axes = [-1] (or rank - 1), keepdims
//   r   = 1 / sqrt(v + eps)     eps a one-element constant; Div(u, Sqrt(a)), u *
//   Reciprocal(Sqrt(a)),
//                               u * Div(1, Sqrt(a)) or u * Pow(a, -0.5), a = v + eps
//   y   = u * r [* gamma] [+ beta]    products in any association (product_terms.h)
// centered (LayerNormalization of x) when u = x - ReduceMean(x) over the same axis and
// u is read inside the pattern alone; root mean square (RMSNormalization of u)
// otherwise. Every intermediate is read inside the pattern alone; gamma and beta
// are [n] values of x's type with n x's last dim; y has x's shape and type.
// Internal to kiln_engine.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "passes/rewrite_helpers.h"

namespace kiln::passes {

struct NormalizationMatch {
  bool centered = false;
  std::string x, scale, bias;  // scale, bias: "" when the pattern has none
  double epsilon = 0.0;
  std::vector<int> nodes;  // ascending; the last one writes `output`
  std::string output;
};

using NormalizationFilter = std::function<bool(const NormalizationMatch&)>;

// The normalization whose last node is `at`, when `accept` takes it and no larger
// one that `accept` also takes (the node reading its output alone adding gamma or
// beta) contains it: the larger one is matched at its own last node.
bool matchNormalization(const Graph& g, const GraphIndex& index, const rewrite::Shapes& shapes,
                        int at, const NormalizationFilter& accept, NormalizationMatch* m);

// `m.scale`, or when the pattern has none a new ones initializer [n] (float32 x with a
// static last dim n); "" when neither exists.
std::string scaleOrOnes(Graph& g, const rewrite::Shapes& shapes, const NormalizationMatch& m);

}  // namespace kiln::passes
