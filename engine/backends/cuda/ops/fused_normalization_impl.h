// The contract between fused_normalization.cpp (host: checks, broadcast row maps, outputs,
// the pack decision, the implementation text, registration) and fused_normalization_impl.cu
// (device: the warp-per-row and block-per-row kernels of ScaledMaskedSoftmax and
// AddLayerNorm).
//
// Each launcher enqueues one kernel on `stream` for the storage type `type` and returns the
// launch's status ("data type X", kUnsupported, outside float32 / float16 / bfloat16). It
// assumes the host half checked: the type is in device_types::kStorageFloats and shared by
// every input, the outputs are allocated, rows > 0, and `pack` was decided by the host
// (fusedPackWidth: every row contiguous, n a multiple of the pack, every buffer aligned to
// one). Rows of up to kFusedWarpRowLimit elements get a warp each (moving `pack` elements
// per access; AddLayerNorm's rows of at most 16 packs share a warp: addNormLanesPerRow),
// longer rows a block each.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/normalization_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::fused_norm {

constexpr int kFusedPack = 4;      // elements per vector access (16 bytes of float32)
constexpr int kFusedWidePack = 8;  // 16-bit types: 16 bytes per access
// row_kernels.cuh's kWarpRowLimit (fused_normalization_impl.cu checks they agree): rows up
// to this length get one warp each.
constexpr int64_t kFusedWarpRowLimit = 1024;

// Where each row of an input starts when the input is broadcast to the output: the
// output's leading dims (all but the last) with the input's strides, adjacent dims
// merged where one continues the other (BERT's [B, 1, S, S] mask against
// [B, H, S, S] scores: three dims, strides S*S, 0, S). 32-bit division: the
// per-row index math must stay small next to a row of 128 elements.
struct RowMap {
  bool direct = true;  // laid out like the output: row r starts at r * n
  int rank = 0;
  uint32_t dims[nm::kStridedMaxRank] = {};
  int64_t strides[nm::kStridedMaxRank] = {};
  int64_t lastStride = 1;  // 0 when the input's last dim is broadcast
};

// Y = softmax(X * scale + M) over rows of n; passed to the kernels as is.
struct SoftmaxArgs {
  int64_t rows = 0, n = 0;
  float scale = 1.f;
  bool maskReplaces = false;  // a nonzero mask value is the score (masked_fill), not added
  RowMap x, mask;
};
struct SoftmaxLaunch {
  const void* x = nullptr;
  const void* mask = nullptr;  // optional
  void* y = nullptr;
  DataType type = DataType::kFloat32;
  SoftmaxArgs args;
  int pack = 1;  // elements per access: 1, kFusedPack or (16-bit types) kFusedWidePack
};
Status launchScaledMaskedSoftmax(const SoftmaxLaunch& launch, cudaStream_t stream);

// S = A + B, Y = LayerNorm(S) over rows of n (gamma, beta: [n]), or with `rms` the
// root-mean-square form S / sqrt(mean(S^2) + epsilon) * gamma [+ beta]; with `residualAfter`
// S = A and B is added to Y (Y = norm(A) * gamma [+ beta] + B, no sum); passed to the kernels
// as is.
struct AddNormArgs {
  int64_t rows = 0, n = 0;
  float epsilon = 1e-5f;
  bool rms = false;
  bool residualAfter = false;  // Y = norm(A) + B (B added to the output; no sum)
  RowMap a, b;
};
struct AddNormLaunch {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;  // optional
  void* y = nullptr;
  void* sum = nullptr;  // optional output S
  DataType type = DataType::kFloat32;
  AddNormArgs args;
  int pack = 1;  // elements per access: 1, kFusedPack or (16-bit types) kFusedWidePack
};
// The lanes one AddLayerNorm row of n elements in packs of `pack` gets: a row of at most 16
// packs shares its warp with others, on the smallest power-of-two group of lanes that holds
// its packs (TNT's 24 channels in 16-bit packs of 8: 4 lanes, 8 rows a warp); a longer row
// (up to kFusedWarpRowLimit) has a warp to itself: 32.
inline int addNormLanesPerRow(int64_t n, int pack) {
  const int64_t packs = (n + pack - 1) / pack;
  if (packs > 16) return 32;
  int lanes = 1;
  while (lanes < packs) lanes *= 2;
  return lanes;
}
Status launchAddLayerNorm(const AddNormLaunch& launch, cudaStream_t stream);

}  // namespace kiln::cuda::fused_norm
