// Graph passes: rewrites of a Network that keep its outputs (within float
// rounding) and record what they did. A fused node carries its provenance in two
// attributes, so it survives plan files: the ONNX nodes it replaced and the pass.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln {

constexpr const char* kKilnDomain = "ai.kiln";                      // Kiln's own fused ops
constexpr const char* kSourceNodesAttribute = "kiln_source_nodes";  // strings
constexpr const char* kFusionPassAttribute = "kiln_fusion_pass";    // string

struct PassInfo {
  std::string name;
  std::string description;  // the algebra, in one line
  int minimumLevel = 0;     // runs at builder optimization levels >= this
};

// One application of a pass: the nodes it matched and the node that replaced them.
struct PassApplication {
  std::string pass;
  std::vector<std::string> nodes;
  std::string layer;
};

// The build target's say over the fused nodes the passes propose: a pass that would
// replace a match with a Kiln-domain node (ai.kiln) first asks `accepts`, giving the
// node and its inputs' types and shapes as shape inference knows them before the
// rewrite (kUndefined, or an empty shape, when unknown; a dim below 0 is a symbol).
// "" accepts; otherwise the match stays unfused and "pass: kept 'nodes' unfused: the
// reason" is appended to `refusals`. A fusion the target cannot run is never made.
struct FusionTarget {
  std::function<std::string(const Node& fused, const std::vector<DataType>& inputTypes,
                            const std::vector<Shape>& inputShapes)>
      accepts;
  std::vector<std::string>* refusals = nullptr;
};

// Every pass in pipeline order.
std::vector<PassInfo> listPasses();
// The layout pass that stores convolutions and pooling channels-last (NHWC).
constexpr const char* kChannelsLastPass = "channels_last_layout";
// The stem fusion (conv + MaxPool + QuantizeLinear) for a half-precision NHWC kernel.
constexpr const char* kConvMaxPoolPass = "fuse_conv_max_pool";

// Runs the pipeline of `optimizationLevel` on `network`, skipping `disabled` (an
// unknown name is an error listing the known ones). Appends to `applied`.
// `channelsLast`: the backend wants NHWC convolutions at this build's precision
// (without it the channels_last_layout pass does not run).
// `halfPrecision`: the engine's float layers compute in fp16/bf16; fuse_conv_max_pool,
// whose layer only a half-precision channels-last kernel runs, needs it and a running
// channels_last_layout (channelsLast, its level, not disabled).
// `target`: the fusion passes ask it before making a Kiln-domain node (nullptr: every
// fusion is made, as for the CPU reference, which runs them all).
Status runPasses(Network& network, int optimizationLevel, const std::vector<std::string>& disabled,
                 std::vector<PassApplication>* applied, bool channelsLast = false,
                 bool halfPrecision = false, const FusionTarget* target = nullptr);

}  // namespace kiln
