// Device half of the quantization kernels (contract: quantize_impl.h; host half, op
// contract and checks: quantize.cpp): QuantizeLinear, DequantizeLinear and the three
// steps of DynamicQuantizeLinear.
//
// Values are read as float like the CPU's readFloats; integer targets round half to even
// (rint) and saturate; float8 (e4m3fn, e5m2) and float4e2m1 codes use device ports of
// common/data_type.cpp's converters (nearest-code search, ties to the even code).
// int4/uint4/int2/uint2 are stored unpacked, one value per byte, like the CPU. Element
// types are switched at run time inside one kernel per op (uniform branches) to keep
// compile time low.
#include <algorithm>
#include <cmath>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/quantize_common.cuh"
#include "backends/cuda/ops/quantize_common.h"
#include "backends/cuda/ops/quantize_impl.h"

namespace kiln::cuda {
namespace {

using namespace qz;

constexpr size_t kAlign = 256;

size_t alignUp(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// ---- Element codecs (device ports of common/data_type.cpp) -------------------------

// The nearest code to |value| among 0..maxCode (ties to the even code), with value's sign.
__device__ uint8_t encodeNearest(float value, bool e4m3, int maxCode) {
  const float mag = fabsf(value);
  uint8_t best = 0;
  float bestErr = INFINITY;
  for (int code = 0; code <= maxCode; ++code) {
    const uint8_t c = static_cast<uint8_t>(code);
    const float decoded = e4m3 ? fp8E4M3ToFloatDev(c) : fp8E5M2ToFloatDev(c);
    const float err = fabsf(decoded - mag);
    if (err < bestErr || (err == bestErr && (code & 1) == 0 && (best & 1) == 1)) {
      bestErr = err;
      best = c;
    }
  }
  return best | (signbit(value) ? 0x80 : 0);
}

__device__ uint8_t floatToFp8E4M3Dev(float value, bool saturate) {
  if (isnan(value)) return 0x7f;
  if (isinf(value) || fabsf(value) > 448.0f) {
    if (saturate || !isinf(value)) {
      if (!saturate && fabsf(value) >= 464.0f) return (value < 0 ? 0x80 : 0) | 0x7f;
      return (value < 0 ? 0x80 : 0) | 0x7e;
    }
    return (value < 0 ? 0x80 : 0) | 0x7f;
  }
  return encodeNearest(value, true, 0x7e);
}

__device__ uint8_t floatToFp8E5M2Dev(float value, bool saturate) {
  if (isnan(value)) return 0x7f;
  const uint8_t sign = value < 0 ? 0x80 : 0;
  if (isinf(value)) return sign | (saturate ? 0x7b : 0x7c);
  if (fabsf(value) > 57344.0f) {
    if (saturate) return sign | 0x7b;
    return fabsf(value) >= 61440.0f ? (sign | 0x7c) : (sign | 0x7b);
  }
  return encodeNearest(value, false, 0x7b);
}

__device__ uint8_t floatToFloat4E2M1Dev(float value) {
  if (isnan(value)) return 0x8;
  const uint8_t sign = signbit(value) ? 0x8 : 0;
  const float a = fabsf(value);
  const float kMidpoints[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  uint8_t code = 0;
  while (code < 7 && a > kMidpoints[code]) ++code;
  if (code < 7 && a == kMidpoints[code] && (code & 1)) ++code;
  return sign | code;
}

// Element i of a float tensor of `type` from float (round to nearest even).
__device__ void storeFloat(void* p, DataType type, int64_t i, float v) {
  switch (type) {
    case DataType::kFloat16:
      static_cast<__half*>(p)[i] = __float2half_rn(v);
      break;
    case DataType::kBFloat16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
      break;
    case DataType::kFloat64:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      break;
    default:
      static_cast<float*>(p)[i] = v;
      break;
  }
}

// Element i of an integer tensor from a value already rounded and clamped to its range.
__device__ void storeInteger(void* p, DataType type, int64_t i, double q) {
  switch (type) {
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(q);
      break;
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(q);
      break;
    case DataType::kUInt16:
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(q);
      break;
    default:
      static_cast<int16_t*>(p)[i] = static_cast<int16_t>(q);
      break;
  }
}

// ---- Scale layout -------------------------------------------------------------------

// Maps an element of x to the index of its scale / zero point (the layout:
// ops/quantize_params.h, as the CPU's).
struct QuantLayout : ops::QuantLayout {
  __device__ int64_t index(int64_t i) const {
    if (kind == kTensor) return 0;
    const int64_t a = (i / inner) % axisDim;
    if (kind == kAxis) return a;
    const int64_t outer = i / (inner * axisDim);
    return (outer * scaleAxisDim + a / blockSize) * inner + i % inner;
  }
};

// ---- QuantizeLinear / DequantizeLinear ----------------------------------------------

struct QuantParams {
  const void* x = nullptr;
  DataType xType = DataType::kUndefined;
  const void* scale = nullptr;
  DataType scaleType = DataType::kUndefined;
  const void* zeroPoint = nullptr;  // nullptr: zero
  DataType zeroType = DataType::kUndefined;
  void* y = nullptr;
  DataType yType = DataType::kUndefined;
  QuantLayout layout;
  double lo = 0, hi = 0;
  bool saturate = true;
  int64_t n = 0;
};

// The kernels' copy of the launch arguments (the layout with its device index).
QuantParams quantParams(const QuantizeLaunch& a) {
  QuantParams p;
  p.x = a.x;
  p.xType = a.xType;
  p.scale = a.scale;
  p.scaleType = a.scaleType;
  p.zeroPoint = a.zeroPoint;
  p.zeroType = a.zeroType;
  p.y = a.y;
  p.yType = a.yType;
  static_cast<ops::QuantLayout&>(p.layout) = a.layout;
  p.lo = a.lo;
  p.hi = a.hi;
  p.saturate = a.saturate;
  p.n = a.n;
  return p;
}

__global__ void quantizeKernel(QuantParams p) {
  const bool isInt = !isFloatCode(p.yType);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = p.layout.index(i);
    const float v = __fdiv_rn(loadAsFloat(p.x, p.xType, i), loadAsFloat(p.scale, p.scaleType, s));
    uint8_t* bytes = static_cast<uint8_t*>(p.y);
    if (isInt) {
      const float zp = p.zeroPoint ? loadAsFloat(p.zeroPoint, p.zeroType, s) : 0.0f;
      double q = __dadd_rn(rint(static_cast<double>(v)), static_cast<double>(zp));
      if (isnan(q)) q = 0.0;
      q = q < p.lo ? p.lo : (p.hi < q ? p.hi : q);
      storeInteger(p.y, p.yType, i, q);
    } else if (p.yType == DataType::kFloat4E2M1) {
      bytes[i] = floatToFloat4E2M1Dev(v);  // always saturates
    } else if (p.yType == DataType::kFp8E4M3) {
      bytes[i] = floatToFp8E4M3Dev(v, p.saturate);
    } else {
      bytes[i] = floatToFp8E5M2Dev(v, p.saturate);
    }
  }
}

__global__ void dequantizeKernel(QuantParams p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = p.layout.index(i);
    const float x = loadAsFloat(p.x, p.xType, i);
    const float zp = p.zeroPoint ? loadAsFloat(p.zeroPoint, p.zeroType, s) : 0.0f;
    const float scale = loadAsFloat(p.scale, p.scaleType, s);
    storeFloat(p.y, p.yType, i, __fmul_rn(__fsub_rn(x, zp), scale));
  }
}

// The per-tensor QuantizeLinear to int8/uint8 that INT8 engines run between their
// layers: V elements per thread (16 bytes of float storage in, V bytes out), one
// scale and zero point loaded once. Same arithmetic as quantizeKernel: x / scale
// rounded half to even, plus the zero point, saturated; NaN becomes the zero point's
// 0 as there (NaN -> 0 before saturation).
template <class T, class Q, int V>
__global__ void __launch_bounds__(kBlockSize)
    quantizePackedKernel(const T* __restrict__ x, const void* scale, DataType scaleType,
                         const void* zeroPoint, DataType zeroType, Q* __restrict__ y, int64_t packs,
                         float lo, float hi) {
  struct alignas(sizeof(T) * V) In {
    T v[V];
  };
  struct alignas(V) Out {
    Q v[V];
  };
  const float s = loadAsFloat(scale, scaleType, 0);
  const float zp = zeroPoint ? loadAsFloat(zeroPoint, zeroType, 0) : 0.0f;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < packs; p += step) {
    const In in = reinterpret_cast<const In*>(x)[p];
    Out out;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float q = rintf(__fdiv_rn(toFloat(in.v[j]), s)) + zp;
      if (isnan(q)) q = 0.0f;
      out.v[j] = static_cast<Q>(fminf(fmaxf(q, lo), hi));
    }
    reinterpret_cast<Out*>(y)[p] = out;
  }
}

