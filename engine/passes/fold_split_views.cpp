// fold_split_views: a Split's output read through a chain of view ops that copies (the merged
// Q/K/V GEMM's Split, then each head split's Reshape and Transpose) as one ai.kiln StridedCopy
// of the Split's input, so the Split's copy and the Transpose's never run.
//   X -> Split -> [Reshape | Transpose | Squeeze | Unsqueeze | Flatten | Identity | Gather(scalar
//        constant index) | Split | Slice(constant, unit steps)]* -> Y
// -> Y = StridedCopy(X; shape, strides, offset)
// Algebra: each op of the chain only re-indexes; composed from X's contiguous layout
// (passes/view_chain.h) the chain maps Y[i_0, ..., i_n] to X[offset + sum_k i_k strides_k]
// whenever every dim of Y has one stride (ops/strided_copy_params.h). The chain ends at the
// furthest node that still composes (a Reshape that merges the transposed batch and heads, as
// DeBERTa's [B, H, S, D] -> [B * H, S, D], stays after it: a Reshape of the contiguous copy is
// free). A chain is folded when it holds a copying op after the Split (Transpose, Gather,
// Slice), or when the rewrite takes the Split over (its other outputs already folded or
// unread): a Split output followed by Reshapes alone then becomes one StridedCopy. A Split
// output read by no view op (a graph output, a GEMM) keeps the Split.
// Unfold chains: with no Split, a chain holding a Gather of constant indices in arithmetic
// progression (an unfold's windows: VOLO's outlook attention gathers [3, 14] windows of a padded
// map along H, then W, then permutes them) folds the same way from the value it starts at:
//   X -> [view op]* -> Gather(progression) -> [view op]* -> Y  =>  Y = StridedCopy(X; ...)
// Conditions: the Split's sizes constant and every shape on the chain static (a dynamic batch
// keeps the chain); the chain nodes the StridedCopy takes over are read by nothing else and
// are no graph output (the others stay for their other readers); Y keeps its name, so a
// graph output stays one.
#include <algorithm>
#include <set>

#include "ops/strided_copy_params.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"
#include "passes/view_chain.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_split_views";

// A chain from the nearest Split before a value (its steps from the Split on, composed over
// the Split's input), or, with no Split, a whole chain that unfolds (a Gather of constant
// indices in arithmetic progression, more than one: VOLO's windows), composed over the value
// it starts at.
struct SplitChain {
  int split = -1;               // -1: an unfold chain
  std::string base;             // the tensor the StridedCopy reads
  std::vector<ViewStep> steps;  // the Split's (or the chain's first) step first
  StridedView view;
};

bool unfolds(const Node& n, const GraphIndex& index) {
  if (n.opType != "Gather" || n.inputs.size() != 2) return false;
  const Tensor* t = index.constant(n.inputs[1]);
  return t && t->numel() > 1;
}

bool constantSplitSizes(const Node& split, const GraphIndex& index) {
  return !split.hasInput(1) || index.constant(split.inputs[1]) != nullptr;
}

bool splitChainTo(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                  const std::string& value, SplitChain* out) {
  const std::vector<ViewStep> back = viewChainBack(g, index, value);
  bool unfold = false;
  for (size_t i = 0; i < back.size(); ++i) {
    const Node& n = g.nodes[back[i].node];
    unfold = unfold || unfolds(n, index);
    if (n.opType != "Split") continue;
    if (!constantSplitSizes(n, index)) return false;
    out->split = back[i].node;
    out->base = n.inputs[0];
    out->steps.assign(back.rend() - static_cast<std::ptrdiff_t>(i + 1), back.rend());
    return composeViewChain(g, index, shapes, out->base, out->steps, &out->view);
  }
  if (!unfold) return false;
  out->split = -1;
  out->base = g.nodes[back.back().node].inputs[0];
  out->steps.assign(back.rbegin(), back.rend());
  return composeViewChain(g, index, shapes, out->base, out->steps, &out->view);
}

