// Kernels of the CUDA INT8 layers (contract: int8_layers.h). The element type of an
// input is switched at run time inside each kernel (a uniform branch), as
// quantize_impl.cu does, to keep one kernel per step.
#include <cmath>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/epilogue_activation.cuh"
#include "backends/cuda/ops/int8_layers.h"

namespace kiln::cuda {
namespace {

struct DeviceInput {
  const void* data;
  int type;  // DataType code
  int quantizedUnsigned;
  float scale;
  int32_t zeroPoint;
  int32_t offset;
};

DeviceInput deviceInput(const Int8Input& x) {
  return {x.data,
          static_cast<int>(x.type),
          x.quantizedType == DataType::kUInt8 ? 1 : 0,
          x.scale,
          x.zeroPoint,
          x.offset()};
}

// q' = q - offset of element i: quantized here (round half to even, saturate) from
// float storage, or read as stored.
__device__ __forceinline__ int8_t loadShifted(const DeviceInput& x, int64_t i) {
  int32_t q;
  switch (static_cast<DataType>(x.type)) {
    case DataType::kInt8:
      q = static_cast<const int8_t*>(x.data)[i];
      break;
    case DataType::kUInt8:
      q = static_cast<const uint8_t*>(x.data)[i];
      break;
    default: {
      float v;
      if (static_cast<DataType>(x.type) == DataType::kFloat16)
        v = __half2float(static_cast<const __half*>(x.data)[i]);
      else if (static_cast<DataType>(x.type) == DataType::kBFloat16)
        v = __bfloat162float(static_cast<const __nv_bfloat16*>(x.data)[i]);
      else
        v = static_cast<const float*>(x.data)[i];
      const float lo = x.quantizedUnsigned ? 0.f : -128.f, hi = x.quantizedUnsigned ? 255.f : 127.f;
      q = static_cast<int32_t>(fminf(fmaxf(rintf(v / x.scale) + x.zeroPoint, lo), hi));
    }
  }
  return static_cast<int8_t>(q - x.offset);
}

__global__ void packConvolutionKernel(DeviceInput x, Int8ConvShape s, int64_t g, int64_t kPadded,
                                      int8_t* a) {
  const int64_t cg = s.channels / s.group;
  const int64_t depth = cg * s.kernelH * s.kernelW;
  const int64_t spatial = s.outHeight * s.outWidth;
  const int64_t total = s.batch * spatial * kPadded;
  const int8_t padding = static_cast<int8_t>(x.zeroPoint - x.offset);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i % kPadded, row = i / kPadded;
    if (k >= depth) {
      a[i] = padding;
      continue;
    }
    const int64_t n = row / spatial, p = row % spatial;
    const int64_t oh = p / s.outWidth, ow = p % s.outWidth;
    const int64_t c = k / (s.kernelH * s.kernelW), kk = k % (s.kernelH * s.kernelW);
    const int64_t ih = oh * s.strideH - s.padTop + (kk / s.kernelW) * s.dilationH;
    const int64_t iw = ow * s.strideW - s.padLeft + (kk % s.kernelW) * s.dilationW;
    if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) {
      a[i] = padding;
      continue;
    }
    const int64_t channel = g * cg + c;
    a[i] = loadShifted(x, ((n * s.channels + channel) * s.height + ih) * s.width + iw);
  }
}

__global__ void packMatrixKernel(DeviceInput x, int64_t rows, int64_t depth, int64_t kPadded,
                                 int8_t* a) {
  const int64_t total = rows * kPadded;
  const int8_t padding = static_cast<int8_t>(x.zeroPoint - x.offset);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i % kPadded, r = i / kPadded;
    a[i] = k < depth ? loadShifted(x, r * depth + k) : padding;
  }
}

constexpr int kTile = 16;

// acc[r, c] = sum_k a[r, k] * w[c, k] with 16x16 shared-memory tiles.
__global__ void int8GemmTiledKernel(const int8_t* a, const int8_t* w, int32_t* acc, int64_t rows,
                                    int64_t cols, int64_t k) {
  __shared__ int32_t as[kTile][kTile + 1];
  __shared__ int32_t ws[kTile][kTile + 1];
  const int64_t r = blockIdx.y * int64_t(kTile) + threadIdx.y;
  const int64_t c = blockIdx.x * int64_t(kTile) + threadIdx.x;
  int32_t sum = 0;
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    const int64_t ka = k0 + threadIdx.x, kw = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = r < rows && ka < k ? a[r * k + ka] : 0;
    const int64_t wc = blockIdx.x * int64_t(kTile) + threadIdx.x;
    ws[threadIdx.y][threadIdx.x] = wc < cols && kw < k ? w[wc * k + kw] : 0;
    __syncthreads();
    for (int j = 0; j < kTile; ++j) sum += as[threadIdx.y][j] * ws[j][threadIdx.x];
    __syncthreads();
  }
  if (r < rows && c < cols) acc[r * cols + c] = sum;
}

