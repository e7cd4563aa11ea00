#include "plan/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace kiln {

namespace {
int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}
}  // namespace

MemoryPlan planMemory(const std::vector<BufferLifetime>& buffers, int64_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  struct Placed {
    int64_t offset, size;
    int first, last;
  };
  std::vector<Placed> placed;
  for (size_t index : order) {
    const BufferLifetime& request = buffers[index];
    int64_t size = alignUp(std::max<int64_t>(request.bytes, 1), alignment);
    plan.unsharedBytes += size;
    // Address ranges of live-at-the-same-time buffers, sorted by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& p : placed) {
      if (p.first <= request.lastStep && request.firstStep <= p.last)
        busy.emplace_back(p.offset, p.offset + p.size);
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    plan.offsets[index] = offset;
    placed.push_back({offset, size, request.firstStep, request.lastStep});
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
  }
  return plan;
}

}  // namespace kiln
