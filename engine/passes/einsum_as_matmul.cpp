// einsum_as_matmul: a two-input Einsum is the batched GEMM its labels describe:
//   Einsum(A, B) = Transpose(Reshape(MatMul(Reshape(Transpose(A, pa), [batch..., nm, nk]),
//                                           Reshape(Transpose(B, pb), [batch..., nk, nn])),
//                                    [batch..., m..., n...]), po)
// with the labels of A and B sorted into four kinds: batch (in both inputs and the output),
// contracted (in both inputs, not in the output), A's own (in A and the output) and B's own
// (in B and the output); nm, nk, nn the products of their sizes (1 for a kind with no
// label: an outer product has nk = 1). Batch, m and n labels keep the output's order, so po
// is the identity whenever the output lists batch, then A's, then B's labels; a Transpose or
// Reshape that changes nothing is not made. MViTv2's relative positions
// ("byhwc,hkc->byhwk") had no GPU kernel as an Einsum: every one ran on the host.
// Conditions: both shapes fully known (fixed profiles), a floating-point type, no label
// repeated within a term, a label shared by both inputs of one size in both (no size-1
// broadcast), every label of an input either in the other input or in the output (a label
// summed within one input stays an Einsum), no zero-sized dim.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ops/einsum_equation.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "einsum_as_matmul";

struct EinsumGemm {
  std::vector<int> batch, m, n, k;  // labels of each kind, in output (k: A's) order
  std::map<int, int64_t> sizes;     // label -> dim size
  std::vector<int> a, b, out;       // each term's labels
};

int64_t productOf(const EinsumGemm& e, const std::vector<int>& labels) {
  int64_t p = 1;
  for (int label : labels) p *= e.sizes.at(label);
  return p;
}

