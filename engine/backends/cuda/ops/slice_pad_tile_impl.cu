// Pad's device half (contract: slice_pad_tile_impl.h; host half: slice_pad_tile.cpp): a
// kernel by output rows where they stage (padRowsApply), one by element otherwise, every
// mode in both, and their launch.
#include <algorithm>
#include <cstring>

#include "backends/cuda/ops/data_movement_common.cuh"
#include "backends/cuda/ops/slice_pad_tile_impl.h"

namespace kiln::cuda {
namespace {

using namespace dm;

// The CPU's padAxisMap for one dim: output coordinate c of dim d to the input index it
// reads (regionStart + t), or `border` for a constant pad outside the region.
__device__ __forceinline__ int64_t padSource(const PadParams& p, int d, int64_t c, bool* border) {
  int64_t t = c - p.padBegin[d];
  const int64_t len = p.regionLen[d];
  if (t < 0 || t >= len) {
    if (p.mode == kPadConstant) {
      *border = true;
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
  return p.regionStart[d] + t;
}

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
      offset += padSource(p, d, c, &border) * p.inStrides[d];
    }
    out[i] = border ? value : in[offset];
  }
}

// padRowsApply's Pad by output rows (slice_pad_tile_impl.h): a thread maps one row's outer
// coordinates once and walks the row's `inner` elements into a shared staging row (pitch
// rowRunPitch), then the block writes its rows out contiguous.
template <class T>
__global__ void padRowsKernel(const T* in, T* out, PadParams p, T value, int64_t rows,
                              int blockRows) {
  extern __shared__ uint4 padStage[];
  const int last = p.rank - 1;
  const int inner = static_cast<int>(p.outDims[last]);
  stagedRowPasses(reinterpret_cast<T*>(padStage), rowRunPitch(inner), out, rows, inner, blockRows,
                  [&](int64_t row, T* to) {
                    int64_t rest = row, offset = 0;
                    bool border = false;
                    for (int d = last - 1; d >= 0; --d) {
                      int64_t c = 0;
                      rest = divMod(rest, p.outDims[d], &c);
                      offset += padSource(p, d, c, &border) * p.inStrides[d];
                    }
                    if (border) {
                      for (int e = 0; e < inner; ++e) to[e] = value;
                      return;
                    }
                    const T* from = in + offset;
                    for (int e = 0; e < inner; ++e) {
                      bool outside = false;
                      const int64_t source = padSource(p, last, e, &outside);
                      to[e] = outside ? value : from[source * p.inStrides[last]];
                    }
                  });
}

// RollLaunch (slice_pad_tile_impl.h): word i of the output reads word w of the rolled row.
template <class W>
__global__ void rollRowsKernel(const W* in, W* out, RollLaunch r) {
  KILN_DM_GRID_LOOP(i, r.n) {
    int64_t word = 0;
    int64_t row = divMod(i, r.rowWords, &word), source = 0;
    for (int d = r.rank - 1; d >= 0; --d) {
      int64_t c = 0;
      row = divMod(row, r.dims[d], &c);
      const int64_t s = r.shifts[d];
      source += (c >= s ? c - s : c - s + r.dims[d]) * r.rowStrides[d];
    }
    out[i] = in[source * r.rowWords + word];
  }
}

}  // namespace

namespace dm {

Status launchRoll(const RollLaunch& roll, cudaStream_t stream) {
  auto launch = [&](auto word) {
    using W = decltype(word);
    rollRowsKernel<<<gridFor(roll.n), kBlockSize, 0, stream>>>(static_cast<const W*>(roll.in),
                                                               static_cast<W*>(roll.out), roll);
    return Status::ok();
  };
  if (roll.wordBytes == 16) {
    KILN_RETURN_IF_ERROR(launch(uint4{}));
  } else {
    KILN_RETURN_IF_ERROR(dispatchWordOfSize(roll.wordBytes, launch));
  }
  KILN_CUDA_CHECK_LAUNCH("rollRowsKernel");
  return Status::ok();
}

Status launchPad(const PadLaunch& pad, cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(pad.elementBytes, [&](auto element) {
    using T = decltype(element);
    T fill;
    std::memcpy(&fill, pad.value, sizeof(T));
    if (padRowsApply(pad.params, pad.elementBytes)) {
      const int last = pad.params.rank - 1;
      const int inner = static_cast<int>(pad.params.outDims[last]);
      const int blockRows = rowRunRowsPerBlock(inner, pad.elementBytes);
      const int64_t rows = pad.n / inner;
      const unsigned grid = static_cast<unsigned>(std::min<int64_t>(
          std::max<int64_t>((rows + blockRows - 1) / blockRows, 1), 65535LL * 32));
      const size_t bytes = size_t(blockRows) * rowRunPitch(inner) * pad.elementBytes;
      padRowsKernel<<<grid, kBlockSize, bytes, stream>>>(static_cast<const T*>(pad.in),
                                                         static_cast<T*>(pad.out), pad.params, fill,
                                                         rows, blockRows);
      return Status::ok();
    }
    padKernel<<<gridFor(pad.n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(pad.in), static_cast<T*>(pad.out), pad.params, fill, pad.n);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("padKernel / padRowsKernel");
  return Status::ok();
}

}  // namespace dm
}  // namespace kiln::cuda
