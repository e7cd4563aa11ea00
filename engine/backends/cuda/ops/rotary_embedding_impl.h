// The contract between the host half of RotaryEmbedding (rotary_embedding.cpp: the node's
// geometry, the position ids' type, the output) and its device half
// (rotary_embedding_impl.cu: the rotation kernel). Plain C++, included by both compilers.
//
// launchRotaryEmbedding rotates `n` elements of X into Y on `stream`, one thread per
// element, in float. It assumes the host half checked the geometry against X, the caches
// and position_ids (ops::rotaryGeometry), the type (kRotaryDeviceTypes; another gives a
// kUnsupported "data type X" status) and that n > 0; a failed launch comes back as a
// status naming the kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"
#include "ops/rotary_params.h"

namespace kiln::cuda {

// X, the caches and Y: float32, float16 or bfloat16, computed in float.
constexpr uint32_t kRotaryDeviceTypes = device_types::kStorageFloats;

// The node's geometry (ops/rotary_params.h) and the position ids on the device.
struct RotaryParams : ops::RotaryGeometry {
  const void* ids = nullptr;  // position_ids or nullptr
  bool ids64 = true;
};

// Y = X with the first 2 * half features of each head rotated by the caches' rows: the
// row position_ids names (a position outside the cache gives zeros), else the row of
// (batch, seq). X, the caches and Y of `type`; Y of X's shape.
struct RotaryLaunch {
  DataType type = DataType::kUndefined;
  const void* x = nullptr;
  const void* cosCache = nullptr;
  const void* sinCache = nullptr;
  void* y = nullptr;
  int64_t n = 0;  // X's elements
  RotaryParams params;
};

Status launchRotaryEmbedding(const RotaryLaunch& args, cudaStream_t stream);

}  // namespace kiln::cuda
