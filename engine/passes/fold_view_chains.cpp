// fold_view_chains: a chain of Transposes and reshapes moves each element at most once.
// A chain x -> v1 -> ... -> y of Transpose, Reshape, Flatten, Squeeze and Unsqueeze nodes
// (each value in it read by the next node alone) is a permutation of x's elements; it
// becomes at most Reshape -> Transpose -> Reshape, and a single Reshape when the
// permutation moves nothing. The chain is rewritten when that leaves fewer Transposes,
// unless its one Transpose would gather single elements where the chain's own Transposes
// each moved runs or tiles (see movesSingleElements): SegFormer's tokens -> image ->
// patches chain, merged into one 5-D permutation, ran 2.6% slower on an H200 than its two.
// Two cases the layouts make:
//  - tokens turned into an image (`x.transpose(1, 2).reshape(B, C, H, W)`) and
//    reformatted to NHWC by channels_last_layout, and back: the tokens' own bytes, one
//    Reshape (SegFormer's Mix-FFN and spatial-reduction convolutions, LeViT, PVT);
//  - a channel shuffle (`view(B, g, C/g, H, W).transpose(1, 2).view(B, C, H, W)`) between
//    two reformats: one Transpose of the innermost axis's two factors instead of three
//    whole-tensor copies (ShuffleNet).
// How: every axis along the chain is a sequence of factors of x's axes ("atoms", each a
// run of consecutive memory in x). A Transpose reorders the axes; a reshape regroups the
// atoms read in memory order, splitting an atom where a new axis boundary falls inside it
// (its outer part first, in every list it appears in). At the end the output's atoms, read
// in memory order, are a permutation of x's; runs of atoms adjacent in both orders merge.
// A view read by several view chains (a stage's output, viewed back to tokens by a decoder
// and reformatted to NHWC by the next stage) is copied once per reader first when the
// chains, each with its own copy, then keep fewer Transposes than before.
// A symbolic dim is one atom that cannot split; at most one dim of each new Reshape's
// shape may be symbolic (its -1). Runs after channels_last_layout and
// merge_layout_transposes, which make and join the reformats it meets.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_view_chains";
constexpr size_t kMaxTransposeRank = 8;  // the GPU transpose kernels' rank limit
using Perm = std::vector<int64_t>;
using Axes = std::vector<std::vector<int>>;  // per axis, its atoms in memory order

bool isReshapeLike(const Node& node) {
  return isDefaultDomain(node) && !node.inputs.empty() && node.outputs.size() == 1 &&
         (node.opType == "Reshape" || node.opType == "Flatten" || node.opType == "Squeeze" ||
          node.opType == "Unsqueeze");
}

bool isTranspose(const Node& node) {
  return isOnnxOp(node, "Transpose", 1) && node.outputs.size() == 1;
}

bool transposePerm(const Node& node, size_t rank, Perm* perm) {
  if (node.hasAttr("perm")) {
    *perm = node.attrInts("perm");
  } else {
    perm->clear();
    for (int64_t i = static_cast<int64_t>(rank) - 1; i >= 0; --i) perm->push_back(i);
  }
  return perm->size() == rank && isPermutation(*perm);
}

bool isOne(const DimExpr& d) {
  return d.isConst() && d.constValue() == 1;
}

// The atoms of x and of the chain's current value; splitting an atom updates both.
class Atoms {
 public:
  explicit Atoms(const SymbolicShape& x) {
    for (const DimExpr& d : x) {
      m_x.push_back({});
      if (d.isConst() && d.constValue() < 1) m_valid = false;  // an empty tensor
      if (isOne(d)) continue;
      m_x.back().push_back(add(d));
    }
    m_current = m_x;
  }

  bool valid() const { return m_valid; }

  void transpose(const Perm& perm) {
    Axes out;
    for (int64_t a : perm) out.push_back(m_current[a]);
    m_current = std::move(out);
  }