template <class T>
Status launchPackedQuantize(const QuantParams& p, cudaStream_t stream) {
  constexpr int kPack = 16 / sizeof(T);
  const int64_t packs = p.n / kPack;
  const auto* x = static_cast<const T*>(p.x);
  const float lo = static_cast<float>(p.lo), hi = static_cast<float>(p.hi);
  if (p.yType == DataType::kInt8)
    quantizePackedKernel<T, int8_t, kPack><<<gridFor(packs), kBlockSize, 0, stream>>>(
        x, p.scale, p.scaleType, p.zeroPoint, p.zeroType, static_cast<int8_t*>(p.y), packs, lo, hi);
  else
    quantizePackedKernel<T, uint8_t, kPack><<<gridFor(packs), kBlockSize, 0, stream>>>(
        x, p.scale, p.scaleType, p.zeroPoint, p.zeroType, static_cast<uint8_t*>(p.y), packs, lo,
        hi);
  KILN_CUDA_CHECK_LAUNCH("quantizePackedKernel");
  return Status::ok();
}

// True when `p` takes the packed kernel: per tensor, 16-bit or 32-bit float storage in,
// int8/uint8 out, whole 16-byte packs, aligned pointers.
bool packedQuantize(const QuantParams& p) {
  if (p.layout.kind != 0 || (p.yType != DataType::kInt8 && p.yType != DataType::kUInt8))
    return false;
  const int64_t width = p.xType == DataType::kFloat32                                       ? 4
                        : (p.xType == DataType::kFloat16 || p.xType == DataType::kBFloat16) ? 2
                                                                                            : 0;
  if (width == 0 || p.n % (16 / width) != 0) return false;
  return reinterpret_cast<uintptr_t>(p.x) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(p.y) % (16 / width) == 0;
}

}  // namespace

