// sink_broadcast_copies: a broadcast that only copies moves below the elementwise ops that
// read it, so that fold_expand_into_broadcast (next in the pipeline) can drop it where a later
// reader broadcasts anyway:
//   1. op(x, c) whose constant c is op's identity in every element (And: true, Or: false,
//      Mul: 1, Div and Sub: 1 and 0 as the second operand) and only broadcasts x to a larger
//      shape is Expand(x, shape(c)): the same elements (x's, copied), no arithmetic;
//   2. op(Expand(x, s), y, ...) = Expand(op(x, y, ...), s) for an op whose output is the numpy
//      broadcast of its inputs (arithmetic, comparisons, logic, Where): an output element reads
//      the same element of x either way, and y's at the same index (where y grows a dim that
//      the Expand also grows, op(x, y) has that dim already and the Expand copies nothing
//      there). The op then computes on the smaller shape.
// Both apply only when every reader of the rewritten value is such a broadcasting op (a
// copy that no later reader can absorb stays where it is). transformers 5's SDPA mask is
// And(q_idx >= 0 [1, 1, S, 1] (all true at a fixed shape), padding [B, 1, 1, S]) ->
// Where(.., 0, -inf) per layer -> Add to the scores [B, H, S, S]: the mask becomes the
// [B, 1, 1, S] padding row it is, not the [B, 1, S, S] copy every head of every layer read
// (cuDNN's attention and Kiln's read a key row 32% and 17% faster than a square mask on an
// H200, docs/benchmarks.md).
#include <algorithm>
#include <string>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "sink_broadcast_copies";
constexpr int kMaxRewrites = 100000;  // a bound on the fixpoint loop (each rewrite shrinks)

// Every reader of `value` is a node that broadcasts its inputs (no graph output, no other
// reader, at least one reader).
bool readOnlyByBroadcasts(const Graph& g, const GraphIndex& index, const std::string& value) {
  const std::vector<int>& readers = index.readers(value);
  if (readers.empty()) return false;
  for (int r : readers)
    if (r < 0 || !broadcastsItsInputs(g.nodes[r])) return false;
  return true;
}

// Both shapes known and different (rank or a dim).
bool shapesDiffer(const Shapes& shapes, const std::string& a, const std::string& b) {
  const SymbolicShape* sa = shapeOf(shapes, a);
  const SymbolicShape* sb = shapeOf(shapes, b);
  return sa && sb && !(*sa == *sb);
}

// The operand `node` passes on unchanged up to broadcasting (rewrite::neutralOperand), or "":
// not for Add, whose x + 0 is not x for x = -0, nor for a constant x (fold_constants' case).
std::string identityOperandOf(const Node& node, const GraphIndex& index) {
  if (!isDefaultDomain(node) || node.outputs.size() != 1 || node.opType == "Add") return "";
  const std::string x = neutralOperand(node, index);
  return x.empty() || index.constant(x) ? "" : x;
}

// Rewrite 1 on node `at`: op(x, c) -> Expand(x, shape(c)). False when it does not apply.
bool identityAsExpand(Network& network, const GraphIndex& index, const Shapes& shapes, int at,
                      std::vector<PassApplication>* applied) {
  Graph& g = network.graph;
  Node& node = g.nodes[at];
  const std::string x = identityOperandOf(node, index);
  if (x.empty() || node.opset < 8 || !shapesDiffer(shapes, x, node.outputs[0]) ||
      typeOf(shapes, x) != typeOf(shapes, node.outputs[0]) ||
      !readOnlyByBroadcasts(g, index, node.outputs[0]))
    return false;
  // As sinkExpand asks next: the readers' results read only by broadcasting ops too, else
  // the Expand could not move on and nothing is gained.
  for (int r : index.readers(node.outputs[0]))
    if (!readOnlyByBroadcasts(g, index, g.nodes[r].outputs[0])) return false;
  const std::string c = node.inputs[0] == x ? node.inputs[1] : node.inputs[0];
  const std::string shape =
      addInt64Initializer(g, node.displayName() + "_broadcast_shape", index.constant(c)->shape());
  const std::string was = node.opType;
  node.opType = "Expand";
  node.attributes.erase("broadcast");
  node.inputs = {x, shape};  // Expand since opset 8: the node keeps its opset
  applied->push_back({kName, {node.displayName()}, was + " with an identity constant as Expand"});
  return true;
}

// Rewrite 2 on Expand node `at`: each reader op(e, y, ...) -> Expand(op(x, y, ...), s).
bool sinkExpand(Network& network, const GraphIndex& index, const Shapes& shapes, int at,
                std::vector<PassApplication>* applied) {
  Graph& g = network.graph;
  const Node expand = g.nodes[at];
  if (!isOnnxOp(expand, "Expand", 2) || expand.inputs[0].empty()) return false;
  const std::string x = expand.inputs[0], e = expand.outputs[0], s = expand.inputs[1];
  if (!shapesDiffer(shapes, x, e) || !readOnlyByBroadcasts(g, index, e)) return false;
  std::vector<int> readers = index.readers(e);
  std::sort(readers.begin(), readers.end());
  readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  // Each reader's output must itself be read only by broadcasting ops, where the moved copy
  // can go on (or be absorbed); else nothing is gained.
  for (int r : readers)
    if (!readOnlyByBroadcasts(g, index, g.nodes[r].outputs[0])) return false;
  std::vector<std::string> names = {expand.displayName()};
  // From the last reader back, so each insertion leaves the earlier indices valid.
  for (auto it = readers.rbegin(); it != readers.rend(); ++it) {
    Node& reader = g.nodes[*it];
    std::replace(reader.inputs.begin(), reader.inputs.end(), e, x);
    const std::string out = reader.outputs[0];
    reader.outputs[0] = freshName(g, out + "_unexpanded");
    Node copy = madeNode(g, reader, reader.displayName() + " (broadcast after)", "Expand",
                         {reader.outputs[0], s}, {reader.displayName()}, kName);
    copy.outputs[0] = out;
    copy.domain = expand.domain;
    copy.opset = expand.opset;
    names.push_back(reader.displayName());
    g.nodes.insert(g.nodes.begin() + *it + 1, std::move(copy));
  }
  g.nodes.erase(g.nodes.begin() + at);  // every reader now reads x
  applied->push_back({kName, names, "the Expand moved below its readers"});
  return true;
}

class SinkBroadcastCopies final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "op(x, identity constant) that only broadcasts x -> Expand(x); op(Expand(x, s), y) "
            "-> Expand(op(x, y), s) for broadcasting elementwise ops (Where, And, Add, ...) "
            "whose results only broadcasting ops read",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    // One rewrite at a time, the index and shapes made again after each: a moved Expand is a
    // new value the next rewrite may move further.
    for (int rewrites = 0; rewrites < kMaxRewrites; ++rewrites) {
      const Shapes shapes = inferredShapesOrNone(network);
      const GraphIndex index(network.graph);
      bool changed = false;
      for (int at = 0; at < static_cast<int>(network.graph.nodes.size()) && !changed; ++at)
        changed = identityAsExpand(network, index, shapes, at, applied) ||
                  sinkExpand(network, index, shapes, at, applied);
      if (!changed) break;
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeSinkBroadcastCopies() {
  return std::make_unique<SinkBroadcastCopies>();
}

}  // namespace kiln::passes