  // Regroups the current atoms into `shape`'s axes; false where that needs a split of a
  // symbolic atom or a size that does not divide.
  bool reshape(const SymbolicShape& shape) {
    std::vector<int> flat = flattened(m_current);
    Axes out;
    size_t k = 0;
    for (const DimExpr& d : shape) {
      out.push_back({});
      if (isOne(d)) continue;
      if (k == flat.size()) return false;
      if (!d.isConst() || !m_size[flat[k]].isConst()) {  // a symbolic dim: one whole atom
        if (!(m_size[flat[k]] == d)) return false;
        out.back().push_back(flat[k++]);
        continue;
      }
      int64_t need = d.constValue();
      while (need > 1) {
        if (k == flat.size() || !m_size[flat[k]].isConst()) return false;
        const int64_t s = m_size[flat[k]].constValue();
        if (s <= need) {
          if (need % s != 0) return false;
          out.back().push_back(flat[k++]);
          need /= s;
        } else {
          if (s % need != 0) return false;
          split(flat[k], need, &out);
          flat = flattened(m_current);  // the split atom is two now: [outer, inner]
          out.back().push_back(flat[k++]);
          need = 1;
        }
      }
    }
    if (k != flat.size()) return false;
    m_current = std::move(out);
    return true;
  }

  const Axes& x() const { return m_x; }
  const Axes& current() const { return m_current; }
  const DimExpr& size(int atom) const { return m_size[atom]; }

  static std::vector<int> flattened(const Axes& axes) {
    std::vector<int> out;
    for (const auto& a : axes) out.insert(out.end(), a.begin(), a.end());
    return out;
  }

 private:
  int add(const DimExpr& size) {
    m_size.push_back(size);
    return static_cast<int>(m_size.size()) - 1;
  }

  // Atom `atom` of size s becomes [outer (size `outer`), inner (s / outer)] wherever it
  // appears: in x, in the current value, and in the axes `done` already built.
  void split(int atom, int64_t outer, Axes* done) {
    const int64_t s = m_size[atom].constValue();
    const int a = add(DimExpr(outer)), b = add(DimExpr(s / outer));
    for (Axes* axes : {&m_x, &m_current, done})
      for (auto& axis : *axes) {
        auto it = std::find(axis.begin(), axis.end(), atom);
        if (it == axis.end()) continue;
        it = axis.erase(it);
        axis.insert(it, {a, b});
      }
  }

  std::vector<DimExpr> m_size;
  Axes m_x, m_current;
  bool m_valid = true;
};

// The chain of view nodes that starts at `at` (none when a view node writes its input and
// it reads that node's output alone: the chain starts there).
std::vector<int> chainFrom(const Graph& g, const GraphIndex& index, int at) {
  auto isView = [&](int n) { return isTranspose(g.nodes[n]) || isReshapeLike(g.nodes[n]); };
  if (!isView(at)) return {};
  const int before = index.producer(g.nodes[at].inputs[0]);
  if (before >= 0 && isView(before) && index.soleReader(g.nodes[at].inputs[0]) == at) return {};
  std::vector<int> chain = {at};
  for (;;) {
    const Node& last = g.nodes[chain.back()];
    const int next = index.soleReader(last.outputs[0]);
    if (next < 0 || !isView(next) || g.nodes[next].inputs[0] != last.outputs[0]) break;
    chain.push_back(next);
  }
  return chain;
}

// True when a GPU moves the elements of a Transpose of `sizes` by `perm` one at a time.
// data_movement.cpp drops unit axes and merges axes adjacent in both orders; what is left
// moves as whole runs when the innermost axis stays innermost, as shared-memory tiles
// when it is a batched 2-D transpose ([B, R, C] -> [B, C, R]), and otherwise as a strided
// gather of single elements.
bool movesSingleElements(const std::vector<DimExpr>& sizes, const Perm& perm) {
  std::vector<int> kept(sizes.size(), -1);  // each input axis's index among the non-unit ones
  int next = 0;
  for (size_t a = 0; a < sizes.size(); ++a)
    if (!isOne(sizes[a])) kept[a] = next++;
  std::vector<int> order;  // the non-unit axes in the output's order
  for (int64_t a : perm)
    if (kept[a] >= 0) order.push_back(kept[a]);
  std::vector<int> groupStarts;  // runs of axes adjacent in both orders, their first axis
  for (size_t i = 0; i < order.size(); ++i)
    if (i == 0 || order[i] != order[i - 1] + 1) groupStarts.push_back(order[i]);
  const int rank = static_cast<int>(groupStarts.size());
  std::vector<int> sorted = groupStarts;
  std::sort(sorted.begin(), sorted.end());
  Perm groups;  // the merged permutation
  for (int start : groupStarts)
    groups.push_back(std::lower_bound(sorted.begin(), sorted.end(), start) - sorted.begin());
  if (rank <= 2 || groups.back() == rank - 1) return false;
  return !(rank == 3 && groups == Perm{0, 2, 1});
}

