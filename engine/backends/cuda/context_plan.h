// How an ExecutionContext lays out one set of input shapes: shape inference with
// the concrete shapes, which nodes fold to constants, which run on the GPU, alias
// their input or fall back to the host, where every value lives (weights, bindings,
// the activation arena, views, stream-ordered allocations) and when each dies.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/engine_impl.h"

namespace kiln::cuda {

enum class ValueHome {
  kWeight,         // engine-owned, uploaded once
  kFolded,         // computed at prepare time, uploaded per plan
  kInputBinding,   // the caller's (or the context's) input buffer, used in place
  kOutputBinding,  // written straight into the output buffer
  kArena,          // a slot of the activation arena
  kAlias,          // a view of its producer's input 0
  kDynamic,        // shape known only at run time: stream-ordered allocation
};

struct PlannedValue {
  DataType modelType = DataType::kUndefined;
  DataType storage = DataType::kUndefined;
  bool shapeKnown = false;
  Shape shape;
  ValueHome home = ValueHome::kDynamic;
  int64_t offset = 0;  // arena offset for kArena
  int firstStep = 0, lastStep = -1;
  std::string aliasRoot;  // for kAlias: the value whose bytes it shares
};

struct PlannedStep {
  size_t nodeIndex = 0;
  LayerPlacement placement = LayerPlacement::kGpu;
  const GpuKernelEntry* entry = nullptr;
  std::string note;
  std::string implementation;
  std::string choice;               // GpuKernelContext::setChoice
  std::vector<std::string> offers;  // GpuKernelContext::offerChoices
  int64_t workspaceBytes = 0;
  std::shared_ptr<void> state;
  std::vector<std::string> releaseAfter;  // values whose last reader is this step
  // >= 0: a planned view (GpuKernelEntry::viewOffset): output 0 is input 0's bytes from this
  // offset on and no kernel runs. -1 otherwise (an aliasesInput0 view starts at byte 0).
  int64_t viewOffsetBytes = -1;
  bool hostRoundTrip = false;
  bool dynamicNoted = false;
};

struct ContextPlan {
  std::map<std::string, PlannedValue> values;
  std::vector<PlannedStep> steps;  // one per node of the main graph, in order
  std::map<std::string, Tensor> folded;
  int64_t arenaBytes = 0;
  int64_t unsharedBytes = 0;
};

// Plans `engine`'s main graph for concrete input shapes (every graph input bound).
Result<ContextPlan> planContext(const EngineImpl& engine,
                                const std::map<std::string, Shape>& inputShapes);

}  // namespace kiln::cuda
