// Activation memory over a plan's execution (issue 25's memory timeline): which
// activations are alive at each layer, from the build record's layers (execution order,
// tensors at the build's opt shapes, storage types). A tensor is alive from the layer
// that writes it to the last layer that reads it (graph outputs to the end); only layer
// outputs the memory planner placed in the arena count (an alias such as a Reshape, or a
// host shape value, takes none). Weights are reported apart. No Qt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/plan.h"

namespace kiln::inspector {

struct MemoryTimeline {
  struct Step {
    std::string layer;
    int64_t liveBytes = 0;  // activations alive while the layer runs
  };
  struct Tensor {
    std::string name;
    int64_t bytes = 0;
  };
  std::vector<Step> steps;  // one per layer, execution order
  size_t peakStep = 0;
  std::vector<Tensor> peakTensors;  // alive at the peak, largest first
  int64_t arenaBytes = 0;           // the planner's arena (packing included)
  int64_t weightBytes = 0;
};

MemoryTimeline memoryTimeline(const Plan& plan);
// A table (layer, live MiB, a bar) and the peak with its tensors.
std::string formatMemoryTimeline(const MemoryTimeline& timeline);

}  // namespace kiln::inspector