// True when some Transpose of `chain` moves single elements (movesSingleElements).
bool chainMovesSingleElements(const Graph& g, const Shapes& shapes, const std::vector<int>& chain) {
  for (int n : chain) {
    const Node& node = g.nodes[n];
    const SymbolicShape* in = shapeOf(shapes, node.inputs[0]);
    Perm perm;
    if (!isTranspose(node) || !in || !transposePerm(node, in->size(), &perm)) continue;
    if (movesSingleElements(std::vector<DimExpr>(in->begin(), in->end()), perm)) return true;
  }
  return false;
}

// A Reshape target: constant dims, -1 for the one symbolic dim (false for two).
bool reshapeTarget(const std::vector<DimExpr>& dims, std::vector<int64_t>* out) {
  int symbolic = 0;
  out->clear();
  for (const DimExpr& d : dims) {
    symbolic += !d.isConst();
    out->push_back(d.isConst() ? d.constValue() : -1);
  }
  return symbolic <= 1;
}

bool sameDims(const std::vector<DimExpr>& a, const SymbolicShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

// What the chain becomes: the merged atoms' sizes in x's memory order and the permutation
// that reads them in the output's order (empty: no Transpose left).
struct Plan {
  std::vector<DimExpr> sizes;
  Perm perm;
};

std::optional<Plan> planChain(const Graph& g, const Shapes& shapes, const std::vector<int>& chain) {
  const SymbolicShape* x = shapeOf(shapes, g.nodes[chain.front()].inputs[0]);
  if (!x) return std::nullopt;
  Atoms atoms(*x);
  if (!atoms.valid()) return std::nullopt;
  for (int n : chain) {
    const Node& node = g.nodes[n];
    const SymbolicShape* in = shapeOf(shapes, node.inputs[0]);
    const SymbolicShape* out = shapeOf(shapes, node.outputs[0]);
    if (!in || !out) return std::nullopt;
    if (isTranspose(node)) {
      Perm p;
      if (!transposePerm(node, in->size(), &p)) return std::nullopt;
      atoms.transpose(p);
    } else if (!atoms.reshape(*out)) {
      return std::nullopt;
    }
  }
  const std::vector<int> xs = Atoms::flattened(atoms.x());
  const std::vector<int> ys = Atoms::flattened(atoms.current());
  if (xs.empty()) return Plan{};  // every dim 1: nothing moves
  // Runs of the output's atoms that are consecutive in x as well merge into one.
  std::vector<int> position(*std::max_element(xs.begin(), xs.end()) + 1, -1);
  for (size_t i = 0; i < xs.size(); ++i) position[xs[i]] = static_cast<int>(i);
  std::vector<std::vector<int>> runs;  // in the output's order, each a run of x positions
  for (int atom : ys) {
    const int p = position[atom];
    if (!runs.empty() && runs.back().back() + 1 == p)
      runs.back().push_back(p);
    else
      runs.push_back({p});
  }
  // The runs in x's order give the reshaped input; the output reads them in runs' order.
  std::vector<int> order(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return runs[a][0] < runs[b][0]; });
  Plan plan;
  std::vector<int> rank(runs.size());  // each run's axis in the reshaped input
  for (size_t i = 0; i < order.size(); ++i) {
    rank[order[i]] = static_cast<int>(i);
    DimExpr size(1);
    for (int p : runs[order[i]]) size = size * atoms.size(xs[p]);
    plan.sizes.push_back(size);
  }
  bool identity = true;
  for (size_t i = 0; i < runs.size(); ++i) {
    plan.perm.push_back(rank[i]);
    identity = identity && rank[i] == static_cast<int>(i);
  }
  if (identity) plan.perm.clear();
  if (plan.sizes.size() > kMaxTransposeRank && !plan.perm.empty()) return std::nullopt;
  return plan;
}

int transposesIn(const Graph& g, const std::vector<int>& chain) {
  int count = 0;
  for (int n : chain) count += isTranspose(g.nodes[n]);
  return count;
}