Status launchQuantize(const QuantizeLaunch& args, cudaStream_t stream) {
  const QuantParams p = quantParams(args);
  if (packedQuantize(p)) {
    switch (p.xType) {
      case DataType::kFloat32:
        return launchPackedQuantize<float>(p, stream);
      case DataType::kFloat16:
        return launchPackedQuantize<__half>(p, stream);
      default:
        return launchPackedQuantize<__nv_bfloat16>(p, stream);
    }
  }
  quantizeKernel<<<gridFor(p.n), kBlockSize, 0, stream>>>(p);
  KILN_CUDA_CHECK_LAUNCH("quantizeKernel");
  return Status::ok();
}

Status launchDequantize(const QuantizeLaunch& args, cudaStream_t stream) {
  const QuantParams p = quantParams(args);
  dequantizeKernel<<<gridFor(p.n), kBlockSize, 0, stream>>>(p);
  KILN_CUDA_CHECK_LAUNCH("dequantizeKernel");
  return Status::ok();
}

// ---- DynamicQuantizeLinear ----------------------------------------------------------

namespace {

constexpr int kMinMaxBlocks = 256;

// The CPU's std::min / std::max folds: NaN never replaces the running value.
__device__ __forceinline__ float minFold(float m, float v) {
  return v < m ? v : m;
}
__device__ __forceinline__ float maxFold(float m, float v) {
  return m < v ? v : m;
}

// Per block: min and max of x folded with 0 into partial[2 * block], partial[2 * block + 1].
__global__ void __launch_bounds__(kBlockSize)
    minMaxPartialKernel(const void* x, DataType type, int64_t n, float* partial) {
  __shared__ float mins[kBlockSize], maxs[kBlockSize];
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = loadAsFloat(x, type, i);
    lo = minFold(lo, v);
    hi = maxFold(hi, v);
  }
  mins[threadIdx.x] = lo;
  maxs[threadIdx.x] = hi;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      mins[threadIdx.x] = minFold(mins[threadIdx.x], mins[threadIdx.x + stride]);
      maxs[threadIdx.x] = maxFold(maxs[threadIdx.x], maxs[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = mins[0];
    partial[2 * blockIdx.x + 1] = maxs[0];
  }
}

// One thread: folds the partials, writes params = {scale, zero point} and the optional
// scale / zero point outputs.
__global__ void dynamicParamsKernel(const float* partial, int blocks, float* params, void* scaleOut,
                                    DataType scaleType, uint8_t* zeroOut) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  float lo = 0.0f, hi = 0.0f;
  for (int b = 0; b < blocks; ++b) {
    lo = minFold(lo, partial[2 * b]);
    hi = maxFold(hi, partial[2 * b + 1]);
  }
  const float scale = __fdiv_rn(hi == lo ? 1.0f : __fsub_rn(hi, lo), 255.0f);
  float z = __fsub_rn(0.0f, __fdiv_rn(lo, scale));
  z = z < 0.0f ? 0.0f : (255.0f < z ? 255.0f : z);
  const float zero = rintf(z);
  params[0] = scale;
  params[1] = zero;
  if (scaleOut) storeFloat(scaleOut, scaleType, 0, scale);
  if (zeroOut) zeroOut[0] = static_cast<uint8_t>(zero);
}

