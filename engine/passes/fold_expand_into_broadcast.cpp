// fold_expand_into_broadcast: an Expand whose reader broadcasts anyway is not
// materialized; the reader reads the Expand's input:
//   op(Expand(x, shape), y) = op(x, y)   when broadcast(x, y) = broadcast(Expand(x), y)
// for the elementwise ops with multidirectional (numpy) broadcasting: arithmetic (Add,
// Sub, Mul, Div, Pow, Mod), Max / Min / Sum / Mean, comparisons, logic and Where. Each
// element of the output reads the same element of x either way, so the values are
// exactly the same (the ops: the op table's broadcast shape forms, and Where). The check
// is on inferred shapes: the reader's output shape with x in place of the Expand's output
// must equal its shape now (symbolic dims equal as expressions), so an Expand that grows
// the output stays. Readers that pass are rewritten
// one by one; the Expand goes when none is left (a graph output keeps it).
// A GatherElements whose indices are the Expand's output becomes the ai.kiln
// BroadcastGatherElements of the Expand's input, which reads the indices broadcast instead
// of copied, when the Expand only broadcast dims of size 1 up to the data's dims (the axis
// dim unchanged, the same rank): DeBERTa's relative-position indices [1, S, S] expanded to
// every batch and head ([B * H, S, S], int64: 201 MB per layer at batch 128, read by two
// gathers).
// torch's `F.normalize(x, dim=-1)` exports as `x / Expand(Clip(ReduceL2(x)), shape(x))`:
// SwinV2's cosine attention paid a full-size copy of the norms per Q and K (3.3 ms of
// 23 at batch 128 on an H200) that the Div's broadcast makes unnecessary.
#include <algorithm>
#include <set>
#include <string>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"
#include "shape/shape_rules.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_expand_into_broadcast";

// `reader`'s output shape with `source` read in place of `expanded` is its shape now.
bool sameOutputWithout(const Node& reader, const std::string& expanded, const std::string& source,
                       const Shapes& shapes) {
  const SymbolicShape* out = shapeOf(shapes, reader.outputs[0]);
  if (!out) return false;
  SymbolicShape shape;
  for (size_t i = 0; i < reader.inputs.size(); ++i) {
    const std::string& in = reader.inputs[i] == expanded ? source : reader.inputs[i];
    const SymbolicShape* s = shapeOf(shapes, in);
    if (!s) return false;
    shape = i == 0 ? *s : shape::broadcastSymbolic(shape, *s);
  }
  return shape == *out;
}

// GatherElements(data, Expand(source)) reads the same elements as
// BroadcastGatherElements(data, source): same rank, the axis dim unchanged by the Expand,
// every other source dim 1 or the data's, and the expanded dims the data's.
bool gathersBroadcastIndices(const Node& reader, const std::string& expanded,
                             const std::string& source, const Shapes& shapes) {
  if (!isOnnxOp(reader, "GatherElements", 2) || reader.inputs[1] != expanded ||
      reader.inputs[0] == expanded)
    return false;
  const SymbolicShape* data = shapeOf(shapes, reader.inputs[0]);
  const SymbolicShape* from = shapeOf(shapes, source);
  const SymbolicShape* to = shapeOf(shapes, expanded);
  if (!data || !from || !to || from->size() != data->size() || to->size() != data->size())
    return false;
  const int64_t rank = static_cast<int64_t>(data->size());
  int64_t axis = reader.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || (*from)[axis] != (*to)[axis]) return false;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    if ((*to)[d] != (*data)[d]) return false;
    if ((*from)[d] != (*data)[d] && (*from)[d] != DimExpr(1)) return false;
  }
  return true;
}

class FoldExpandIntoBroadcast final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "op(Expand(x), y) -> op(x, y) for broadcasting elementwise ops (Add, Mul, Div, "
            "Where, comparisons, ...) when the output's shape stays; GatherElements(d, "
            "Expand(i)) -> BroadcastGatherElements(d, i)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // Rewiring readers renames no value, so one inference serves every match.
    const Shapes shapes = inferredShapesOrNone(network);
    GraphIndex index(g);
    std::set<int> emptied;
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      const Node& expand = g.nodes[at];
      if (!isOnnxOp(expand, "Expand", 2) || expand.inputs[0].empty()) continue;
      const std::string expanded = expand.outputs[0];
      const std::string source = expand.inputs[0];
      if (typeOf(shapes, source) != typeOf(shapes, expanded)) continue;
      std::vector<std::string> rewired;
      bool stays = false;  // a graph output, or a reader that needs the expanded shape
      for (int r : index.readers(expanded)) {
        if (r < 0) {
          stays = true;
          continue;
        }
        Node& reader = g.nodes[r];
        if (std::find(reader.inputs.begin(), reader.inputs.end(), expanded) == reader.inputs.end())
          continue;  // listed twice: it reads the value twice, both rewired already
        if (gathersBroadcastIndices(reader, expanded, source, shapes)) {
          reader.domain = kKilnDomain;
          reader.opType = "BroadcastGatherElements";
          reader.opset = 1;
          reader.inputs[1] = source;
          network.opsets[kKilnDomain] = 1;
          rewired.push_back(reader.displayName());
          continue;
        }
        if (!broadcastsItsInputs(reader) || !sameOutputWithout(reader, expanded, source, shapes)) {
          stays = true;
          continue;
        }
        std::replace(reader.inputs.begin(), reader.inputs.end(), expanded, source);
        rewired.push_back(reader.displayName());
      }
      if (rewired.empty()) continue;
      if (!stays) emptied.insert(static_cast<int>(at));
      std::vector<std::string> names = {expand.displayName()};
      names.insert(names.end(), rewired.begin(), rewired.end());
      applied->push_back({kName, names, ""});
    }
    for (auto it = emptied.rbegin(); it != emptied.rend(); ++it)
      g.nodes.erase(g.nodes.begin() + *it);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldExpandIntoBroadcast() {
  return std::make_unique<FoldExpandIntoBroadcast>();
}

}  // namespace kiln::passes
