// Chains of view ops (Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Identity, Gather of one
// constant index or of constant indices in arithmetic progression, Split, Slice with unit steps):
// walking one back from a value, composing it into a strided view of the tensor it starts at
// (passes/strided_view.h), and finding which of its nodes a rewrite that reads that tensor directly
// takes over. fold_attention_views (the chains into a FusedAttention) and fold_split_views (the
// chains after a Split) share them. Static shapes only. Internal to kiln_engine.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "passes/pass.h"
#include "passes/strided_view.h"

namespace kiln::passes {

// The longest chain the passes walk: enough for any exporter's head split.
constexpr int kMaxViewChain = 16;

// One node of a chain and which of its outputs the chain follows (a Split's).
struct ViewStep {
  int node = -1;
  int output = 0;
};

// A default-domain view op (above) with a named input 0: its output only re-indexes input 0.
bool isViewOp(const Node& n);
// A view op that copies when it runs (Transpose, Gather, Split, Slice); the reshape family
// is free (the CUDA runtime aliases it).
bool viewOpCopies(const Node& n);
// The index of `value` among node `n`'s outputs, or -1.
int outputIndex(const Node& n, const std::string& value);

// The view ops that write `value`, from its producer back (at most `maxSteps`): step i reads
// the value step i + 1 writes; the last step's input 0 is where the chain starts.
std::vector<ViewStep> viewChainBack(const Graph& g, const GraphIndex& index,
                                    const std::string& value, int maxSteps = kMaxViewChain);

// Applies `step` (whose input 0 `view` describes) to `view`; false when the step's shapes are
// not static, do not match, or the view cannot express it (the view is then undefined).
bool applyViewStep(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                   const ViewStep& step, StridedView* view);

// The view of `base` (static shape, read as its contiguous elements) that `steps` (base
// first: steps[0] reads `base`) compose to; false when a step does not compose.
bool composeViewChain(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                      const std::string& base, const std::vector<ViewStep>& steps,
                      StridedView* view);

// The nodes of `candidates` whose every output is read only inside the set or by node `at`
// (and is no graph output), to a fixpoint: those a rewrite anchored at `at` can remove.
std::vector<int> nodesTakenOver(const Graph& g, const GraphIndex& index, std::set<int> candidates,
                                int at);

}  // namespace kiln::passes