__global__ void dynamicQuantizeKernel(const void* x, DataType type, int64_t n, const float* params,
                                      uint8_t* y) {
  const float scale = params[0], zero = params[1];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float q = __fadd_rn(rintf(__fdiv_rn(loadAsFloat(x, type, i), scale)), zero);
    if (isnan(q)) q = 0.0f;
    q = q < 0.0f ? 0.0f : (255.0f < q ? 255.0f : q);
    y[i] = static_cast<uint8_t>(q);
  }
}

// Blocks of the min / max pass over n elements.
int minMaxBlocks(int64_t n) {
  return static_cast<int>(std::min<int64_t>(gridFor(n), kMinMaxBlocks));
}

// The partials' bytes, padded so the two params after them are aligned.
size_t partialBytes(int blocks) {
  return alignUp(sizeof(float) * 2 * blocks);
}

}  // namespace

size_t dynamicQuantizeWorkspaceBytes(int64_t n) {
  return partialBytes(minMaxBlocks(n)) + kAlign;
}

Status launchDynamicQuantize(const DynamicQuantizeLaunch& args, cudaStream_t stream) {
  const int64_t n = args.n;
  const int blocks = minMaxBlocks(n);
  const size_t partialSize = partialBytes(blocks);
  float* partial = static_cast<float*>(args.workspace);
  float* params = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + partialSize);
  minMaxPartialKernel<<<blocks, kBlockSize, 0, stream>>>(args.x, args.xType, n, partial);
  KILN_CUDA_CHECK_LAUNCH("minMaxPartialKernel");
  dynamicParamsKernel<<<1, 32, 0, stream>>>(partial, blocks, params, args.scaleOut, args.scaleType,
                                            args.zeroOut);
  KILN_CUDA_CHECK_LAUNCH("dynamicParamsKernel");
  if (n == 0) return Status::ok();
  dynamicQuantizeKernel<<<gridFor(n), kBlockSize, 0, stream>>>(args.x, args.xType, n, params,
                                                               args.y);
  KILN_CUDA_CHECK_LAUNCH("dynamicQuantizeKernel");
  return Status::ok();
}

}  // namespace kiln::cuda
