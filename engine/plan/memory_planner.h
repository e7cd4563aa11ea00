// Activation memory planning: buffers with known sizes and lifetimes (the first
// and last step that touches them) are packed into one arena so that buffers
// whose lifetimes overlap never share bytes. Greedy by size (largest first), each
// placed at the lowest aligned offset that fits between the buffers already
// placed that are alive at the same time. Pure host code: the
// builder plans every backend's activations with it, the CUDA runtime its arena.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

struct BufferLifetime {
  int64_t bytes = 0;
  int firstStep = 0;  // inclusive
  int lastStep = 0;   // inclusive
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // one per request, aligned
  int64_t arenaBytes = 0;        // peak: what the arena must hold
  int64_t unsharedBytes = 0;     // sum of aligned sizes: the arena with no reuse
};

MemoryPlan planMemory(const std::vector<BufferLifetime>& buffers, int64_t alignment = 256);

}  // namespace kiln
