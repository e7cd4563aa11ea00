// The choices a layer's race offers a builder (GpuKernelContext::offerChoices): each
// complete choice that ran, with its time in the race. Every one is offered: pruning by
// the race's times was measured and withdrawn (H200, 2026-11-30): those times do not
// measure the same work (a convolution engine's time leaves out Kiln's epilogue pass, a
// cuBLASLt algorithm's the pass after it), so pruning to within 1.25x of the fastest
// dropped cuDNN's fused graphs, the true winners, and ResNet-50 FP16 b256 ran 19% slower
// (6.70 -> 7.99 ms; EfficientNet-B0 +16%); without pruning it ran as before (6.63 -> 6.61
// ms) and BERT-base 2% faster. The times stay with the choices for a prune that compares
// like with like.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace kiln::cuda {

struct TimedChoice {
  std::string choice;      // in the words plannedChoice() takes back
  float milliseconds = 0;  // its time in the race (0: ran untimed)
};

// The choices to offer, in race order, each once.
inline std::vector<std::string> choicesWorthTiming(const std::vector<TimedChoice>& ran) {
  std::vector<std::string> out;
  for (const TimedChoice& c : ran)
    if (std::find(out.begin(), out.end(), c.choice) == out.end()) out.push_back(c.choice);
  return out;
}

}  // namespace kiln::cuda