bool contains(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

bool distinct(std::vector<int> labels) {
  std::sort(labels.begin(), labels.end());
  return std::adjacent_find(labels.begin(), labels.end()) == labels.end();
}

bool matchAt(const Graph& g, const Shapes& shapes, int at, EinsumGemm* e) {
  const Node& node = g.nodes[at];
  if (!isOnnxOp(node, "Einsum", 2)) return false;
  Shape shapeA, shapeB;
  if (!staticShape(shapes, node.inputs[0], &shapeA) ||
      !staticShape(shapes, node.inputs[1], &shapeB))
    return false;
  const DataType type = typeOf(shapes, node.inputs[0]);
  if (!isStorageFloat(type) || typeOf(shapes, node.inputs[1]) != type) return false;
  ops::EinsumLabels labels;
  const std::vector<int> ranks{static_cast<int>(shapeA.size()), static_cast<int>(shapeB.size())};
  if (!ops::parseEinsumLabels(node.attrString("equation", ""), ranks, &labels).isOk()) return false;
  e->a = labels.inputs[0];
  e->b = labels.inputs[1];
  e->out = labels.output;
  if (!distinct(e->a) || !distinct(e->b)) return false;
  for (size_t i = 0; i < e->a.size(); ++i) e->sizes[e->a[i]] = shapeA[i];
  for (size_t i = 0; i < e->b.size(); ++i) {
    const auto known = e->sizes.find(e->b[i]);
    if (known != e->sizes.end() && known->second != shapeB[i]) return false;
    e->sizes[e->b[i]] = shapeB[i];
  }
  for (const auto& [label, size] : e->sizes)
    if (size <= 0) return false;
  for (int label : e->out) {
    const bool inA = contains(e->a, label), inB = contains(e->b, label);
    (inA && inB ? e->batch : inA ? e->m : e->n).push_back(label);
  }
  for (int label : e->a) {
    if (contains(e->out, label)) continue;
    if (!contains(e->b, label)) return false;  // summed within A alone
    e->k.push_back(label);
  }
  for (int label : e->b)
    if (!contains(e->out, label) && !contains(e->a, label)) return false;
  return true;
}

// The positions of `order`'s labels in `term`: Transpose(term, perm) lists them in `order`.
std::vector<int64_t> permutationTo(const std::vector<int>& term, const std::vector<int>& order) {
  std::vector<int64_t> perm;
  for (int label : order) perm.push_back(std::find(term.begin(), term.end(), label) - term.begin());
  return perm;
}

bool isIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::vector<int> concat(std::initializer_list<const std::vector<int>*> parts) {
  std::vector<int> all;
  for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
  return all;
}

std::vector<int64_t> sizesOf(const EinsumGemm& e, const std::vector<int>& labels) {
  std::vector<int64_t> dims;
  for (int label : labels) dims.push_back(e.sizes.at(label));
  return dims;
}

// The rewrite's nodes in order; the last writes the Einsum's output.
std::vector<Node> gemmNodes(Graph& g, const GraphIndex& index, int at, const EinsumGemm& e) {
  const Node& einsum = g.nodes[at];
  const std::string base = einsum.displayName();
  const std::vector<std::string> source = sourceNodesOf(g, {at});
  std::vector<Node> out;
  auto node = [&](const char* op, const std::string& suffix, std::vector<std::string> inputs) {
    out.push_back(madeNode(g, einsum, base + suffix, op, std::move(inputs), source, kName));
    return out.back().outputs[0];
  };
  // Transpose `value` (labels `term`) into `order`, then view it as `dims` when its shape
  // differs; a constant (a weight, a table gathered at constant positions) is rearranged
  // here, once, instead.
  auto arrange = [&](const std::string& value, const std::vector<int>& term,
                     const std::vector<int>& order, const std::vector<int64_t>& dims,
                     const std::string& what) {
    std::string v = value;
    const std::vector<int64_t> perm = permutationTo(term, order);
    if (const Tensor* c = index.constant(value); c && (!isIdentity(perm) || c->shape() != dims)) {
      v = freshName(g, value + "_as_matmul");
      g.initializers[v] = permutedConstant(*c, perm.size(), perm).reshaped(dims);
      return v;
    }
    if (!isIdentity(perm)) {
      v = node("Transpose", " (" + what + " order)", {v});
      out.back().attributes["perm"] = intsAttribute(perm);
    }
    if (sizesOf(e, order) != dims) {
      const std::string target = addInt64Initializer(g, base + "_" + what + "_shape", dims);
      v = node("Reshape", " (" + what + " as matrices)", {v, target});
    }
    return v;
  };
  // The batch labels stay dims of their own (MatMul's batch dims): a view only where A's,
  // B's or the contracted labels are several.
  const std::vector<int64_t> batch = sizesOf(e, e.batch);
  auto matrices = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> dims = batch;
    dims.push_back(rows);
    dims.push_back(cols);
    return dims;
  };
  const int64_t nm = productOf(e, e.m), nn = productOf(e, e.n), nk = productOf(e, e.k);
  const std::string left =
      arrange(einsum.inputs[0], e.a, concat({&e.batch, &e.m, &e.k}), matrices(nm, nk), "left");
  const std::string right =
      arrange(einsum.inputs[1], e.b, concat({&e.batch, &e.k, &e.n}), matrices(nk, nn), "right");
  std::string product = node("MatMul", " (as MatMul)", {left, right});
  const std::vector<int> produced = concat({&e.batch, &e.m, &e.n});
  const std::vector<int64_t> producedDims = sizesOf(e, produced);
  if (producedDims != matrices(nm, nn)) {
    const std::string target = addInt64Initializer(g, base + "_output_shape", producedDims);
    product = node("Reshape", " (labels)", {product, target});
  }
  const std::vector<int64_t> perm = permutationTo(produced, e.out);
  if (!isIdentity(perm)) {
    node("Transpose", " (output order)", {product});
    out.back().attributes["perm"] = intsAttribute(perm);
  }
  out.back().outputs[0] = einsum.outputs[0];
  return out;
}

class EinsumAsMatMul final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Einsum(A, B) with batch, contracted and free labels -> Transpose / Reshape of A "
            "and B to [batch, m, k] x [batch, k, n], one MatMul, Reshape / Transpose to the "
            "output's labels",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const Shapes shapes = inferredShapesOrNone(network);  // the rewrite keeps every other value
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      EinsumGemm e;
      if (!matchAt(g, shapes, static_cast<int>(at), &e)) continue;
      const std::vector<std::string> names = sourceNodesOf(g, {static_cast<int>(at)});
      const GraphIndex index(g);
      std::vector<Node> chain = gemmNodes(g, index, static_cast<int>(at), e);
      const auto gemm = std::find_if(chain.begin(), chain.end(),
                                     [](const Node& n) { return n.opType == "MatMul"; });
      applied->push_back({kName, names, gemm->name});
      g.nodes.erase(g.nodes.begin() + at);
      g.nodes.insert(g.nodes.begin() + at, chain.begin(), chain.end());
      at += chain.size() - 1;
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeEinsumAsMatMul() {
  return std::make_unique<EinsumAsMatMul>();
}

}  // namespace kiln::passes
