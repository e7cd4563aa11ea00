// merge_transposes: two Transposes in a row are one.
//   Transpose(Transpose(x, p1), p2) = Transpose(x, p),  p[i] = p1[p2[i]]
// since output index i of the second reads its input's axis p2[i], which is x's axis
// p1[p2[i]]. When p is the identity both go (readers read x). An absent perm reverses
// the axes (the rank comes from the other perm or x's inferred shape). The first
// output must be read by the second alone. Runs before the fusions: fuse_attention
// accepts the merged key transpose (0,2,3,1) as well as the pair it came from; and
// again after channels_last_layout as merge_layout_transposes, where a reformat back to
// channels-first meets the model's own permute to channels-last (ConvNeXt's depthwise
// conv -> Permute(0,2,3,1) -> LayerNorm): T(T^-1(v)) = v, both go.
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "merge_transposes";
using Perm = std::vector<int64_t>;

// The node's permutation of `rank` axes (rank < 0: take it from the attribute).
bool permutation(const Node& node, int64_t rank, Perm* perm) {
  if (node.hasAttr("perm")) {
    *perm = node.attrInts("perm");
    return rank < 0 || static_cast<int64_t>(perm->size()) == rank;
  }
  if (rank < 0) return false;
  perm->clear();
  for (int64_t i = rank - 1; i >= 0; --i) perm->push_back(i);
  return true;
}

struct Match {
  int first = -1, second = -1;
  Perm composed;
};

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, Match* m) {
  const Node& second = g.nodes[at];
  if (!isOnnxOp(second, "Transpose", 1) || second.outputs.size() != 1) return false;
  const int first = index.producer(second.inputs[0]);
  if (first < 0 || index.soleReader(second.inputs[0]) != at) return false;
  const Node& t1 = g.nodes[first];
  if (!isOnnxOp(t1, "Transpose", 1) || t1.outputs.size() != 1) return false;
  int64_t rank = -1;
  if (second.hasAttr("perm")) rank = static_cast<int64_t>(second.attrInts("perm").size());
  if (rank < 0 && t1.hasAttr("perm")) rank = static_cast<int64_t>(t1.attrInts("perm").size());
  if (rank < 0) {
    const SymbolicShape* s = shapeOf(shapes, t1.inputs[0]);
    if (!s) return false;
    rank = static_cast<int64_t>(s->size());
  }
  Perm p1, p2;
  if (!permutation(t1, rank, &p1) || !permutation(second, rank, &p2) || !isPermutation(p1) ||
      !isPermutation(p2))
    return false;
  m->first = first;
  m->second = at;
  m->composed.resize(p2.size());
  for (size_t i = 0; i < p2.size(); ++i) m->composed[i] = p1[p2[i]];
  return true;
}

bool isIdentity(const Perm& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

class MergeTransposes final : public Pass {
 public:
  explicit MergeTransposes(std::string name) : m_name(std::move(name)) {}

  PassInfo info() const override {
    return {m_name, "Transpose(Transpose(x, p1), p2) -> Transpose(x, p1[p2]) (none when identity)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // Merging keeps every value's shape that stays, so one inference serves every match.
    const Shapes shapes = inferredShapesOrNone(network);
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size();) {
      Match m;
      if (!matchAt(g, *index, shapes, static_cast<int>(at), &m)) {
        ++at;
        continue;
      }
      const Node& t1 = g.nodes[m.first];
      const Node& t2 = g.nodes[m.second];
      Node merged;
      merged.name = t1.displayName() + " + " + t2.displayName();
      merged.opset = t2.opset;
      merged.inputs = {t1.inputs[0]};
      merged.outputs = t2.outputs;
      const bool identity = isIdentity(m.composed);
      merged.opType = identity ? "Identity" : "Transpose";
      if (!identity) merged.attributes["perm"] = intsAttribute(m.composed);
      PassApplication record{m_name, {t1.displayName(), t2.displayName()}, merged.name};
      replaceNodes(g, {m.first, m.second}, merged, m_name);
      index = std::make_unique<GraphIndex>(g);
      // An identity pair leaves an Identity, gone too unless it must keep a graph
      // output's name that the value before it cannot take.
      if (identity && bypassNode(g, *index, m.second - 1, merged.inputs[0])) {
        record.layer.clear();
        index = std::make_unique<GraphIndex>(g);
      }
      applied->push_back(std::move(record));
      // A third Transpose after this one now reads the merged node: look again from it.
      at = static_cast<size_t>(m.first);
    }
    return Status::ok();
  }

 private:
  std::string m_name;
};

}  // namespace

std::unique_ptr<Pass> makeMergeTransposes() {
  return std::make_unique<MergeTransposes>(kName);
}

std::unique_ptr<Pass> makeMergeLayoutTransposes() {
  return std::make_unique<MergeTransposes>("merge_layout_transposes");
}

}  // namespace kiln::passes
