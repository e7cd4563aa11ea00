// LayerNormalization's packed 16-bit form (contract: layer_norm_packed.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/layer_norm_packed.h"

namespace kiln::cuda {
namespace {

// The packed form of layerNormRows for 16-bit rows of up to 1024 columns, a multiple of 8,
// with one scale (and bias) value per column and no statistics outputs: ConvNeXt's and
// Swin's channels-last LayerNorms over 96-768 channels ran at ~4x their DRAM floor in the
// warp-per-row form (2-byte loads, two reads of X, five shuffle steps per sum). Here a
// group of `lanes` threads (a power of two, lanes * 8 * kPacks >= cols) holds a row in
// registers as 16-byte packs, pack i at lane i mod lanes; mean, then the variance around
// it (the two-pass moments, as rowMoments), each summed in float over the group with
// log2(lanes) shuffles; X is read once and Y written once.
template <class T, int kPacks>
__global__ void __launch_bounds__(256)
    layerNormPacked(const T* x, T* y, const T* scale, const T* bias, int64_t rows, int cols,
                    int lanes, float epsilon) {
  const int64_t thread = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t row = thread / lanes;
  const int lane = static_cast<int>(thread % lanes), packs = cols / 8;
  const bool active = row < rows;  // inactive lanes still shuffle
  const T* xr = x + (active ? row : 0) * cols;
  float v[kPacks][8];
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const int pack = lane + k * lanes;
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (active && pack < packs) raw = *reinterpret_cast<const uint4*>(xr + 8 * pack);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      v[k][i] = toFloat(e[i]);
      sum += v[k][i];
    }
  }
  for (int offset = lanes / 2; offset > 0; offset /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const float mean = sum / static_cast<float>(cols);
  float squares = 0.f;
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    if (lane + k * lanes >= packs) continue;
#pragma unroll
    for (int i = 0; i < 8; ++i) squares += (v[k][i] - mean) * (v[k][i] - mean);
  }
  for (int offset = lanes / 2; offset > 0; offset /= 2)
    squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  const float invStd = 1.f / sqrtf(squares / static_cast<float>(cols) + epsilon);
  if (!active) return;
  T* yr = y + row * cols;
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const int pack = lane + k * lanes;
    if (pack >= packs) continue;
    const uint4 sRaw = *reinterpret_cast<const uint4*>(scale + 8 * pack);
    uint4 bRaw = make_uint4(0, 0, 0, 0);
    if (bias) bRaw = *reinterpret_cast<const uint4*>(bias + 8 * pack);
    const T* se = reinterpret_cast<const T*>(&sRaw);
    const T* be = reinterpret_cast<const T*>(&bRaw);
    uint4 out;
    T* oe = reinterpret_cast<T*>(&out);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      oe[i] = fromFloat<T>((v[k][i] - mean) * invStd * toFloat(se[i]) + toFloat(be[i]));
    *reinterpret_cast<uint4*>(yr + 8 * pack) = out;
  }
}

template <class T>
void launchPacked(const DeviceTensor& x, DeviceTensor& y, const DeviceTensor& scale,
                  const DeviceTensor* bias, const PackedLayerNorm& p, int lanes, int perLane,
                  cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((p.rows * lanes + 255) / 256);
  const T* b = bias ? bias->as<const T>() : nullptr;
  auto go = [&](auto kernel) {
    kernel<<<blocks, 256, 0, stream>>>(x.as<const T>(), y.as<T>(), scale.as<const T>(), b, p.rows,
                                       static_cast<int>(p.cols), lanes, p.epsilon);
  };
  switch (perLane) {
    case 1:
      go(layerNormPacked<T, 1>);
      break;
    case 2:
      go(layerNormPacked<T, 2>);
      break;
    case 3:
      go(layerNormPacked<T, 3>);
      break;
    default:
      go(layerNormPacked<T, 4>);
      break;
  }
}

}  // namespace

bool launchLayerNormPacked(const DeviceTensor& x, DeviceTensor& y, const DeviceTensor& scale,
                           const DeviceTensor* bias, const PackedLayerNorm& p,
                           cudaStream_t stream) {
  if (x.type != DataType::kFloat16 && x.type != DataType::kBFloat16) return false;
  if (p.cols % 8 != 0 || p.cols > 1024 || p.wantsStatistics) return false;
  if (!p.scaleDirect || !p.biasDirect) return false;
  if (p.rows * 32 > int64_t{0x7fffffff} * 256) return false;  // the grid's limit
  for (const void* ptr : {static_cast<const void*>(x.data), static_cast<const void*>(y.data),
                          static_cast<const void*>(scale.data),
                          bias ? static_cast<const void*>(bias->data) : nullptr})
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return false;
  const int packs = static_cast<int>(p.cols / 8);
  int lanes = 1;
  while (lanes * 4 < packs) lanes *= 2;  // <= 32: packs <= 128
  const int perLane = (packs + lanes - 1) / lanes;
  if (x.type == DataType::kFloat16)
    launchPacked<__half>(x, y, scale, bias, p, lanes, perLane, stream);
  else
    launchPacked<__nv_bfloat16>(x, y, scale, bias, p, lanes, perLane, stream);
  return true;
}

}  // namespace kiln::cuda