// One stride per dim of `view`, or false (a dim whose atoms do not nest).
bool stridesOf(const StridedView& view, std::vector<int64_t>* strides) {
  const size_t rank = view.shape().size();
  strides->assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t size = 0;
    if (!view.simpleDim(static_cast<int64_t>(d), &size, &(*strides)[d])) return false;
  }
  return true;
}

Node stridedCopyNode(const Graph& g, const SplitChain& chain, const std::vector<int64_t>& strides,
                     const std::vector<int>& nodes, const std::string& value) {
  Node copy;
  copy.opType = ops::kStridedCopyOp;
  copy.domain = kKilnDomain;
  copy.opset = 1;
  copy.inputs = {chain.base};
  copy.outputs = {value};
  copy.attributes["shape"] = rewrite::intsAttribute(chain.view.shape());
  copy.attributes["strides"] = rewrite::intsAttribute(strides);
  copy.attributes["offset"] = intAttribute(chain.view.offset());
  for (const std::string& s : sourceNodesOf(g, nodes))
    copy.name += (copy.name.empty() ? "" : " + ") + s;
  return copy;
}

// The rewrite of the chain that ends at node `at`'s output (a one-output view op), or nothing.
std::optional<Fusion> chainFusion(const Graph& g, const GraphIndex& index,
                                  const InferredShapes& shapes, int at) {
  const std::string& value = g.nodes[at].outputs[0];
  SplitChain chain;
  std::vector<int64_t> strides;
  if (!splitChainTo(g, index, shapes, value, &chain) || !stridesOf(chain.view, &strides))
    return std::nullopt;
  std::set<int> candidates;
  bool copies = false;
  for (const ViewStep& step : chain.steps) {
    if (step.node != at) candidates.insert(step.node);
    copies = copies || (step.node != chain.split && viewOpCopies(g.nodes[step.node]));
  }
  std::vector<int> nodes = nodesTakenOver(g, index, candidates, at);
  const bool splitGoes =
      chain.split >= 0 && std::count(nodes.begin(), nodes.end(), chain.split) > 0;
  if (!copies && !splitGoes) return std::nullopt;
  nodes.push_back(at);
  std::sort(nodes.begin(), nodes.end());
  return Fusion{nodes, stridedCopyNode(g, chain, strides, nodes, value)};
}

// A reader of `value` whose chain folds takes it further: the rewrite waits for it.
bool foldsFurther(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                  const std::string& value) {
  for (int r : index.readers(value)) {
    if (r < 0) continue;
    const Node& n = g.nodes[r];
    if (!isViewOp(n) || n.opType == "Split" || n.outputs.size() != 1 || n.inputs[0] != value)
      continue;
    if (chainFusion(g, index, shapes, r)) return true;
  }
  return false;
}

std::optional<Fusion> foldAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  const Node& n = g.nodes[at];
  // A chain ends at a one-output view op; a Split's own output read by no view op stays a
  // Split (a StridedCopy would copy the same).
  if (!isViewOp(n) || n.opType == "Split" || n.outputs.size() != 1) return std::nullopt;
  if (foldsFurther(g, index, shapes, n.outputs[0])) return std::nullopt;
  return chainFusion(g, index, shapes, at);
}

class FoldSplitViews final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "view(Split(X)) with view a chain of Reshape, Transpose, Gather, Slice that copies "
            "-> StridedCopy(X) (one copy, the Split and the chain's copies gone); an unfold's "
            "chain (a Gather of windows in arithmetic progression) likewise from its start",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    return applyFor(network, applied, nullptr);
  }

  Status applyFor(Network& network, std::vector<PassApplication>* applied,
                  const FusionTarget* target) const override {
    // Rewrites rename no value, so one inference serves both sweeps.
    const InferredShapes shapes = inferredShapesOrNone(network);
    const FusionAt at = [&](Graph& g, const GraphIndex& index, int node) {
      return foldAt(g, index, shapes, node);
    };
    // A Split goes with the rewrite that folds its last read output; a chain of Reshapes that
    // comes before the copying chains in node order is folded by the second sweep.
    fuseEach(network, kName, applied, at, target, &shapes);
    fuseEach(network, kName, applied, at, target, &shapes);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldSplitViews() {
  return std::make_unique<FoldSplitViews>();
}

}  // namespace kiln::passes