// The plan `chain` folds into when folding pays: fewer Transposes left, none gathering single
// elements where the chain's own moved runs or tiles, and Reshapes rewrite can write (at
// most one symbolic dim each). Nothing otherwise.
std::optional<Plan> profitablePlan(const Graph& g, const Shapes& shapes,
                                   const std::vector<int>& chain) {
  std::optional<Plan> plan = planChain(g, shapes, chain);
  if (!plan) return std::nullopt;
  const bool transposeLeft = !plan->perm.empty();
  if ((transposeLeft ? 1 : 0) >= transposesIn(g, chain)) return std::nullopt;
  if (transposeLeft && movesSingleElements(plan->sizes, plan->perm) &&
      !chainMovesSingleElements(g, shapes, chain))
    return std::nullopt;
  std::vector<int64_t> target;
  const SymbolicShape* y = shapeOf(shapes, g.nodes[chain.back()].outputs[0]);
  if (!y || !reshapeTarget(std::vector<DimExpr>(y->begin(), y->end()), &target) ||
      (transposeLeft && !reshapeTarget(plan->sizes, &target)))
    return std::nullopt;
  return plan;
}

// The Transposes `chain` keeps once folded (its own count when it does not fold).
int transposesAfterFold(const Graph& g, const Shapes& shapes, const std::vector<int>& chain) {
  const std::optional<Plan> plan = profitablePlan(g, shapes, chain);
  if (!plan) return transposesIn(g, chain);
  return plan->perm.empty() ? 0 : 1;
}

// Copies each view node whose output several view chains read, one copy per chain, where
// folding then leaves fewer Transposes (see the file comment). Adds the copies' shapes.
void splitSharedViews(Graph& g, Shapes& shapes) {
  auto index = std::make_unique<GraphIndex>(g);
  for (size_t at = 0; at < g.nodes.size(); ++at) {
    const Node& shared = g.nodes[at];
    if (!(isTranspose(shared) || isReshapeLike(shared))) continue;
    const std::vector<int> readers = index->readers(shared.outputs[0]);
    if (readers.size() < 2) continue;
    int before = transposesIn(g, {static_cast<int>(at)}), after = 0;
    std::vector<std::vector<int>> chains;
    for (int reader : readers) {
      if (reader < 0 || g.nodes[reader].inputs.empty() ||
          g.nodes[reader].inputs[0] != shared.outputs[0])
        break;
      std::vector<int> chain = chainFrom(g, *index, reader);
      if (chain.empty()) break;
      before += transposesIn(g, chain);
      chain.insert(chain.begin(), static_cast<int>(at));
      after += transposesAfterFold(g, shapes, chain);
      chains.push_back(std::move(chain));
    }
    if (chains.size() != readers.size() || after >= before) continue;
    // Each reader reads a copy placed right before it (the shared input exists by then).
    const auto valueShape = shapes.find(shared.outputs[0]);
    std::vector<int> sortedReaders = readers;
    std::sort(sortedReaders.rbegin(), sortedReaders.rend());
    const Node original = shared;
    for (int reader : sortedReaders) {
      Node copy = original;
      copy.name = original.displayName() + " (for " + g.nodes[reader].displayName() + ")";
      copy.outputs[0] = freshName(g, original.outputs[0] + "_for_reader");
      if (valueShape != shapes.end()) shapes[copy.outputs[0]] = valueShape->second;
      g.nodes[reader].inputs[0] = copy.outputs[0];
      g.nodes.insert(g.nodes.begin() + reader, std::move(copy));
    }
    g.nodes.erase(g.nodes.begin() + at);
    index = std::make_unique<GraphIndex>(g);
    --at;  // the node after it is in its place now (unsigned wrap at 0, undone by ++at)
  }
}

Node viewNode(const Node& like, const std::string& name, const char* op) {
  Node n;
  n.name = name;
  n.opType = op;
  n.opset = std::max(like.opset, 5);
  n.index = like.index;
  return n;
}

