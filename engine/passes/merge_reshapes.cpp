// merge_reshapes: a chain of shape-only ops is one Reshape. Reshape, Flatten, Squeeze
// and Unsqueeze keep the elements in row-major order and change only the shape, so
// any chain of them equals one Reshape to the last output's shape:
//   S2(S1(x)) = x                         when S2's output has x's inferred shape
//   S2(S1(x)) = Reshape(x, shape(S2(.)))  when that shape is static (a new constant)
//   Reshape(S1(x), s) = Reshape(x, s)     when s is a constant without 0 entries (a 0
//                                         copies the dim of S1's output, not x's)
// (S1, S2 any of the four; S1's output read by S2 alone). Pairs merge one at a time,
// so longer chains fold from the front. Runs early, before the fusions, which then
// see one Reshape where an exporter wrote Unsqueeze -> Unsqueeze or Flatten -> Reshape.
#include <algorithm>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "merge_reshapes";

bool isShapeOnly(const Node& node) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    if (isOnnxOpType(node, op) && node.outputs.size() == 1 && node.hasInput(0)) return true;
  return false;
}

enum class Rewrite { kNone, kRemove, kStaticReshape, kKeepLastShape };

struct Match {
  int first = -1, second = -1;
  Rewrite rewrite = Rewrite::kNone;
  Shape staticShape;
};

// The last Reshape's own shape input works for x: constant, no 0 entries (or
// allowzero, where 0 means an empty dim).
bool selfContainedShape(const Node& reshape, const GraphIndex& index) {
  if (reshape.opType != "Reshape" || reshape.opset < 5 || !reshape.hasInput(1)) return false;
  std::vector<int64_t> shape;
  if (!constantInts(index.constant(reshape.inputs[1]), &shape)) return false;
  return reshape.attrInt("allowzero", 0) != 0 ||
         std::find(shape.begin(), shape.end(), 0) == shape.end();
}

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, Match* m) {
  const Node& second = g.nodes[at];
  if (!isShapeOnly(second)) return false;
  const int first = index.producer(second.inputs[0]);
  if (first < 0 || !isShapeOnly(g.nodes[first]) || index.soleReader(second.inputs[0]) != at)
    return false;
  m->first = first;
  m->second = at;
  const std::string& x = g.nodes[first].inputs[0];
  if (sameShapeAndType(shapes, x, second.outputs[0])) {
    m->rewrite = Rewrite::kRemove;
  } else if (staticShape(shapes, second.outputs[0], &m->staticShape) &&
             std::find(m->staticShape.begin(), m->staticShape.end(), 0) == m->staticShape.end() &&
             std::max(second.opset, g.nodes[first].opset) >= 5) {
    m->rewrite = Rewrite::kStaticReshape;
  } else if (selfContainedShape(second, index)) {
    m->rewrite = Rewrite::kKeepLastShape;
  }
  return m->rewrite != Rewrite::kNone;
}

Node mergedNode(Graph& g, const Match& m) {
  const Node& first = g.nodes[m.first];
  const Node& second = g.nodes[m.second];
  Node merged;
  merged.name = first.displayName() + " + " + second.displayName();
  merged.opset = std::max(first.opset, second.opset);
  merged.outputs = second.outputs;
  switch (m.rewrite) {
    case Rewrite::kRemove:
      merged.opType = "Identity";
      merged.inputs = {first.inputs[0]};
      break;
    case Rewrite::kStaticReshape:
      merged.opType = "Reshape";
      merged.inputs = {
          first.inputs[0],
          addInt64Initializer(g, second.displayName() + "_merged_shape", m.staticShape)};
      break;
    case Rewrite::kKeepLastShape:
      merged.opType = "Reshape";
      merged.opset = second.opset;
      merged.inputs = {first.inputs[0], second.inputs[1]};
      merged.attributes = second.attributes;
      break;
    case Rewrite::kNone:
      break;
  }
  return merged;
}

class MergeReshapes final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Reshape/Flatten/Squeeze/Unsqueeze chains -> one Reshape (static or self-contained "
            "shape), none when the shape is unchanged",
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
      Node merged = mergedNode(g, m);
      const std::string source = merged.inputs[0];
      PassApplication record{
          kName, {g.nodes[m.first].displayName(), g.nodes[m.second].displayName()}, merged.name};
      replaceNodes(g, {m.first, m.second}, std::move(merged), kName);
      index = std::make_unique<GraphIndex>(g);
      if (m.rewrite == Rewrite::kRemove && bypassNode(g, *index, m.second - 1, source)) {
        record.layer.clear();
        index = std::make_unique<GraphIndex>(g);
      }
      applied->push_back(std::move(record));
      at = static_cast<size_t>(m.first);  // the merged node may start the next pair
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeMergeReshapes() {
  return std::make_unique<MergeReshapes>();
}

}  // namespace kiln::passes
