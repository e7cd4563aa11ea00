// The host/device contract of Pad and ai.kiln Roll (host half: slice_pad_tile.cpp, device half:
// slice_pad_tile_impl.cu; Slice, Tile and Expand are strided copies, data_movement_impl.h).
// Plain C++, for g++ and nvcc; the launchers' common terms: data_movement_impl.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/data_movement_impl.h"
#include "kiln/status.h"

namespace kiln::cuda::dm {

enum PadMode : int { kPadConstant = 0, kPadReflect, kPadEdge, kPadWrap };

// Output coordinate c_d reads input index regionStart[d] + t, t = c_d - padBegin[d] mapped
// into [0, regionLen[d]) by the mode (the CPU's padAxisMap); a constant border takes the
// value instead. The host has checked the rank (checkRank) and every region (a mode other
// than constant never pads an empty one).
struct PadParams {
  int rank = 0;
  int mode = kPadConstant;
  int64_t outDims[kMaxMovementRank] = {};
  int64_t inStrides[kMaxMovementRank] = {};
  int64_t padBegin[kMaxMovementRank] = {};     // positive leading pad
  int64_t regionStart[kMaxMovementRank] = {};  // first input index kept (negative pads crop)
  int64_t regionLen[kMaxMovementRank] = {};    // input indices kept
};

struct PadLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  PadParams params;
  const void* value = nullptr;  // host memory: the pad value's elementBytes storage bytes
  int elementBytes = 0;         // 1, 2, 4 or 8
  int64_t n = 0;                // output elements, > 0
};
// The output's rows (its innermost dim) stage in shared memory, as the row-run copy's
// (data_movement_impl.h): rank >= 2, at least 4 elements a row, 32 rows of them in
// kRowRunBytes. A thread then maps a row's outer coordinates once instead of every
// element's (VOLO's [128, 192, 28, 28] -> 30 x 30 zero pad took 0.239 ms on an H200, ten
// times its traffic's floor, by element).
inline bool padRowsApply(const PadParams& p, int elementBytes) {
  if (p.rank < 2) return false;
  const int64_t inner = p.outDims[p.rank - 1];
  return inner >= 4 && inner <= 4096 &&
         rowRunRowsPerBlock(static_cast<int>(inner), elementBytes) > 0;
}
// padRowsKernel where padRowsApply, else padKernel, over the n output elements.
Status launchPad(const PadLaunch& pad, cudaStream_t stream);

// Roll (ops/roll_params.h) over rows of `rowWords` words of `wordBytes` each: the dims after the
// last shifted one are one row, moved whole (Swin's cyclic shift of [B, H, W, C] over H and W:
// rows of C channels, 16-byte words); the row coordinates (`rank` outer dims, adjacent unshifted
// ones merged) read row (c_d - shifts[d]) mod dims[d] of the input. A word per thread, adjacent
// threads adjacent words of a row: one read and one write of every byte.
struct RollLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  int rank = 0;                               // outer dims, <= kMaxMovementRank
  int64_t dims[kMaxMovementRank] = {};        // rows along each outer dim
  int64_t shifts[kMaxMovementRank] = {};      // in [0, dims[d])
  int64_t rowStrides[kMaxMovementRank] = {};  // rows between neighbours along dim d
  int64_t rowWords = 1;                       // words a row
  int wordBytes = 1;                          // 1, 2, 4, 8 or 16
  int64_t n = 0;                              // words in all, > 0
};
Status launchRoll(const RollLaunch& roll, cudaStream_t stream);

}  // namespace kiln::cuda::dm
