// The contract between normalization.cpp (host: checks, shapes, outputs, registration) and
// normalization_impl.cu (device: the kernels of BatchNormalization (inference),
// Instance/GroupNormalization, LayerNormalization and RMSNormalization).
//
// Each launcher enqueues one kernel on `stream` for the element type `type` and returns the
// launch's status ("data type X", kUnsupported, outside float32 / float16 / bfloat16 /
// float64). It assumes the host half checked: the type is in device_types::kFloats, every
// parameter has X's storage type, the output is allocated, and there is at least one element
// (one row). Statistics are computed in float (double for double), two-pass.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/ops/normalization_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::nm {

// y = x * a + (bias - mean * a), a = scale / sqrt(var + epsilon); parameter k of element i
// is (i / run) % params.
struct BatchNormLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  const void *scale = nullptr, *bias = nullptr, *mean = nullptr, *var = nullptr;
  DataType type = DataType::kFloat32;
  int64_t numel = 0, run = 1, params = 1;
  double epsilon = 1e-5;
};
Status launchBatchNorm(const BatchNormLaunch& launch, cudaStream_t stream);

// One row per (n, group) of perGroup * spatial contiguous elements. Channel c of a
// row uses parameter c (or the group's, with perGroupParams). Passed to the kernel as is.
struct GroupNormArgs {
  int64_t rows = 0, rowLength = 0, spatial = 1, groups = 1, perGroup = 1;
  bool perGroupParams = false;
  double epsilon = 1e-5;
};
// `workspace`: groupNormWorkspaceBytes(args, type) bytes of device scratch when that is
// nonzero (the split path below), else unused.
struct GroupNormLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  const void *scale = nullptr, *bias = nullptr;
  void* workspace = nullptr;
  DataType type = DataType::kFloat32;
  GroupNormArgs args;
};
// Rows too few for a block each to fill the GPU, and long (InstanceNormalization over a
// whole sample, as PoolFormer's GroupNorm(1) exports: [B, 1, C * H * W]), are split into
// chunks: one kernel writes each chunk's count, mean and squared deviations, a second combines
// a row's chunks (Chan et al.'s pairwise update) and normalizes its own chunk. The scratch
// that needs (one record per chunk), or 0 for the one-kernel path.
size_t groupNormWorkspaceBytes(const GroupNormArgs& args, DataType type);
Status launchGroupNorm(const GroupNormLaunch& launch, cudaStream_t stream);

// Where a parameter element sits: `direct` when it is laid out like the elements it scales
// (offset = index), else broadcast through `index` (normalization_common.cuh's ParamMap).
struct ParamBroadcast {
  StridedIndex index;
  bool direct = true;
};

// LayerNormalization over rows of `cols` elements (the unpacked kernel; the packed 16-bit
// one is layer_norm_packed.h's, which the host half tries first). `bias` may be null; the
// optional statistics outputs get one value per row in `statType`.
struct LayerNormLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  const void *scale = nullptr, *bias = nullptr;
  DataType type = DataType::kFloat32;
  int64_t rows = 0, cols = 0;
  ParamBroadcast scaleMap, biasMap;
  double epsilon = 1e-5;
  void* meanOut = nullptr;  // optional statistics outputs, one per row
  void* invStdOut = nullptr;
  DataType statType = DataType::kFloat32;
};
Status launchLayerNormRows(const LayerNormLaunch& launch, cudaStream_t stream);

// Y = round_T(X / sqrt(mean(X^2) + epsilon)) * scale over rows of `cols` elements, scale
// broadcast onto X (`direct`: one value per element of a row; else through the full index).
struct RmsNormLaunch {
  const void* x = nullptr;
  const void* scale = nullptr;
  void* y = nullptr;
  DataType type = DataType::kFloat32;
  int64_t rows = 0, cols = 0;
  ParamBroadcast scaleMap;
  double epsilon = 1e-5;
};
Status launchRmsNorm(const RmsNormLaunch& launch, cudaStream_t stream);

}  // namespace kiln::cuda::nm
