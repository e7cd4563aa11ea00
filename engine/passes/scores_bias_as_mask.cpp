// scores_bias_as_mask: attention scores viewed with more dims, biased, and viewed back are the
// scores plus one additive mask:
//   Reshape(Reshape(S, v) + A_1 + ... + A_n, shape(S)) = S + Reshape(A_1 + ... + A_n, shape(S))
// when every A_i broadcasts into the view v and their sum has v's whole shape (each element
// of the view gets the same terms; the sum is reassociated, exact up to float rounding order).
// MViTv2's decomposed relative positions add rel_h [B, H, qh, qw, kh, 1] and rel_w [B, H, qh,
// qw, 1, kw] to the scores viewed [B, H, qh, qw, kh, kw]: as S + M the mask passes and
// fuse_attention see the attention they know (its softmax, both products and the scores never
// written), where the view kept the softmax and both products apart.
// Conditions: S written by a MatMul (or its scaled form: attentionScores); each Reshape, Add
// output read by the next node alone; the last Reshape's output shape S's, all shapes static;
// the broadcast of the A_i exactly v's shape; every A_i of S's type.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ops/broadcast_params.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "scores_bias_as_mask";

struct BiasedView {
  int view = -1, back = -1;  // the two Reshapes
  std::vector<int> adds;     // the Adds between them, in order
  std::vector<std::string> terms;
  Shape scores, viewShape;
};

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, BiasedView* m) {
  const Node& view = g.nodes[at];
  if (!isOnnxOp(view, "Reshape", 2) || !attentionScores(g, index, view.inputs[0])) return false;
  if (!staticShape(shapes, view.inputs[0], &m->scores) ||
      !staticShape(shapes, view.outputs[0], &m->viewShape) ||
      m->viewShape.size() <= m->scores.size())
    return false;
  const DataType type = typeOf(shapes, view.inputs[0]);
  m->view = at;
  std::string value = view.outputs[0];
  Shape termsShape;  // the broadcast of the terms so far
  for (;;) {
    const int next = index.soleReader(value);
    if (next < 0) return false;
    const Node& node = g.nodes[next];
    if (isOnnxOp(node, "Add", 2)) {
      const std::string* term = otherInput(node, value);
      Shape termShape, sum;
      if (!term || *term == value || !staticShape(shapes, *term, &termShape) ||
          typeOf(shapes, *term) != type ||
          !ops::broadcastShapes(termShape, m->viewShape, &sum).isOk() || sum != m->viewShape)
        return false;  // a term that grows the view
      Shape widened = termShape;
      if (!m->terms.empty() && !ops::broadcastShapes(termsShape, termShape, &widened).isOk())
        return false;
      termsShape = widened;
      m->terms.push_back(*term);
      m->adds.push_back(next);
      value = node.outputs[0];
      continue;
    }
    if (!isOnnxOp(node, "Reshape", 2) || m->adds.empty()) return false;
    Shape back;
    if (!staticShape(shapes, node.outputs[0], &back) || back != m->scores) return false;
    m->back = next;
    // The terms' sum must fill the view: its Reshape to S's shape then keeps every element.
    return termsShape.size() == m->viewShape.size() && termsShape == m->viewShape;
  }
}

class ScoresBiasAsMask final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Reshape(Reshape(S, v) + A_1 + ... + A_n, shape(S)) with S attention scores -> S + "
            "Reshape(A_1 + ... + A_n, shape(S)): an additive mask the attention fusion takes",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const Shapes shapes = inferredShapesOrNone(network);  // the rewrite keeps every other value
    auto index = std::make_unique<GraphIndex>(g);         // rebuilt after each rewrite alone
    size_t next = 0;
    while (next < g.nodes.size()) {
      const size_t at = next++;
      BiasedView m;
      if (!matchAt(g, *index, shapes, static_cast<int>(at), &m)) continue;
      std::vector<int> all = {m.view};
      all.insert(all.end(), m.adds.begin(), m.adds.end());
      all.push_back(m.back);
      const std::vector<std::string> sources = sourceNodesOf(g, all);
      const Node& back = g.nodes[m.back];
      const std::string base = back.displayName();
      std::vector<Node> made;
      std::string sum = m.terms[0];
      for (size_t i = 1; i < m.terms.size(); ++i) {
        made.push_back(madeNode(g, back, base + " (bias " + std::to_string(i) + ")", "Add",
                                {sum, m.terms[i]}, sources, kName));
        sum = made.back().outputs[0];
      }
      const std::string target = addInt64Initializer(g, base + "_mask_shape", m.scores);
      made.push_back(madeNode(g, back, base + " (mask)", "Reshape", {sum, target}, sources, kName));
      made.push_back(madeNode(g, back, base + " (scores + mask)", "Add",
                              {g.nodes[m.view].inputs[0], made.back().outputs[0]}, sources, kName));
      made.back().outputs[0] = back.outputs[0];
      applied->push_back({kName, sources, made.back().name});
      // The new nodes stand where the last Reshape was (every term exists by then); the view
      // and the Adds before it go.
      const std::vector<int> gone(all.begin(), all.end() - 1);
      g.nodes.erase(g.nodes.begin() + m.back);
      g.nodes.insert(g.nodes.begin() + m.back, made.begin(), made.end());
      for (auto it = gone.rbegin(); it != gone.rend(); ++it) g.nodes.erase(g.nodes.begin() + *it);
      next = at;
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeScoresBiasAsMask() {
  return std::make_unique<ScoresBiasAsMask>();
}

}  // namespace kiln::passes
