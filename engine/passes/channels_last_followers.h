// Which nodes follow channels_last_layout's NHWC region without a reformat before them, and
// in what NHWC form (the pass and its region: channels_last_layout.cpp). Each predicate reads
// the graph as it is before the rewrite; `chosen` marks the nodes before it that go NHWC.
// Internal to the passes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/shape_inference.h"
#include "ops/strided_copy_params.h"
#include "passes/pass.h"

namespace kiln::passes::channels_last {

// How an elementwise node reads its inputs on NHWC storage: the slots whose values are
// NHWC already, and those that broadcast over H and W and need their C moved last.
struct FollowPlan {
  std::vector<size_t> regionSlots;
  std::vector<size_t> broadcastSlots;
};

// A channel shuffle of a region value: Reshape [N, C, H, W] -> [N, a, b, H, W],
// Transpose (0, 2, 1, 3, 4), Reshape back to [N, C, H, W] (ShuffleNet), each value read by
// the next node alone. On NHWC storage it is the same shuffle of the innermost axis:
// Reshape [N, H, W, a, b] (0 copies N, H, W), Transpose (0, 1, 2, 4, 3), Reshape
// [N, H, W, C]. Returns the indices of the three nodes, or an empty list.
struct Shuffle {
  std::vector<int> nodes;  // the two Reshapes and the Transpose, in order
  int64_t a = 0, b = 0, c = 0;
};

// A normalization over each whole sample of a region value: Reshape [N, C, H, W] ->
// [N, 1, C * H * W], InstanceNormalization with a one-element scale and bias, Reshape back
// to [N, C, H, W] (torch's export of GroupNorm(1, C), PoolFormer's norm), each value read by
// the next node alone. The statistics and the scalar affine do not depend on where C sits,
// so on NHWC storage it is the same three nodes with the last Reshape to [N, H, W, C].
// Returns the three nodes' indices and the two Reshapes' targets ({0, 1, C * H * W} and
// {0, H, W, C}: 0 copies N), or none.
struct WholeSampleNorm {
  std::vector<int> nodes;          // the Reshape, the InstanceNormalization, the Reshape back
  std::vector<int64_t> flatShape;  // the first Reshape's target, spelled out: a 0 copying
                                   // dim 1 would copy H on NHWC storage, not C
  std::vector<int64_t> nhwcShape;
};

// A Resize that keeps N and C and has an NHWC form (see the file comment): the inputs it
// replaces (slot, NHWC tensor) and its NHWC `axes` attribute (empty: none).
struct ResizeNhwc {
  std::vector<std::pair<size_t, Tensor>> inputs;
  std::vector<int64_t> axes;
};

// The node's first input is float32, float16 or bfloat16.
bool isFloat(const Node& node, const InferredShapes& shapes);

// True when elementwise `node` (the op table's positionwise ops) can run on NHWC storage
// without a reformat before it: at least one input is a 4-D region value, every other 4-D
// input is one too or broadcasts over H and W, and the lower-rank inputs broadcast over H and
// W; fills `plan`. Region values need not have the output's full shape: 4-D values all
// permuted alike broadcast alike (FocalNet's ctx [N, C, 1, 1] times its gate [N, 1, H, W]).
bool followsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                   const InferredShapes& shapes, FollowPlan* plan);

// A channels-first view of channels-last data (rewrite::channelsLastSourceOf): its reformat
// to NHWC folds away (fold_view_chains).
bool isChannelsFirstView(const std::string& value, const Graph& g, const GraphIndex& index,
                         const InferredShapes& shapes);

// A Concat of region values (or channels-first views of channels-last data, at least one
// from the region): the same Concat along the permuted axis, set in `axis`.
bool concatFollowsRegion(const Node& node, const Graph& g, const GraphIndex& index,
                         const std::vector<bool>& chosen, const InferredShapes& shapes,
                         FollowPlan* plan, int64_t* axis);

// A Split of a region value (any number of outputs, sizes as given): the same Split along the
// permuted axis, set in `axis`; every output is a region value (InceptionNeXt's and FocalNet's
// channel splits).
bool splitFollowsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                        const InferredShapes& shapes, FollowPlan* plan, int64_t* axis);

// A StridedCopy (fold_split_views' Split -> Slice chains: FocalNet's gates) of a region value
// [N, C, H, W] with static dims that reads a 4-D box of it with every Y dim stepping along the
// X axis in its own position (a stride that is a multiple of that axis' stride, or a dim of
// 1) and staying inside that axis: the same box read from NHWC storage, its geometry in
// `nhwc` (Y's dims permuted to [N, H, W, C], each stride the NHWC stride of its axis).
bool stridedCopyFollowsRegion(const Node& node, const GraphIndex& index,
                              const std::vector<bool>& chosen, const InferredShapes& shapes,
                              FollowPlan* plan, ops::StridedCopyGeometry* nhwc);

// A Pad's NHWC form: its pads (begins then ends, 8 entries) permuted, or, when it names its
// axes (opset 18), those axes permuted and the pads as they are (empty here).
struct PadNhwc {
  std::vector<int64_t> pads;
  std::vector<int64_t> axes;
};

// A Pad of a region value (any mode: each axis pads on its own) with constant pads and axes:
// the same Pad on NHWC storage, its permuted pads or axes in `nhwc`.
bool padFollowsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                      const InferredShapes& shapes, FollowPlan* plan, PadNhwc* nhwc);

// A Slice of a region value with constant axes and starts: the same Slice along the
// permuted axes, set in `axes` in the order of the node's starts / ends / steps.
bool sliceFollowsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                        const InferredShapes& shapes, FollowPlan* plan, std::vector<int64_t>* axes);

// The channel shuffle (Shuffle above) starting at node `at`, or an empty one.
Shuffle shuffleFollowsRegion(const Graph& g, const GraphIndex& index, int at,
                             const std::vector<bool>& chosen, const InferredShapes& shapes);

// The whole-sample normalization (WholeSampleNorm above) starting at node `at`, or none.
WholeSampleNorm wholeSampleNormFollowsRegion(const Graph& g, const GraphIndex& index, int at,
                                             const std::vector<bool>& chosen,
                                             const InferredShapes& shapes);

// The NHWC form of a Resize of a 4-D float value that keeps N and C, or nothing.
std::optional<ResizeNhwc> resizeNhwc(const Node& node, const GraphIndex& index,
                                     const InferredShapes& shapes);

}  // namespace kiln::passes::channels_last