__device__ __forceinline__ float loadFloat(const void* p, DataType type, int64_t i) {
  if (type == DataType::kFloat16) return __half2float(static_cast<const __half*>(p)[i]);
  if (type == DataType::kBFloat16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

__global__ void int8EpilogueKernel(Int8Epilogue e) {
  const int64_t total = e.rows * e.cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / e.cols, c = i % e.cols;
    const int64_t out =
        e.spatial == 0
            ? r * e.cols + c
            : ((r / e.spatial) * e.yChannels + e.channelOffset + c) * e.spatial + r % e.spatial;
    const int64_t exact =
        static_cast<int64_t>(e.acc[i]) - static_cast<int64_t>(e.inputZero) * e.weightSum[c];
    float v = static_cast<float>(static_cast<double>(exact) * e.multiplier[c]) + e.bias[c];
    if (e.z)
      v += e.zType == DataType::kInt8 ? e.zScale * static_cast<const int8_t*>(e.z)[out]
                                      : loadFloat(e.z, e.zType, out);
    v = applyEpilogueActivation(v, e.activation.activation, e.activation.alpha, e.activation.beta);
    if (e.quantized) {
      const bool u = e.yType == DataType::kUInt8;
      const float q =
          fminf(fmaxf(rintf(v / e.yScale) + e.yZeroPoint, u ? 0.f : -128.f), u ? 255.f : 127.f);
      if (u)
        static_cast<uint8_t*>(e.y)[out] = static_cast<uint8_t>(q);
      else
        static_cast<int8_t*>(e.y)[out] = static_cast<int8_t>(q);
    } else if (e.yType == DataType::kFloat16) {
      static_cast<__half*>(e.y)[out] = __float2half_rn(v);
    } else if (e.yType == DataType::kBFloat16) {
      static_cast<__nv_bfloat16*>(e.y)[out] = __float2bfloat16_rn(v);
    } else {
      static_cast<float*>(e.y)[out] = v;
    }
  }
}

}  // namespace

Status packConvolutionInput(const Int8Input& x, const Int8ConvShape& s, int64_t g, int64_t kPadded,
                            int8_t* a, cudaStream_t stream) {
  const int64_t total = s.batch * s.outHeight * s.outWidth * kPadded;
  if (total == 0) return Status::ok();
  packConvolutionKernel<<<gridFor(total), kBlockSize, 0, stream>>>(deviceInput(x), s, g, kPadded,
                                                                   a);
  KILN_CUDA_CHECK_LAUNCH("packConvolutionKernel");
  return Status::ok();
}

Status packMatrixInput(const Int8Input& x, int64_t rows, int64_t depth, int64_t kPadded, int8_t* a,
                       cudaStream_t stream) {
  if (rows * kPadded == 0) return Status::ok();
  packMatrixKernel<<<gridFor(rows * kPadded), kBlockSize, 0, stream>>>(deviceInput(x), rows, depth,
                                                                       kPadded, a);
  KILN_CUDA_CHECK_LAUNCH("packMatrixKernel");
  return Status::ok();
}

Status int8GemmTiled(const int8_t* a, const int8_t* w, int32_t* acc, int64_t rows, int64_t cols,
                     int64_t k, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return Status::ok();
  const dim3 block(kTile, kTile);
  const int64_t gridY = (rows + kTile - 1) / kTile;
  if (gridY > 65535) return unsupported("int8 tiled GEMM: more than 65535 row tiles");
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>(gridY));
  int8GemmTiledKernel<<<grid, block, 0, stream>>>(a, w, acc, rows, cols, k);
  KILN_CUDA_CHECK_LAUNCH("int8GemmTiledKernel");
  return Status::ok();
}

Status applyInt8Epilogue(const Int8Epilogue& e, cudaStream_t stream) {
  const int64_t total = e.rows * e.cols;
  if (total == 0) return Status::ok();
  int8EpilogueKernel<<<gridFor(total), kBlockSize, 0, stream>>>(e);
  KILN_CUDA_CHECK_LAUNCH("int8EpilogueKernel");
  return Status::ok();
}

}  // namespace kiln::cuda
