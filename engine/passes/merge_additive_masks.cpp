// merge_additive_masks: two additive masks on attention scores as one, so the attention
// fusion (one mask operand) takes the block:
//   Softmax(Add(Add(S, A), B)) -> Softmax(Add(S, Add(A, B)))
// S the scores (a MatMul, or a Mul / Div of a MatMul), A and B the masks: neither grows S's
// shape (each Add's output has S's shape and type). Reassociating changes the sum's rounding
// only (the mask terms are added first; an -inf in either stays -inf). MPNet adds its relative
// position bias [1, H, S, S] and then the padding mask [B, 1, 1, S]: its attention stayed
// unfused (docs/benchmarks.md, eleventh session). Layers adding the same A and B share one
// Add(A, B). Conditions: the inner Add read by the outer alone, the outer read by one Softmax
// alone. Runs after the GEMM fusion (a GEMM's bias Add is no mask) and before the softmax and
// attention fusions.
#include <map>
#include <string>
#include <utility>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "merge_additive_masks";

struct MaskPair {
  int inner = -1, outer = -1;
  std::string scores, first, second;  // S, A, B
};

// The pattern with its outer Add at node `at`, or false.
bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, MaskPair* m) {
  const Node& outer = g.nodes[at];
  if (!isOnnxOp(outer, "Add", 2)) return false;
  const int reader = index.soleReader(outer.outputs[0]);
  if (reader < 0 || !isOnnxOpType(g.nodes[reader], "Softmax")) return false;
  for (int side = 0; side < 2; ++side) {
    const int inner = index.producer(outer.inputs[side]);
    if (inner < 0 || !isOnnxOp(g.nodes[inner], "Add", 2) ||
        index.soleReader(outer.inputs[side]) != at)
      continue;
    const Node& add = g.nodes[inner];
    for (int s = 0; s < 2; ++s) {
      const std::string& scores = add.inputs[s];
      if (!attentionScores(g, index, scores) || !sameShapeAndType(shapes, scores, add.outputs[0]) ||
          !sameShapeAndType(shapes, scores, outer.outputs[0]))
        continue;
      *m = {inner, at, scores, add.inputs[1 - s], outer.inputs[1 - side]};
      return true;
    }
  }
  return false;
}

class MergeAdditiveMasks final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Softmax(Add(Add(S, A), B)) -> Softmax(Add(S, Add(A, B))) for attention scores S "
            "(two additive masks as one)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    std::map<std::pair<std::string, std::string>, std::string> sums;  // (A, B) -> A + B
    // A rewrite renames no value it asks about (the scores and the outer Add's output keep
    // their shapes): one inference serves every match; the index is rebuilt after each.
    const Shapes shapes = inferredShapesOrNone(network);
    for (bool changed = true; changed;) {
      changed = false;
      const GraphIndex index(g);
      for (int at = 0; at < static_cast<int>(g.nodes.size()) && !changed; ++at) {
        MaskPair m;
        if (!matchAt(g, index, shapes, at, &m)) continue;
        const Node inner = g.nodes[m.inner];
        std::string sum;
        if (auto it = sums.find({m.first, m.second}); it != sums.end()) {
          sum = it->second;
        } else {
          Node add = madeNode(g, inner, inner.displayName() + " (masks)", "Add",
                              {m.first, m.second}, {inner.displayName()}, kName);
          add.domain = inner.domain;
          sum = add.outputs[0];
          sums[{m.first, m.second}] = sum;
          g.nodes.insert(g.nodes.begin() + m.outer, std::move(add));
          ++m.outer;  // both Adds are before the outer one
        }
        Node& outer = g.nodes[m.outer];
        applied->push_back({kName, {inner.displayName(), outer.displayName()}, ""});
        outer.inputs = {m.scores, sum};
        g.nodes.erase(g.nodes.begin() + m.inner);
        changed = true;
      }
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeMergeAdditiveMasks() {
  return std::make_unique<MergeAdditiveMasks>();
}

}  // namespace kiln::passes