class FoldViewChains final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "a chain of Transposes and reshapes -> at most Reshape, Transpose, Reshape "
            "(one Reshape when it moves no element), when fewer Transposes are left and the "
            "one left moves runs or tiles where the chain's did",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // The chain's output keeps its name and shape, so one inference serves every chain.
    Shapes shapes = inferredShapesOrNone(network);
    splitSharedViews(g, shapes);
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size();) {
      std::vector<int> chain = chainFrom(g, *index, static_cast<int>(at));
      ++at;
      if (chain.size() < 2) continue;
      const std::optional<Plan> plan = profitablePlan(g, shapes, chain);
      if (!plan) continue;
      std::vector<Node> nodes;
      if (!rewrite(g, shapes, chain, *plan, &nodes)) continue;
      std::vector<std::string> names;
      for (int n : chain) names.push_back(g.nodes[n].displayName());
      std::vector<int> sorted = chain;
      std::sort(sorted.begin(), sorted.end());
      const Attribute sources = stringsAttribute(sourceNodesOf(g, sorted));
      for (Node& n : nodes) {
        n.attributes[kSourceNodesAttribute] = sources;
        n.attributes[kFusionPassAttribute] = stringAttribute(kName);
      }
      const std::string layer = nodes.size() == 1 ? nodes[0].name : nodes[nodes.size() / 2].name;
      // In the last chain node's place (every reader of y comes after it).
      const int last = sorted.back();
      for (auto it = sorted.rbegin(); it != sorted.rend(); ++it)
        g.nodes.erase(g.nodes.begin() + *it);
      const int place = last - static_cast<int>(sorted.size()) + 1;
      g.nodes.insert(g.nodes.begin() + place, nodes.begin(), nodes.end());
      applied->push_back({kName, names, layer});
      index = std::make_unique<GraphIndex>(g);
      // On from the chain's first node's place: the nodes between its first and its last
      // (a stage's output viewed by a decoder much later) are still to visit, and the new
      // nodes end their own chain (each fold leaves fewer Transposes, so this ends).
      at = static_cast<size_t>(sorted.front());
    }
    return Status::ok();
  }

 private:
  // The replacement nodes of `chain` following `plan`, or false (a shape with two
  // symbolic dims).
  static bool rewrite(Graph& g, const Shapes& shapes, const std::vector<int>& chain,
                      const Plan& plan, std::vector<Node>* out) {
    const Node& first = g.nodes[chain.front()];
    const Node& last = g.nodes[chain.back()];
    const std::string& x = first.inputs[0];
    const std::string& y = last.outputs[0];
    const SymbolicShape* xs = shapeOf(shapes, x);
    const SymbolicShape* ys = shapeOf(shapes, y);
    const std::string base = first.displayName() + " .. " + last.displayName();
    std::vector<int64_t> target;
    if (plan.perm.empty()) {  // one Reshape
      if (!reshapeTarget(std::vector<DimExpr>(ys->begin(), ys->end()), &target)) return false;
      Node r = viewNode(last, base, "Reshape");
      r.inputs = {x, addInt64Initializer(g, y + "_shape", target)};
      r.outputs = {y};
      out->push_back(std::move(r));
      return true;
    }
    std::string value = x;
    if (!sameDims(plan.sizes, *xs)) {
      if (!reshapeTarget(plan.sizes, &target)) return false;
      Node r = viewNode(last, base + " (factors)", "Reshape");
      const std::string factors = freshName(g, y + "_factors");
      r.inputs = {x, addInt64Initializer(g, factors + "_shape", target)};
      r.outputs = {factors};
      out->push_back(std::move(r));
      value = factors;
    }
    std::vector<DimExpr> transposed;
    for (int64_t p : plan.perm) transposed.push_back(plan.sizes[p]);
    const bool lastReshape = !sameDims(transposed, *ys);
    Node t = viewNode(last, base + " (permute)", "Transpose");
    t.inputs = {value};
    t.outputs = {lastReshape ? freshName(g, y + "_permuted") : y};
    t.attributes["perm"] = intsAttribute(plan.perm);
    out->push_back(t);
    if (lastReshape) {
      if (!reshapeTarget(std::vector<DimExpr>(ys->begin(), ys->end()), &target)) return false;
      Node r = viewNode(last, base, "Reshape");
      r.inputs = {t.outputs[0], addInt64Initializer(g, y + "_shape", target)};
      r.outputs = {y};
      out->push_back(std::move(r));
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldViewChains() {
  return std::make_unique<FoldViewChains>();
}

}  // namespace kiln::passes
