// Kernels of the CUDA Fp8MatMul (contract: fp8_matmul.h). E4M3 conversions go through
// cuda_fp8.h's __nv_cvt_float_to_fp8 with __NV_SATFINITE: round to nearest even,
// out-of-range values and infinities to +-448, NaN to NaN, as the CPU reference's
// floatToFp8E4M3(v, saturate = true) does. The quotient x / scale is IEEE-rounded
// (__fdiv_rn), so both backends quantize the same float.
#include <cuda_fp8.h>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/fp8_matmul.h"

namespace kiln::cuda {
namespace {

__device__ __forceinline__ float loadFloat(const void* p, int type, int64_t i) {
  switch (static_cast<DataType>(type)) {
    case DataType::kFloat16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case DataType::kBFloat16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ uint8_t toE4M3(float v) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

__global__ void packFp8InputKernel(const void* x, int xType, float scale, int64_t rows,
                                   int64_t depth, int64_t kPadded, uint8_t* a) {
  const int64_t total = rows * kPadded;
  const bool codes = static_cast<DataType>(xType) == DataType::kFp8E4M3;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / kPadded, k = i % kPadded;
    uint8_t q = 0;
    if (k < depth) {
      const int64_t at = r * depth + k;
      q = codes ? static_cast<const uint8_t*>(x)[at]
                : toE4M3(__fdiv_rn(loadFloat(x, xType, at), scale));
    }
    a[i] = q;
  }
}

__global__ void fp8EpilogueKernel(Fp8Epilogue e) {
  const int64_t total = e.rows * e.cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / e.cols, c = i % e.cols;
    float v = loadFloat(e.d, static_cast<int>(e.dType), r * e.dStride + c);
    if (e.bias) v += e.bias[c];
    if (e.relu) v = v < 0.f ? 0.f : v;  // NaN stays NaN
    switch (e.yType) {
      case DataType::kFp8E4M3:
        static_cast<uint8_t*>(e.y)[i] = toE4M3(__fdiv_rn(v, e.yScale));
        break;
      case DataType::kFloat16:
        static_cast<__half*>(e.y)[i] = __float2half_rn(v);
        break;
      case DataType::kBFloat16:
        static_cast<__nv_bfloat16*>(e.y)[i] = __float2bfloat16_rn(v);
        break;
      default:
        static_cast<float*>(e.y)[i] = v;
    }
  }
}

}  // namespace

Status packFp8Input(const void* x, DataType xType, float scale, int64_t rows, int64_t depth,
                    int64_t kPadded, uint8_t* a, cudaStream_t stream) {
  const int64_t total = rows * kPadded;
  if (total == 0) return Status::ok();
  packFp8InputKernel<<<gridFor(total), kBlockSize, 0, stream>>>(x, static_cast<int>(xType), scale,
                                                                rows, depth, kPadded, a);
  KILN_CUDA_CHECK_LAUNCH("packFp8InputKernel");
  return Status::ok();
}

Status applyFp8Epilogue(const Fp8Epilogue& e, cudaStream_t stream) {
  const int64_t total = e.rows * e.cols;
  if (total == 0) return Status::ok();
  fp8EpilogueKernel<<<gridFor(total), kBlockSize, 0, stream>>>(e);
  KILN_CUDA_CHECK_LAUNCH("fp8EpilogueKernel");
  return Status::ok();
}

}  // namespace kiln::cuda
