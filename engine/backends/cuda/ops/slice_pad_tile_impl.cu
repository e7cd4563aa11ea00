// Pad's device half (contract: slice_pad_tile_impl.h; host half: slice_pad_tile.cpp): one
// kernel for every mode, and its launch.
#include <cstring>

#include "backends/cuda/ops/data_movement_common.cuh"
#include "backends/cuda/ops/slice_pad_tile_impl.h"

namespace kiln::cuda {
namespace {

using namespace dm;

// The CPU's padAxisMap, evaluated per element.
template <class T>
__global__ void padKernel(const T* in, T* out, PadParams p, T value, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t rest = i;
    int64_t offset = 0;
    bool border = false;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= p.rank) continue;
      int64_t c = 0;
      rest = divMod(rest, p.outDims[d], &c);
      int64_t t = c - p.padBegin[d];
      const int64_t len = p.regionLen[d];
      if (t < 0 || t >= len) {
        if (p.mode == kPadConstant) {
          border = true;
          t = 0;
        } else if (p.mode == kPadEdge) {
          t = t < 0 ? 0 : len - 1;
        } else if (p.mode == kPadWrap) {
          t = ((t % len) + len) % len;
        } else if (len == 1) {  // reflect of one element repeats it
          t = 0;
        } else {
          const int64_t period = 2 * (len - 1);
          t = ((t % period) + period) % period;
          if (t >= len) t = period - t;
        }
      }
      offset += (p.regionStart[d] + t) * p.inStrides[d];
    }
    out[i] = border ? value : in[offset];
  }
}

}  // namespace

namespace dm {

Status launchPad(const PadLaunch& pad, cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(pad.elementBytes, [&](auto element) {
    using T = decltype(element);
    T fill;
    std::memcpy(&fill, pad.value, sizeof(T));
    padKernel<<<gridFor(pad.n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(pad.in), static_cast<T*>(pad.out), pad.params, fill, pad.n);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("padKernel");
  return Status::ok();
}

}  // namespace dm
}  // namespace kiln::cuda
