// Pooling, resizing and tensor generators on the GPU.
//
// Contract: every kernel here matches the CPU reference kernel of the same op
// (engine/backends/cpu/ops/pool.cpp, resize.cpp, shape_ops.cpp, generator_ops.cpp,
// selection_ops.cpp): the same opset ranges, attribute defaults, output shapes, error
// messages and arithmetic order where it decides results.
//  - MaxPool / AveragePool / LpPool (1-3 spatial axes): one thread per output
//    element walks its window in the CPU's order, so MaxPool's value and Indices
//    (first maximum, row- or column-major) are exact. Sums are in float (double for
//    float64 data). MaxPool also pools int8 / uint8 (compared in float, exactly; an
//    empty window gives the type's lowest, as the CPU's). GlobalAveragePool / GlobalMaxPool /
//    GlobalLpPool: one warp (small planes) or one block (large planes) reduces each (n, c) plane.
//  - Resize (10+) and Upsample (7-10): coordinates, nearest indices and interpolation
//    taps are computed on the device in double exactly as the CPU does (no fused
//    multiply-adds where they could move a coordinate). Nearest gathers raw elements
//    of any fixed-size type; linear / cubic run one separable pass per resized axis
//    in float (double for float64), like the CPU. scales / sizes / roi come from
//    hostInput (free for constants).
//  - DepthToSpace / SpaceToDepth (6-D transpose) and Trilu move bytes (dispatch on
//    element size); Trilu reads k on the device. Range, ConstantOfShape, EyeLike and
//    OneHot compute their shapes on the host; the fill values are converted on the
//    host with castTensor (the CPU's conversion) and written as raw bytes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/pool_channels_last.h"
#include "ir/channels_last.h"

namespace kiln::cuda {
namespace {

#define KILN_POOL_GRID_LOOP(i, n)                                           \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

constexpr int64_t kMaxOutputElements = int64_t{1} << 32;  // as the CPU kernels

// ------------------------------------------------------------------ common helpers

// int8 / uint8 (MaxPool only: fold_qdq pools quantized values) compare in float,
// exactly.
template <class T>
struct PoolCompute {
  using type = typename ComputeType<T>::type;
};
template <>
struct PoolCompute<int8_t> {
  using type = float;
};
template <>
struct PoolCompute<uint8_t> {
  using type = float;
};
template <class T>
using AccOf = typename PoolCompute<T>::type;

// Loads / stores a float storage element in its compute type (float, or double for
// float64; device_common's toFloat/fromFloat would round doubles to float).
template <class T>
__device__ __forceinline__ AccOf<T> toAcc(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return toFloat(v);
  }
}
template <class T>
__device__ __forceinline__ T fromAcc(AccOf<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return fromFloatSaturating<T>(v);  // int8 / uint8 MaxPool: exact, saturated
  }
}

__device__ __forceinline__ float mathAbs(float v) {
  return fabsf(v);
}
__device__ __forceinline__ double mathAbs(double v) {
  return fabs(v);
}
__device__ __forceinline__ float mathPow(float a, float b) {
  return powf(a, b);
}
__device__ __forceinline__ double mathPow(double a, double b) {
  return pow(a, b);
}
__device__ __forceinline__ float mathSqrt(float v) {
  return sqrtf(v);
}
__device__ __forceinline__ double mathSqrt(double v) {
  return sqrt(v);
}

__host__ __device__ __forceinline__ int64_t clampIndex(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// Tensor::valueAsInt64 on the device: integers as they are, floats truncated
// (non-finite -> 0, saturating at +-9.2e18). Used for OneHot indices and Trilu's k.
__device__ __forceinline__ int64_t floatToInt64(double v) {
  if (!isfinite(v)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}
__device__ int64_t loadAsInt64(const void* data, DataType type, int64_t i) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
      return static_cast<const int8_t*>(data)[i];
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
    case DataType::kBool:
      return static_cast<const uint8_t*>(data)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(data)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(data)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(data)[i];
    case DataType::kUInt32:
      return static_cast<const uint32_t*>(data)[i];
    case DataType::kInt64:
      return static_cast<const int64_t*>(data)[i];
    case DataType::kUInt64:
      return static_cast<int64_t>(static_cast<const uint64_t*>(data)[i]);
    case DataType::kFloat32:
      return floatToInt64(static_cast<const float*>(data)[i]);
    case DataType::kFloat64:
      return floatToInt64(static_cast<const double*>(data)[i]);
    case DataType::kFloat16:
      return floatToInt64(__half2float(static_cast<const __half*>(data)[i]));
    case DataType::kBFloat16:
      return floatToInt64(__bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]));
    default:
      return 0;
  }
}
// The types loadAsInt64 reads.
bool isDeviceIndexType(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
    case DataType::kBool:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return true;
    default:
      return false;
  }
}

bool isFloatData(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64;
}

size_t alignUp(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

Status requireInputs(const GpuKernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.hasInput(i)) return ctx.error("required input " + std::to_string(i) + " is missing");
  }
  return Status::ok();
}

// Error naming `what` when `shape` has a negative dim or more than kMaxOutputElements.
Status checkElementCount(const GpuKernelContext& ctx, const Shape& shape, const char* what) {
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 0) return ctx.error(std::string(what) + " has a negative dim: " + shapeToString(shape));
    if (d != 0 && total > kMaxOutputElements / d) {
      return ctx.error(std::string(what) + " " + shapeToString(shape) + " is too large");
    }
    total *= d;
  }
  return Status::ok();
}

Status normalizeAxis(const GpuKernelContext& ctx, int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

// Element 0 of a host tensor as raw bytes of T's size (byte-size dispatch).
template <class T>
T firstElementBits(const Tensor& t) {
  T v{};
  std::memcpy(&v, t.rawData(), sizeof(T));
  return v;
}

// ------------------------------------------------------------------ support predicates

DataType firstType(const std::vector<DataType>& types) {
  return types.empty() ? DataType::kUndefined : types[0];
}

std::string supportsPoolTypes(const Node&, const std::vector<DataType>& types) {
  const DataType t = firstType(types);
  if (t == DataType::kUndefined || isFloatData(t)) return "";
  return std::string("no GPU pooling kernel for ") + dataTypeName(t) + " inputs";
}

// MaxPool also pools int8 / uint8 (fold_qdq's quantized MaxPools, NCHW and
// channels-last); the other pools, global MaxPool included, stay float.
std::string supportsMaxPoolTypes(const Node& node, const std::vector<DataType>& types) {
  const DataType t = firstType(types);
  if (t == DataType::kInt8 || t == DataType::kUInt8) return "";
  return supportsPoolTypes(node, types);
}

std::string resizeMode(const Node& node) {
  std::string mode = node.attrString("mode", "nearest");
  return mode == "bilinear" ? "linear" : mode;
}

// Nearest moves raw elements of any fixed-size type; linear and cubic need floats.
std::string supportsResizeTypes(const Node& node, const std::vector<DataType>& types) {
  const DataType t = firstType(types);
  if (t == DataType::kUndefined) return "";
  if (t == DataType::kString || !isSupportedDataType(t))
    return std::string("no GPU resize for ") + dataTypeName(t) + " inputs";
  const std::string mode = resizeMode(node);
  if ((mode == "linear" || mode == "cubic") && !isFloatData(t))
    return std::string("no GPU ") + mode + " resize for " + dataTypeName(t) + " inputs";
  return "";
}

std::string supportsRangeTypes(const Node& node, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t == DataType::kBool) return "Range of bool";
  }
  return supportsNumericTypes(node, types);
}

std::string checkGeneratedType(DataType t) {
  if (t == DataType::kString || !isSupportedDataType(t))
    return std::string("no GPU kernel for ") + dataTypeName(t) + " outputs";
  return "";
}

std::string supportsConstantOfShape(const Node& node, const std::vector<DataType>&) {
  const Tensor* value = node.attrTensor("value");
  return value ? checkGeneratedType(value->type()) : "";
}

std::string supportsEyeLike(const Node& node, const std::vector<DataType>& types) {
  if (node.hasAttr("dtype"))
    return checkGeneratedType(static_cast<DataType>(node.attrInt("dtype", 1)));
  const DataType t = firstType(types);
  return t == DataType::kUndefined ? "" : checkGeneratedType(t);
}

std::string supportsOneHot(const Node&, const std::vector<DataType>& types) {
  const DataType indices = firstType(types);
  if (indices != DataType::kUndefined && !isDeviceIndexType(indices))
    return std::string("no GPU OneHot for ") + dataTypeName(indices) + " indices";
  for (DataType t : types) {
    if (t == DataType::kString) return "strings stay on the host";
  }
  return "";
}

std::string supportsTrilu(const Node&, const std::vector<DataType>& types) {
  if (types.size() > 1 && types[1] != DataType::kUndefined && !isDeviceIndexType(types[1]))
    return std::string("no GPU Trilu for k of type ") + dataTypeName(types[1]);
  const DataType t = firstType(types);
  return t == DataType::kString ? "strings stay on the host" : "";
}

// ================================================================== pooling

enum PoolKind : int { kPoolMax = 0, kPoolAverage = 1, kPoolLp = 2 };

// One entry per spatial axis, as the CPU's SpatialGeometry.
struct SpatialGeometry {
  std::vector<int64_t> input, kernel, strides, dilations, padsBegin, padsEnd, output;
  int rank() const { return static_cast<int>(input.size()); }
  int64_t window(int d) const { return (kernel[d] - 1) * dilations[d] + 1; }
};

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Reads an ints attribute of exactly `count` entries (or `fallback` repeated when
// absent), each at least `minValue`.
Status readAxisList(const GpuKernelContext& ctx, const char* name, size_t count, int64_t fallback,
                    int64_t minValue, std::vector<int64_t>* out) {
  if (!ctx.node().hasAttr(name)) {
    out->assign(count, fallback);
    return Status::ok();
  }
  *out = ctx.node().attrInts(name);
  if (out->size() != count) {
    return ctx.error(std::string("attribute '") + name + "' has " + std::to_string(out->size()) +
                     " entries, expected " + std::to_string(count));
  }
  for (int64_t v : *out) {
    if (v < minValue) {
      return ctx.error(std::string("attribute '") + name + "' has invalid value " +
                       std::to_string(v));
    }
  }
  return Status::ok();
}

// The CPU's readSpatialAttributes + computeForwardGeometry for pooling.
Status poolGeometry(const GpuKernelContext& ctx, const Shape& x, bool ceilMode,
                    SpatialGeometry* g) {
  if (x.size() < 3) {
    return ctx.error("input X must have rank >= 3 (N, C, spatial...), got shape " +
                     shapeToString(x));
  }
  const size_t rank = x.size() - 2;
  g->input.assign(x.begin() + 2, x.end());
  if (!ctx.node().hasAttr("kernel_shape"))
    return ctx.error("attribute 'kernel_shape' is missing or does not match the input rank");
  KILN_RETURN_IF_ERROR(readAxisList(ctx, "kernel_shape", rank, 1, 1, &g->kernel));
  KILN_RETURN_IF_ERROR(readAxisList(ctx, "strides", rank, 1, 1, &g->strides));
  KILN_RETURN_IF_ERROR(readAxisList(ctx, "dilations", rank, 1, 1, &g->dilations));
  std::vector<int64_t> pads;
  KILN_RETURN_IF_ERROR(readAxisList(ctx, "pads", rank * 2, 0, 0, &pads));
  g->padsBegin.assign(pads.begin(), pads.begin() + rank);
  g->padsEnd.assign(pads.begin() + rank, pads.end());

  const std::string autoPad = ctx.node().attrString("auto_pad", "NOTSET");
  const bool sameUpper = autoPad == "SAME_UPPER", sameLower = autoPad == "SAME_LOWER";
  const bool valid = autoPad == "VALID";
  if (!sameUpper && !sameLower && !valid && autoPad != "NOTSET" && !autoPad.empty())
    return ctx.error("attribute 'auto_pad' has unknown value '" + autoPad + "'");
  g->output.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = g->input[d], stride = g->strides[d], window = g->window(d);
    if (sameUpper || sameLower) {
      const int64_t out = (in + stride - 1) / stride;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + window - in);
      const int64_t small = total / 2;
      g->padsBegin[d] = sameUpper ? small : total - small;
      g->padsEnd[d] = total - g->padsBegin[d];
      g->output[d] = out;
      continue;
    }
    if (valid) g->padsBegin[d] = g->padsEnd[d] = 0;
    const int64_t span = in + g->padsBegin[d] + g->padsEnd[d] - window;
    if (span < 0) {
      return ctx.error("kernel window " + std::to_string(window) + " is larger than padded input " +
                       std::to_string(in + g->padsBegin[d] + g->padsEnd[d]) + " on spatial axis " +
                       std::to_string(d));
    }
    int64_t out = span / stride + 1;
    if (ceilMode) {
      out = (span + stride - 1) / stride + 1;
      // The last window must start inside the input or its leading pad.
      if ((out - 1) * stride >= in + g->padsBegin[d]) --out;
    }
    g->output[d] = out;
  }
  return Status::ok();
}

// The geometry as three axes (leading unit axes for spatial ranks 1 and 2).
struct PoolParams {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], padBegin[3], padEnd[3];
  int64_t planes = 0, inSize = 0, outSize = 0;
  int kind = kPoolMax;
  bool countIncludePad = false;
  bool columnMajor = false;  // MaxPool storage_order = 1
  double p = 2.0;
};

PoolParams makePoolParams(const SpatialGeometry& g) {
  PoolParams pp;
  const int shift = 3 - g.rank();
  for (int a = 0; a < 3; ++a) {
    const int d = a - shift;
    const bool unit = d < 0;
    pp.in[a] = unit ? 1 : g.input[d];
    pp.out[a] = unit ? 1 : g.output[d];
    pp.kernel[a] = unit ? 1 : g.kernel[d];
    pp.stride[a] = unit ? 1 : g.strides[d];
    pp.dilation[a] = unit ? 1 : g.dilations[d];
    pp.padBegin[a] = unit ? 0 : g.padsBegin[d];
    pp.padEnd[a] = unit ? 0 : g.padsEnd[d];
  }
  pp.inSize = product(g.input);
  pp.outSize = product(g.output);
  return pp;
}

// Taps [lo, hi) of a window of `count` taps at `offset` + k * stride inside [0, limit).
__device__ __forceinline__ void windowRange(int64_t offset, int64_t stride, int64_t limit,
                                            int64_t count, int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : min(count, (-offset + stride - 1) / stride);
  *hi = offset >= limit ? 0 : min(count, (limit - 1 - offset) / stride + 1);
  *hi = max(*hi, *lo);
}

// |v|^p of LpPool, exact for the common p = 1 and p = 2.
template <class A>
__device__ __forceinline__ A lpTerm(A v, A p) {
  const A a = mathAbs(v);
  return p == A(2) ? a * a : (p == A(1) ? a : mathPow(a, p));
}
template <class A>
__device__ __forceinline__ A lpRoot(A sum, A p) {
  return p == A(2) ? mathSqrt(sum) : (p == A(1) ? sum : mathPow(sum, A(1) / p));
}

// One thread per output element; the window is walked in the CPU's order.
template <class T>
__global__ void poolWindowKernel(const T* x, T* y, int64_t* indices, PoolParams pp) {
  using Acc = AccOf<T>;
  const Acc p = static_cast<Acc>(pp.p);
  const int64_t total = pp.planes * pp.outSize;
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t plane = e / pp.outSize;
    int64_t rest = e - plane * pp.outSize;
    int64_t o[3];
    o[2] = rest % pp.out[2];
    rest /= pp.out[2];
    o[1] = rest % pp.out[1];
    o[0] = rest / pp.out[1];
    int64_t start[3], lo[3], hi[3];
    int64_t count = 1;
    for (int a = 0; a < 3; ++a) {
      start[a] = o[a] * pp.stride[a] - pp.padBegin[a];
      windowRange(start[a], pp.dilation[a], pp.in[a], pp.kernel[a], &lo[a], &hi[a]);
      if (pp.countIncludePad) {
        int64_t padLo, padHi;
        windowRange(start[a] + pp.padBegin[a], pp.dilation[a],
                    pp.in[a] + pp.padBegin[a] + pp.padEnd[a], pp.kernel[a], &padLo, &padHi);
        count *= padHi - padLo;
      } else {
        count *= hi[a] - lo[a];
      }
    }
    const T* xp = x + plane * pp.inSize;
    Acc best = std::numeric_limits<Acc>::lowest();
    Acc sum = 0;
    int64_t bestIndex = -1;
    for (int64_t k0 = lo[0]; k0 < hi[0]; ++k0) {
      const int64_t i0 = start[0] + k0 * pp.dilation[0];
      for (int64_t k1 = lo[1]; k1 < hi[1]; ++k1) {
        const int64_t i1 = start[1] + k1 * pp.dilation[1];
        const T* row = xp + (i0 * pp.in[1] + i1) * pp.in[2];
        for (int64_t k2 = lo[2]; k2 < hi[2]; ++k2) {
          const int64_t i2 = start[2] + k2 * pp.dilation[2];
          const Acc v = toAcc(row[i2]);
          if (pp.kind == kPoolMax) {
            if (bestIndex < 0 || v > best) {
              best = v;
              bestIndex = pp.columnMajor ? (i2 * pp.in[1] + i1) * pp.in[0] + i0
                                         : (i0 * pp.in[1] + i1) * pp.in[2] + i2;
            }
          } else if (pp.kind == kPoolAverage) {
            sum += v;
          } else {
            sum += lpTerm(v, p);
          }
        }
      }
    }
    if (pp.kind == kPoolMax) {
      y[e] = fromAcc<T>(best);
      if (indices) indices[e] = plane * pp.inSize + (bestIndex < 0 ? 0 : bestIndex);
    } else if (pp.kind == kPoolAverage) {
      y[e] = fromAcc<T>(count > 0 ? sum / static_cast<Acc>(count) : Acc(0));
    } else {
      y[e] = fromAcc<T>(lpRoot(sum, p));
    }
  }
}

// Max that ignores NaN on either side (NaN only when both are).
template <class A>
__device__ __forceinline__ A maxIgnoringNan(A a, A b) {
  return (a != a || b > a) ? b : a;
}

template <class A>
__device__ __forceinline__ A warpCombine(A v, int kind) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const A other = __shfl_down_sync(0xffffffffu, v, offset);
    v = kind == kPoolMax ? maxIgnoringNan(v, other) : v + other;
  }
  return v;
}

// Global pooling: `warpsPerPlane` warps (1, or all of the block) reduce one plane.
// Max keeps the CPU's semantics: the first element when it is NaN, else the largest
// non-NaN element.
template <class T>
__global__ void globalPoolReduceKernel(const T* x, T* y, int64_t planes, int64_t size, int kind,
                                       double pValue, int warpsPerPlane) {
  using Acc = AccOf<T>;
  __shared__ Acc partial[32];
  const Acc p = static_cast<Acc>(pValue);
  const Acc identity = kind == kPoolMax ? std::numeric_limits<Acc>::quiet_NaN() : Acc(0);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int planesPerBlock = (blockDim.x >> 5) / warpsPerPlane;
  const int group = warp / warpsPerPlane;
  const int groupSize = warpsPerPlane * 32;
  const int groupThread = threadIdx.x - group * groupSize;
  for (int64_t plane = int64_t(blockIdx.x) * planesPerBlock + group; plane < planes;
       plane += int64_t(gridDim.x) * planesPerBlock) {
    const T* xp = x + plane * size;
    Acc acc = identity;
    for (int64_t i = groupThread; i < size; i += groupSize) {
      const Acc v = toAcc(xp[i]);
      if (kind == kPoolMax) {
        acc = maxIgnoringNan(acc, v);
      } else {
        acc += kind == kPoolAverage ? v : lpTerm(v, p);
      }
    }
    acc = warpCombine(acc, kind);
    if (warpsPerPlane > 1) {  // then the whole block holds this plane: uniform syncs
      if (lane == 0) partial[warp] = acc;
      __syncthreads();
      if (warp == 0) {
        acc = lane < warpsPerPlane ? partial[lane] : identity;
        acc = warpCombine(acc, kind);
      }
      __syncthreads();
    }
    if (groupThread == 0) {
      Acc result;
      if (kind == kPoolMax) {
        const Acc first = toAcc(xp[0]);
        result = first != first ? first : acc;
      } else if (kind == kPoolAverage) {
        result = acc / static_cast<Acc>(size);
      } else {
        result = lpRoot(acc, p);
      }
      y[plane] = fromAcc<T>(result);
    }
  }
}

// Reads LpPool's p: a float before opset 2, an int after.
double readP(const Node& node) {
  auto it = node.attributes.find("p");
  if (it == node.attributes.end()) return 2.0;
  return it->second.kind == Attribute::Kind::kFloat ? it->second.f
                                                    : static_cast<double>(it->second.i);
}

template <class T>
Status launchPoolWindow(const GpuKernelContext& ctx, const DeviceTensor& x, const DeviceTensor& y,
                        int64_t* indices, const PoolParams& pp) {
  const int64_t total = pp.planes * pp.outSize;
  poolWindowKernel<T>
      <<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), indices, pp);
  KILN_CUDA_CHECK_LAUNCH("poolWindowKernel");
  return Status::ok();
}

Status runPool(GpuKernelContext& ctx, const SpatialGeometry& g, PoolParams pp) {
  const DeviceTensor& x = ctx.input(0);
  if (g.rank() > 3) return ctx.unsupported("pooling over more than 3 spatial axes");
  Shape outShape = {x.shape[0], x.shape[1]};
  outShape.insert(outShape.end(), g.output.begin(), g.output.end());
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, outShape));
  int64_t* indices = nullptr;
  if (pp.kind == kPoolMax && ctx.wantsOutput(1)) {
    if (pp.columnMajor && g.rank() != 2)
      return ctx.unsupported("storage_order 1 needs 2 spatial axes");
    KILN_ASSIGN_OR_RETURN(DeviceTensor idx, ctx.allocateOutput(1, DataType::kInt64, outShape));
    indices = idx.as<int64_t>();
  }
  pp.planes = x.shape[0] * x.shape[1];
  if (pp.outSize == 0 || pp.planes == 0) return Status::ok();
  if (pp.inSize == 0) return ctx.error("input X has an empty spatial extent");
  if (x.type == DataType::kInt8 || x.type == DataType::kUInt8) {
    if (pp.kind != kPoolMax) return ctx.unsupported("integer pooling other than MaxPool");
    return x.type == DataType::kInt8 ? launchPoolWindow<int8_t>(ctx, x, y, indices, pp)
                                     : launchPoolWindow<uint8_t>(ctx, x, y, indices, pp);
  }
  KILN_DISPATCH_FLOAT(x.type, ctx, return launchPoolWindow<T>(ctx, x, y, indices, pp));
  return Status::ok();
}

// A channels-last MaxPool / AveragePool (ir/channels_last.h): X [N, H, W, C].
Status runChannelsLastPool(GpuKernelContext& ctx, int kind) {
  const DeviceTensor& x = ctx.input(0);
  if (x.rank() != 4) return ctx.error("a channels-last pool needs a 4-D X");
  if (kind == kPoolLp) return ctx.unsupported("channels-last LpPool");
  if (ctx.wantsOutput(1)) return ctx.unsupported("channels-last MaxPool with indices");
  const Node& node = ctx.node();
  SpatialGeometry g;
  KILN_RETURN_IF_ERROR(
      poolGeometry(ctx, toChannelsFirstShape(x.shape), node.attrInt("ceil_mode", 0) != 0, &g));
  KILN_ASSIGN_OR_RETURN(
      DeviceTensor y,
      ctx.allocateOutput(0, x.type, {x.shape[0], g.output[0], g.output[1], x.shape[3]}));
  ChannelsLastWindow p;
  p.n = x.shape[0];
  p.h = x.shape[1];
  p.w = x.shape[2];
  p.c = x.shape[3];
  p.outH = g.output[0];
  p.outW = g.output[1];
  p.kernelH = static_cast<int>(g.kernel[0]);
  p.kernelW = static_cast<int>(g.kernel[1]);
  p.strideH = static_cast<int>(g.strides[0]);
  p.strideW = static_cast<int>(g.strides[1]);
  p.dilationH = static_cast<int>(g.dilations[0]);
  p.dilationW = static_cast<int>(g.dilations[1]);
  p.padTop = static_cast<int>(g.padsBegin[0]);
  p.padLeft = static_cast<int>(g.padsBegin[1]);
  p.padBottom = static_cast<int>(g.padsEnd[0]);
  p.padRight = static_cast<int>(g.padsEnd[1]);
  p.max = kind == kPoolMax;
  p.countIncludePad = node.attrInt("count_include_pad", 0) != 0;
  if (p.n * p.outH * p.outW * p.c > 0 && p.h * p.w == 0)
    return ctx.error("input X has an empty spatial extent");
  ctx.setImplementation("kiln channels-last pool");
  return poolChannelsLast(p, x.type, x.data, y.data, ctx.stream());
}

template <int kKind>
Status poolOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  if (isChannelsLast(ctx.node())) return runChannelsLastPool(ctx, kKind);
  const Node& node = ctx.node();
  SpatialGeometry g;
  KILN_RETURN_IF_ERROR(
      poolGeometry(ctx, ctx.input(0).shape, node.attrInt("ceil_mode", 0) != 0, &g));
  PoolParams pp = makePoolParams(g);
  pp.kind = kKind;
  pp.countIncludePad = node.attrInt("count_include_pad", 0) != 0;
  pp.p = readP(node);
  pp.columnMajor = node.attrInt("storage_order", 0) == 1;
  if (kKind == kPoolLp && !(pp.p > 0)) return ctx.error("attribute 'p' must be positive");
  return runPool(ctx, g, pp);
}

template <class T>
Status launchGlobalPool(const GpuKernelContext& ctx, const DeviceTensor& x, const DeviceTensor& y,
                        int64_t planes, int64_t size, int kind, double p) {
  // A warp per plane for small planes (ResNet's 7x7), the whole block otherwise.
  const int warpsPerPlane = size <= 1024 ? 1 : kBlockSize / 32;
  const int planesPerBlock = (kBlockSize / 32) / warpsPerPlane;
  globalPoolReduceKernel<T><<<gridFor(planes, planesPerBlock), kBlockSize, 0, ctx.stream()>>>(
      x.as<const T>(), y.as<T>(), planes, size, kind, p, warpsPerPlane);
  KILN_CUDA_CHECK_LAUNCH("globalPoolReduceKernel");
  return Status::ok();
}

template <int kKind>
Status globalPoolOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  if (x.rank() < 3) return ctx.error("input X must have rank >= 3, got " + shapeToString(x.shape));
  if (isChannelsLast(ctx.node())) {  // X [N, H, W, C] -> Y [N, 1, 1, C]
    if (x.rank() != 4 || kKind == kPoolLp)
      return ctx.unsupported("channels-last global pooling other than 4-D average / max");
    KILN_ASSIGN_OR_RETURN(DeviceTensor y,
                          ctx.allocateOutput(0, x.type, {x.shape[0], 1, 1, x.shape[3]}));
    ctx.setImplementation("kiln channels-last global pool");
    return globalPoolChannelsLast(x.shape[0], x.shape[1] * x.shape[2], x.shape[3],
                                  kKind == kPoolMax, x.type, x.data, y.data, ctx.stream());
  }
  Shape outShape(x.shape.size(), 1);
  outShape[0] = x.shape[0];
  outShape[1] = x.shape[1];
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, outShape));
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t size =
      planes == 0 ? shapeNumel(Shape(x.shape.begin() + 2, x.shape.end())) : x.numel() / planes;
  if (planes == 0) return Status::ok();
  if (size == 0) return ctx.error("input X has an empty spatial extent");
  KILN_DISPATCH_FLOAT(
      x.type, ctx, return launchGlobalPool<T>(ctx, x, y, planes, size, kKind, readP(ctx.node())));
  return Status::ok();
}

// ================================================================== Resize / Upsample

enum ResizeCoordMode : int {
  kHalfPixel,
  kAsymmetric,
  kAlignCorners,
  kPytorchHalfPixel,
  kTfHalfPixelForNn,
  kHalfPixelSymmetric,
  kTfCropAndResize,
};
enum NearestMode : int {
  kRoundPreferFloor,
  kRoundPreferCeil,
  kNearestFloor,
  kNearestCeil,
  kSimple
};

// What the CPU's ResizeParams holds, resolved on the host.
struct ResizeConfig {
  std::string mode = "nearest";          // nearest, linear, cubic
  std::string coordMode = "half_pixel";  // coordinate_transformation_mode
  std::string nearestMode = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
  double extrapolation = 0.0;
  std::vector<double> scales;  // per input axis
  Shape outShape;
  std::vector<double> roi;  // [starts..., ends...] per input axis
  bool fromSizes = false;
};

int coordModeCode(const std::string& m) {
  if (m == "asymmetric") return kAsymmetric;
  if (m == "align_corners") return kAlignCorners;
  if (m == "pytorch_half_pixel") return kPytorchHalfPixel;
  if (m == "tf_half_pixel_for_nn") return kTfHalfPixelForNn;
  if (m == "half_pixel_symmetric") return kHalfPixelSymmetric;
  if (m == "tf_crop_and_resize") return kTfCropAndResize;
  return kHalfPixel;  // the CPU's fallback for any other value
}

int nearestModeCode(const std::string& m) {
  if (m == "floor") return kNearestFloor;
  if (m == "ceil") return kNearestCeil;
  if (m == "round_prefer_ceil") return kRoundPreferCeil;
  if (m == "simple") return kSimple;
  return kRoundPreferFloor;
}

// One axis's coordinate mapping; the terms that do not depend on the output
// position are computed on the host with the CPU's expressions.
struct ResizeAxis {
  int64_t inDim = 1, outDim = 1;
  double scale = 1.0;
  double length = 1.0;           // output length as scale * in (or out when from sizes)
  double symmetricOffset = 0.0;  // half_pixel_symmetric
  double roiStart = 0.0, roiEnd = 1.0;
  double cropOffset = 0.0;  // roiStart * (in - 1)
  int64_t mapOffset = 0;    // nearest: where this axis's map starts
  int64_t inStride = 1;     // nearest: element stride of the input
};

struct ResizeSetup {
  int rank = 0;
  int coordMode = kHalfPixel;
  int nearestMode = kRoundPreferFloor;
  ResizeAxis axes[kMaxRank];
};

ResizeAxis makeResizeAxis(const ResizeConfig& p, int axis, int64_t inDim, int64_t outDim) {
  ResizeAxis a;
  a.inDim = inDim;
  a.outDim = outDim;
  a.scale = p.scales[axis];
  a.length = p.fromSizes ? static_cast<double>(outDim) : a.scale * inDim;
  a.symmetricOffset = inDim / 2.0 * (1 - outDim / a.length);
  a.roiStart = p.roi[axis];
  a.roiEnd = p.roi[axis + p.scales.size()];
  a.cropOffset = a.roiStart * (inDim - 1);
  return a;
}

// The CPU's sourceCoordinate, in double. No product here feeds an addition, so the
// compiler cannot fuse a multiply-add and move a coordinate by an ulp.
__device__ double sourceCoordinate(int mode, const ResizeAxis& a, int64_t y) {
  const double yd = static_cast<double>(y);
  switch (mode) {
    case kAsymmetric:
      return yd / a.scale;
    case kAlignCorners:
      return a.length == 1 ? 0.0 : static_cast<double>(y * (a.inDim - 1)) / (a.length - 1);
    case kPytorchHalfPixel:
      return a.length == 1 ? -0.5 : (yd + 0.5) / a.scale - 0.5;
    case kTfHalfPixelForNn:
      return (yd + 0.5) / a.scale;
    case kHalfPixelSymmetric:
      return a.symmetricOffset + (yd + 0.5) / a.scale - 0.5;
    case kTfCropAndResize: {
      const double span = a.roiEnd - a.roiStart;
      const double x = a.length == 1
                           ? span * static_cast<double>(a.inDim - 1) / 2
                           : yd * span * static_cast<double>(a.inDim - 1) / (a.length - 1);
      return x + a.cropOffset;
    }
    default:
      return (yd + 0.5) / a.scale - 0.5;  // half_pixel
  }
}

__device__ int64_t nearestIndex(int mode, double scale, double x) {
  switch (mode) {
    case kNearestFloor:
      return static_cast<int64_t>(floor(x));
    case kNearestCeil:
      return static_cast<int64_t>(ceil(x));
    case kRoundPreferCeil:
      return static_cast<int64_t>(floor(x + 0.5));
    case kSimple:
      return static_cast<int64_t>(scale < 1 ? ceil(x) : trunc(x));
    default:
      return static_cast<int64_t>(ceil(x - 0.5));  // round_prefer_floor
  }
}

__device__ __forceinline__ bool outsideCrop(int mode, double x, int64_t inDim) {
  return mode == kTfCropAndResize && (x < 0 || x > static_cast<double>(inDim - 1));
}

// Nearest: the input index of every output position of every axis (-1: extrapolate).
__global__ void nearestMapKernel(ResizeSetup s, int64_t* maps, int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    int d = 0;
    while (d + 1 < s.rank && e >= s.axes[d + 1].mapOffset) ++d;
    const ResizeAxis& a = s.axes[d];
    const double x = sourceCoordinate(s.coordMode, a, e - a.mapOffset);
    maps[e] = outsideCrop(s.coordMode, x, a.inDim)
                  ? -1
                  : clampIndex(nearestIndex(s.nearestMode, a.scale, x), 0, a.inDim - 1);
  }
}

template <class T>
__global__ void nearestGatherKernel(const T* in, T* out, ResizeSetup s, const int64_t* maps, T fill,
                                    int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    int64_t rest = e, offset = 0;
    bool border = false;
    for (int d = s.rank - 1; d >= 0; --d) {
      const ResizeAxis& a = s.axes[d];
      const int64_t q = rest / a.outDim;
      const int64_t m = maps[a.mapOffset + (rest - q * a.outDim)];
      rest = q;
      border = border || m < 0;
      offset += m * a.inStride;
    }
    out[e] = border ? fill : in[offset];
  }
}

// The taps of one axis for linear / cubic.
struct TapsParams {
  ResizeAxis axis;
  int coordMode = kHalfPixel;
  bool cubic = false;
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool normalize = false;  // antialias or exclude_outside
  double kernelScale = 1.0;
  int64_t first = 0, taps = 2;
};

// The CPU's interpolationWeight; __dmul_rn keeps each product rounded as on the host.
__device__ double interpolationWeight(bool cubic, double a, double t) {
  t = fabs(t);
  if (!cubic) return fmax(0.0, 1 - t);
  if (t <= 1) return __dmul_rn(__dmul_rn(__dmul_rn(a + 2, t) - (a + 3), t), t) + 1;
  if (t < 2) {
    const double inner = __dmul_rn(__dmul_rn(a, t) - __dmul_rn(5.0, a), t) + __dmul_rn(8.0, a);
    return __dmul_rn(inner, t) - __dmul_rn(4.0, a);
  }
  return 0;
}

// The CPU's interpolationTaps: output position y reads weight[y * taps + t] *
// in[index[y * taps + t]], or the extrapolation value when outside[y].
__global__ void resizeTapsKernel(TapsParams tp, int64_t* index, double* weight, uint8_t* outside) {
  const ResizeAxis& a = tp.axis;
  KILN_POOL_GRID_LOOP(y, a.outDim) {
    const double x = sourceCoordinate(tp.coordMode, a, y);
    outside[y] = outsideCrop(tp.coordMode, x, a.inDim) ? 1 : 0;
    double base = floor(x);
    double ratio = x - base;
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    double sum = 0;
    for (int64_t t = 0; t < tp.taps; ++t) {
      const int64_t i = tp.first + t;
      const int64_t src = static_cast<int64_t>(base) + i;
      double w = interpolationWeight(tp.cubic, tp.cubicA, __dmul_rn(i - ratio, tp.kernelScale));
      if (tp.excludeOutside && (src < 0 || src >= a.inDim)) w = 0;
      sum += w;
      index[y * tp.taps + t] = clampIndex(src, 0, a.inDim - 1);
      weight[y * tp.taps + t] = w;
    }
    if (tp.normalize && sum != 0) {
      for (int64_t t = 0; t < tp.taps; ++t) weight[y * tp.taps + t] /= sum;
    }
  }
}

// One weighted pass along an axis: src [outer, inDim, inner] -> dst [outer, outDim,
// inner]. src / dst are T (the tensors) or the compute type (intermediates).
template <class T>
__global__ void resizePassKernel(const void* src, bool srcIsT, void* dst, bool dstIsT,
                                 int64_t outer, int64_t inDim, int64_t outDim, int64_t inner,
                                 int64_t taps, const int64_t* index, const double* weight,
                                 const uint8_t* outside, double extrapolation) {
  using Acc = AccOf<T>;
  const int64_t total = outer * outDim * inner;
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t r = e / inner;
    const int64_t i = e - r * inner;
    const int64_t o = r / outDim;
    const int64_t y = r - o * outDim;
    Acc sum = 0;
    if (outside[y]) {
      sum = static_cast<Acc>(extrapolation);
    } else {
      const int64_t base = o * inDim * inner + i;
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t at = base + index[y * taps + t] * inner;
        const Acc v =
            srcIsT ? toAcc(static_cast<const T*>(src)[at]) : static_cast<const Acc*>(src)[at];
        sum += static_cast<Acc>(weight[y * taps + t]) * v;
      }
    }
    if (dstIsT) {
      static_cast<T*>(dst)[e] = fromAcc<T>(sum);
    } else {
      static_cast<Acc*>(dst)[e] = sum;
    }
  }
}

// Reads a float tensor (scales, roi) as doubles; nothing when absent or empty.
Status readFloats(GpuKernelContext& ctx, size_t i, const char* what, std::vector<double>* out) {
  if (!ctx.hasInput(i)) return Status::ok();
  if (!isFloatingPoint(ctx.input(i).type))
    return ctx.error(std::string(what) + " must be a float tensor");
  if (ctx.input(i).numel() == 0) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(i));
  for (int64_t k = 0; k < t.numel(); ++k) out->push_back(t.valueAsDouble(k));
  return Status::ok();
}

// Reads an integer tensor of rank <= 1 (sizes, shape); nothing when absent or empty.
Status readInts(GpuKernelContext& ctx, size_t i, const char* what, std::vector<int64_t>* out) {
  if (!ctx.hasInput(i)) return Status::ok();
  const DeviceTensor& d = ctx.input(i);
  if (!isInteger(d.type)) {
    return ctx.error(std::string(what) + " must be an integer tensor, got " + dataTypeName(d.type));
  }
  if (d.rank() > 1)
    return ctx.error(std::string(what) + " must be 1-D, got rank " + std::to_string(d.rank()));
  if (d.numel() == 0) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(i));
  *out = t.toInt64Vector();
  return Status::ok();
}

// Output shape and per-axis scales from scales or sizes given for `axes` (the CPU's
// resolveScales, keep_aspect_ratio_policy included).
Status resolveScales(const GpuKernelContext& ctx, const std::vector<double>& scales,
                     const std::vector<int64_t>& sizes, const std::vector<int64_t>& axes,
                     ResizeConfig* p) {
  const Shape& in = ctx.input(0).shape;
  const size_t rank = in.size();
  if (scales.empty() == sizes.empty()) return ctx.error("needs exactly one of scales and sizes");
  const size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size()) {
    return ctx.error((scales.empty() ? "sizes" : "scales") + std::string(" has ") +
                     std::to_string(given) + " entries for " + std::to_string(axes.size()) +
                     " axes");
  }
  p->scales.assign(rank, 1.0);
  p->outShape = in;
  p->fromSizes = !sizes.empty();
  if (!p->fromSizes) {
    for (size_t i = 0; i < axes.size(); ++i) {
      const double length = std::floor(scales[i] * in[axes[i]]);
      if (!(scales[i] > 0) || !(length < static_cast<double>(kMaxOutputElements))) {
        return ctx.error("scales[" + std::to_string(i) + "] = " + std::to_string(scales[i]) +
                         " is not a usable positive scale");
      }
      p->scales[axes[i]] = scales[i];
      p->outShape[axes[i]] = static_cast<int64_t>(length);
    }
    return checkElementCount(ctx, p->outShape, "output");
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] < 0) return ctx.error("sizes must not be negative");
    if (in[axes[i]] == 0) return ctx.error("cannot resize an empty axis");
    p->scales[axes[i]] = static_cast<double>(sizes[i]) / in[axes[i]];
    p->outShape[axes[i]] = sizes[i];
  }
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, p->outShape, "output"));
  const std::string policy = ctx.node().attrString("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") return Status::ok();
  if (policy != "not_larger" && policy != "not_smaller") {
    return ctx.error("unknown keep_aspect_ratio_policy '" + policy + "'");
  }
  double scale = p->scales[axes[0]];
  for (int64_t axis : axes) {
    scale = policy == "not_larger" ? std::min(scale, p->scales[axis])
                                   : std::max(scale, p->scales[axis]);
  }
  p->fromSizes = false;  // the kept ratio's scale, not out/in, drives the coordinates
  for (int64_t axis : axes) {
    p->scales[axis] = scale;
    p->outShape[axis] = static_cast<int64_t>(std::floor(scale * in[axis] + 0.5));
  }
  return checkElementCount(ctx, p->outShape, "output");
}

template <class T>
Status launchNearestGather(const GpuKernelContext& ctx, const DeviceTensor& in,
                           const DeviceTensor& out, const ResizeSetup& s, const int64_t* maps,
                           const Tensor& fill) {
  const int64_t total = out.numel();
  nearestGatherKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(
      in.as<const T>(), out.as<T>(), s, maps, firstElementBits<T>(fill), total);
  KILN_CUDA_CHECK_LAUNCH("nearestGatherKernel");
  return Status::ok();
}

Status resizeNearest(GpuKernelContext& ctx, const ResizeConfig& p) {
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  if (rank > kMaxRank) return ctx.unsupported("nearest resize of rank " + std::to_string(rank));
  for (int d = 0; d < rank; ++d) {
    if (in.shape[d] == 0 && p.outShape[d] > 0) return ctx.error("cannot resize an empty axis");
  }
  if (dataTypeSize(in.type) == 0)
    return ctx.unsupported(std::string("data type ") + dataTypeName(in.type));
  const Tensor fill = castTensor(Tensor::scalarFloat(static_cast<float>(p.extrapolation)), in.type);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, p.outShape));
  if (out.numel() == 0) return Status::ok();

  ResizeSetup s;
  s.rank = rank;
  s.coordMode = coordModeCode(p.coordMode);
  s.nearestMode = nearestModeCode(p.nearestMode);
  int64_t mapEntries = 0, stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    s.axes[d] = makeResizeAxis(p, d, in.shape[d], p.outShape[d]);
    s.axes[d].inStride = stride;
    stride *= in.shape[d];
  }
  for (int d = 0; d < rank; ++d) {
    s.axes[d].mapOffset = mapEntries;
    mapEntries += p.outShape[d];
  }
  int64_t* maps = nullptr;
  if (mapEntries > 0) {
    KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(mapEntries * sizeof(int64_t)));
    maps = static_cast<int64_t*>(scratch);
    nearestMapKernel<<<gridFor(mapEntries), kBlockSize, 0, ctx.stream()>>>(s, maps, mapEntries);
    KILN_CUDA_CHECK_LAUNCH("nearestMapKernel");
  }
  KILN_DISPATCH_BYTES(in.type, ctx, return launchNearestGather<T>(ctx, in, out, s, maps, fill));
  return Status::ok();
}

// One separable pass of linear / cubic interpolation.
struct ResizePass {
  TapsParams taps;
  int64_t outer = 1, inner = 1;
  int64_t outNumel = 0;  // elements after this pass
};

template <class T>
Status resizeInterpolatedTyped(GpuKernelContext& ctx, const ResizeConfig& p) {
  using Acc = AccOf<T>;
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, p.outShape));
  if (out.numel() == 0) return Status::ok();

  // The passes: the resized axes in order; the CPU skips the unchanged ones too.
  const int coordMode = coordModeCode(p.coordMode);
  const bool cubic = p.mode == "cubic";
  const double support = cubic ? 2.0 : 1.0;
  std::vector<ResizePass> passes;
  Shape shape = in.shape;
  int64_t maxTapEntries = 0, maxOut = 0;
  for (int axis = 0; axis < rank; ++axis) {
    const int64_t inDim = shape[axis], outDim = p.outShape[axis];
    const bool crop =
        coordMode == kTfCropAndResize && (p.roi[axis] != 0 || p.roi[axis + rank] != 1);
    if (inDim == outDim && p.scales[axis] == 1 && !crop) continue;
    ResizePass pass;
    for (int d = 0; d < axis; ++d) pass.outer *= shape[d];
    for (int d = axis + 1; d < rank; ++d) pass.inner *= shape[d];
    TapsParams& tp = pass.taps;
    tp.axis = makeResizeAxis(p, axis, inDim, outDim);
    tp.coordMode = coordMode;
    tp.cubic = cubic;
    tp.cubicA = p.cubicA;
    tp.excludeOutside = p.excludeOutside;
    tp.normalize = p.antialias || p.excludeOutside;
    tp.kernelScale = p.antialias ? std::min(p.scales[axis], 1.0) : 1.0;
    tp.first = static_cast<int64_t>(std::floor(-support / tp.kernelScale)) + 1;
    tp.taps = 2 - 2 * tp.first;
    shape[axis] = outDim;
    pass.outNumel = shapeNumel(shape);
    maxTapEntries = std::max(maxTapEntries, outDim * tp.taps);
    maxOut = std::max(maxOut, outDim);
    passes.push_back(pass);
  }
  if (passes.empty()) {  // nothing resized: the values pass through unchanged
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(out.data, in.data, in.byteSize(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return Status::ok();
  }

  // Workspace: the taps of one pass (reused, stream-ordered), then up to two
  // intermediate buffers in the compute type.
  int64_t maxIntermediate = 0;
  for (size_t k = 0; k + 1 < passes.size(); ++k)
    maxIntermediate = std::max(maxIntermediate, passes[k].outNumel);
  const size_t indexBytes = alignUp(maxTapEntries * sizeof(int64_t));
  const size_t weightBytes = alignUp(maxTapEntries * sizeof(double));
  const size_t outsideBytes = alignUp(maxOut);
  const size_t bufferBytes = alignUp(maxIntermediate * sizeof(Acc));
  const int buffers = static_cast<int>(std::min<size_t>(passes.size() - 1, 2));
  KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(indexBytes + weightBytes + outsideBytes +
                                                     buffers * bufferBytes));
  char* base = static_cast<char*>(scratch);
  int64_t* index = reinterpret_cast<int64_t*>(base);
  double* weight = reinterpret_cast<double*>(base + indexBytes);
  uint8_t* outside = reinterpret_cast<uint8_t*>(base + indexBytes + weightBytes);
  void* buffer[2] = {base + indexBytes + weightBytes + outsideBytes,
                     base + indexBytes + weightBytes + outsideBytes + bufferBytes};

  const size_t last = passes.size() - 1;
  for (size_t k = 0; k < passes.size(); ++k) {
    const ResizePass& pass = passes[k];
    const TapsParams& tp = pass.taps;
    resizeTapsKernel<<<gridFor(tp.axis.outDim), kBlockSize, 0, ctx.stream()>>>(tp, index, weight,
                                                                               outside);
    KILN_CUDA_CHECK_LAUNCH("resizeTapsKernel");
    const void* src = k == 0 ? in.data : buffer[(k - 1) % 2];
    void* dst = k == last ? out.data : buffer[k % 2];
    resizePassKernel<T><<<gridFor(pass.outNumel), kBlockSize, 0, ctx.stream()>>>(
        src, k == 0, dst, k == last, pass.outer, tp.axis.inDim, tp.axis.outDim, pass.inner, tp.taps,
        index, weight, outside, p.extrapolation);
    KILN_CUDA_CHECK_LAUNCH("resizePassKernel");
  }
  return Status::ok();
}

Status runResize(GpuKernelContext& ctx, const ResizeConfig& p) {
  if (p.mode == "nearest") return resizeNearest(ctx, p);
  if (p.mode == "linear" || p.mode == "cubic") {
    KILN_DISPATCH_FLOAT(ctx.input(0).type, ctx, return resizeInterpolatedTyped<T>(ctx, p));
    return Status::ok();
  }
  return ctx.error("unsupported mode '" + p.mode + "'");
}

Status resizeOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const Node& node = ctx.node();
  const int rank = ctx.input(0).rank();
  ResizeConfig p;
  p.mode = node.attrString("mode", "nearest");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes, axes = node.attrInts("axes");
  if (ctx.opset() < 11) {  // Resize-10: (X, scales), asymmetric coordinates
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    p.coordMode = "asymmetric";
    p.nearestMode = "simple";
    KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "scales", &scales));
  } else {
    p.coordMode = node.attrString("coordinate_transformation_mode", "half_pixel");
    p.nearestMode = node.attrString("nearest_mode", "round_prefer_floor");
    p.cubicA = node.attrFloat("cubic_coeff_a", -0.75f);
    p.excludeOutside = node.attrInt("exclude_outside", 0) != 0;
    p.extrapolation = node.attrFloat("extrapolation_value", 0.f);
    p.antialias = node.attrInt("antialias", 0) != 0;
    // roi is only read by tf_crop_and_resize: its values stay on the device otherwise.
    if (ctx.hasInput(1) && !isFloatingPoint(ctx.input(1).type))
      return ctx.error("roi must be a float tensor");
    if (p.coordMode == "tf_crop_and_resize") KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "roi", &roi));
    KILN_RETURN_IF_ERROR(readFloats(ctx, 2, "scales", &scales));
    KILN_RETURN_IF_ERROR(readInts(ctx, 3, "sizes", &sizes));
  }
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<bool> seen(rank, false);
  for (int64_t& axis : axes) {
    KILN_RETURN_IF_ERROR(normalizeAxis(ctx, axis, rank, &axis));
    if (seen[axis]) return ctx.error("axes repeats axis " + std::to_string(axis));
    seen[axis] = true;
  }
  KILN_RETURN_IF_ERROR(resolveScales(ctx, scales, sizes, axes, &p));
  // roi is given for `axes`; the other axes see [0..., 1...].
  p.roi.assign(rank, 0.0);
  p.roi.resize(2 * rank, 1.0);
  if (p.coordMode == "tf_crop_and_resize") {
    if (roi.size() != 2 * axes.size()) return ctx.error("roi needs 2 entries per resized axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      p.roi[axes[i]] = roi[i];
      p.roi[axes[i] + rank] = roi[i + axes.size()];
    }
  }
  return runResize(ctx, p);
}

// Upsample-7 reads scales from an attribute, 9-10 from input 1; coordinates are asymmetric.
Status upsampleOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, ctx.opset() < 9 ? 1 : 2));
  ResizeConfig p;
  p.mode = resizeMode(ctx.node());
  p.coordMode = "asymmetric";
  p.nearestMode = "simple";
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    for (float s : ctx.node().attrFloats("scales")) scales.push_back(s);
  } else {
    KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "scales", &scales));
  }
  const int rank = ctx.input(0).rank();
  std::vector<int64_t> axes;
  for (int d = 0; d < rank; ++d) axes.push_back(d);
  KILN_RETURN_IF_ERROR(resolveScales(ctx, scales, {}, axes, &p));
  p.roi.assign(rank, 0.0);
  p.roi.resize(2 * rank, 1.0);
  return runResize(ctx, p);
}

// ================================================================== DepthToSpace / SpaceToDepth

// out[i] = in[offset of i's coordinates under `info`]: a transpose of a packed view.
template <class T>
__global__ void permuteKernel(const T* in, T* out, ShapeInfo info, int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    out[e] = in[stridedOffset(info, e)];
  }
}

template <class T>
Status launchPermute(const GpuKernelContext& ctx, const DeviceTensor& in, const DeviceTensor& out,
                     const ShapeInfo& info) {
  const int64_t total = out.numel();
  permuteKernel<T>
      <<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(in.as<const T>(), out.as<T>(), info, total);
  KILN_CUDA_CHECK_LAUNCH("permuteKernel");
  return Status::ok();
}

// Reshape of the input to the 6-D `split`, transpose by `perm`, reshape to `outShape`.
Status blockRearrange(GpuKernelContext& ctx, const Shape& split, const std::vector<int>& perm,
                      const Shape& outShape) {
  const DeviceTensor& in = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  if (out.numel() == 0) return Status::ok();
  const ShapeInfo packed = packedStrides(split);
  ShapeInfo info;
  info.rank = static_cast<int>(split.size());
  for (int k = 0; k < info.rank; ++k) {
    info.dims[k] = split[perm[k]];
    info.strides[k] = packed.strides[perm[k]];
  }
  KILN_DISPATCH_BYTES(in.type, ctx, return launchPermute<T>(ctx, in, out, info));
  return Status::ok();
}

Status blockSizeAndInput(const GpuKernelContext& ctx, int64_t* block) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  if (ctx.input(0).rank() != 4) {
    return ctx.error("input must be 4-D NCHW, got " + shapeToString(ctx.input(0).shape));
  }
  *block = ctx.node().attrInt("blocksize", 0);
  if (*block <= 0) return ctx.error("blocksize must be positive");
  return Status::ok();
}

Status depthToSpaceOp(GpuKernelContext& ctx) {
  int64_t b = 0;
  KILN_RETURN_IF_ERROR(blockSizeAndInput(ctx, &b));
  const Shape& s = ctx.input(0).shape;
  if (s[1] % (b * b) != 0) return ctx.error("channels are not a multiple of blocksize^2");
  const int64_t c = s[1] / (b * b);
  const Shape outShape = {s[0], c, s[2] * b, s[3] * b};
  const std::string mode = ctx.node().attrString("mode", "DCR");
  if (mode == "DCR")
    return blockRearrange(ctx, {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2}, outShape);
  if (mode == "CRD")
    return blockRearrange(ctx, {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3}, outShape);
  return ctx.error("unknown mode '" + mode + "'");
}

Status spaceToDepthOp(GpuKernelContext& ctx) {
  int64_t b = 0;
  KILN_RETURN_IF_ERROR(blockSizeAndInput(ctx, &b));
  const Shape& s = ctx.input(0).shape;
  if (s[2] % b != 0 || s[3] % b != 0)
    return ctx.error("height and width must be multiples of blocksize");
  const Shape split = {s[0], s[1], s[2] / b, b, s[3] / b, b};
  const Shape outShape = {s[0], s[1] * b * b, s[2] / b, s[3] / b};
  const std::string mode = ctx.node().attrString("mode", "DCR");
  if (mode == "DCR") return blockRearrange(ctx, split, {0, 3, 5, 1, 2, 4}, outShape);
  if (mode == "CRD") return blockRearrange(ctx, split, {0, 1, 3, 5, 2, 4}, outShape);
  return ctx.error("unknown mode '" + mode + "'");
}

// ================================================================== Trilu

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of every matrix; k is
// read on the device (0 when absent).
template <class T>
__global__ void triluKernel(const T* in, T* out, int64_t rows, int64_t cols, const void* kData,
                            DataType kType, bool upper, int64_t total) {
  const int64_t k = kData ? loadAsInt64(kData, kType, 0) : 0;
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t j = e % cols;
    const int64_t i = (e / cols) % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    out[e] = keep ? in[e] : T{};
  }
}

template <class T>
Status launchTrilu(const GpuKernelContext& ctx, const DeviceTensor& in, const DeviceTensor& out,
                   const void* kData, DataType kType, bool upper) {
  const int64_t total = out.numel();
  const int64_t rows = in.shape[in.rank() - 2], cols = in.shape[in.rank() - 1];
  triluKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(
      in.as<const T>(), out.as<T>(), rows, cols, kData, kType, upper, total);
  KILN_CUDA_CHECK_LAUNCH("triluKernel");
  return Status::ok();
}

Status triluOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  if (in.rank() < 2) return ctx.error("input must have rank >= 2");
  const void* kData = nullptr;
  DataType kType = DataType::kInt64;
  if (ctx.hasInput(1)) {
    const DeviceTensor& k = ctx.input(1);
    if (k.numel() != 1 || !isInteger(k.type)) return ctx.error("k must be an integer scalar");
    if (!isDeviceIndexType(k.type))
      return ctx.unsupported(std::string("k of type ") + dataTypeName(k.type));
    kData = k.data;
    kType = k.type;
  }
  const bool upper = ctx.node().attrInt("upper", 1) != 0;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, in.shape));
  if (out.numel() == 0) return Status::ok();
  KILN_DISPATCH_BYTES(in.type, ctx, return launchTrilu<T>(ctx, in, out, kData, kType, upper));
  return Status::ok();
}

// ================================================================== Range

// start + i * delta in the compute type, the product rounded on its own as on the host.
template <class T>
__device__ __forceinline__ T rangeValue(AccOf<T> start, AccOf<T> delta, int64_t i) {
  using C = AccOf<T>;
  if constexpr (std::is_same_v<C, float>) {
    return fromAcc<T>(start + __fmul_rn(static_cast<float>(i), delta));
  } else if constexpr (std::is_same_v<C, double>) {
    return start + __dmul_rn(static_cast<double>(i), delta);
  } else {
    return static_cast<T>(start + static_cast<C>(i) * delta);
  }
}

template <class T>
__global__ void rangeKernel(T* out, AccOf<T> start, AccOf<T> delta, int64_t total) {
  KILN_POOL_GRID_LOOP(i, total) {
    out[i] = rangeValue<T>(start, delta, i);
  }
}

// A host scalar in the compute type of T (exact: every storage value fits).
template <class C>
C scalarAs(const Tensor& t) {
  if constexpr (std::is_floating_point_v<C>) {
    return static_cast<C>(t.valueAsDouble(0));
  } else {
    return static_cast<C>(t.valueAsInt64(0));
  }
}

// Element count of Range: ceil((limit - start) / delta), at least 0 (the CPU's rangeCount).
template <class C>
Status rangeCount(const GpuKernelContext& ctx, C start, C limit, C delta, int64_t* count) {
  if (delta == C(0)) return ctx.error("delta must not be 0");
  double n = 0;
  if constexpr (std::is_floating_point_v<C>) {
    n = std::ceil((static_cast<double>(limit) - start) / delta);
  } else {
    const int64_t span = static_cast<int64_t>(limit) - static_cast<int64_t>(start);
    const int64_t step = static_cast<int64_t>(delta);
    n = static_cast<double>(span / step + ((span % step != 0) && ((span > 0) == (step > 0))));
  }
  if (!(n < static_cast<double>(kMaxOutputElements))) return ctx.error("range is too large");
  *count = n > 0 ? static_cast<int64_t>(n) : 0;
  return Status::ok();
}

template <class T>
Status rangeTyped(GpuKernelContext& ctx, DataType type, const Tensor& startT, const Tensor& limitT,
                  const Tensor& deltaT) {
  if constexpr (std::is_same_v<T, bool>) {
    return ctx.unsupported("Range of bool");
  } else {
    using C = AccOf<T>;
    const C start = scalarAs<C>(startT), limit = scalarAs<C>(limitT), delta = scalarAs<C>(deltaT);
    int64_t count = 0;
    KILN_RETURN_IF_ERROR(rangeCount(ctx, start, limit, delta, &count));
    KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, {count}));
    if (count == 0) return Status::ok();
    rangeKernel<T>
        <<<gridFor(count), kBlockSize, 0, ctx.stream()>>>(out.as<T>(), start, delta, count);
    KILN_CUDA_CHECK_LAUNCH("rangeKernel");
    return Status::ok();
  }
}

Status rangeOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DataType type = ctx.input(0).type;
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).numel() != 1) return ctx.error("start, limit and delta must be scalars");
    if (ctx.input(i).type != type) return ctx.error("start, limit and delta differ in type");
  }
  if (type == DataType::kBool) return ctx.unsupported("Range of bool");
  KILN_ASSIGN_OR_RETURN(Tensor start, ctx.hostInput(0));
  KILN_ASSIGN_OR_RETURN(Tensor limit, ctx.hostInput(1));
  KILN_ASSIGN_OR_RETURN(Tensor delta, ctx.hostInput(2));
  KILN_DISPATCH_NUMERIC(type, ctx, return rangeTyped<T>(ctx, type, start, limit, delta));
  return Status::ok();
}

// ================================================================== ConstantOfShape / EyeLike

template <class T>
__global__ void fillKernel(T* out, T value, int64_t total) {
  KILN_POOL_GRID_LOOP(i, total) {
    out[i] = value;
  }
}

template <class T>
Status launchFill(const GpuKernelContext& ctx, const DeviceTensor& out, const Tensor& value) {
  const int64_t total = out.numel();
  fillKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(out.as<T>(),
                                                                 firstElementBits<T>(value), total);
  KILN_CUDA_CHECK_LAUNCH("fillKernel");
  return Status::ok();
}

// A host scalar in the engine's storage type (float32 becomes the storage float).
Tensor inStorageType(const GpuKernelContext& ctx, const Tensor& value) {
  const DataType storage = ctx.storageType(value.type());
  return storage == value.type() ? value : castTensor(value, storage);
}

Status constantOfShapeOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  std::vector<int64_t> shape;
  KILN_RETURN_IF_ERROR(readInts(ctx, 0, "input", &shape));
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, shape, "shape"));
  Tensor value = Tensor::scalarFloat(0.f);
  if (const Tensor* attr = ctx.node().attrTensor("value")) value = *attr;
  if (value.numel() != 1) return ctx.error("value must hold exactly one element");
  if (value.type() == DataType::kString) return ctx.unsupported("a string value");
  value = inStorageType(ctx, value);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, value.type(), shape));
  if (out.numel() == 0) return Status::ok();
  KILN_DISPATCH_BYTES(value.type(), ctx, return launchFill<T>(ctx, out, value));
  return Status::ok();
}

template <class T>
__global__ void eyeLikeKernel(T* out, int64_t cols, int64_t k, T one, int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t i = e / cols, j = e - i * cols;
    out[e] = j - i == k ? one : T{};
  }
}

template <class T>
Status launchEyeLike(const GpuKernelContext& ctx, const DeviceTensor& out, int64_t k,
                     const Tensor& one) {
  const int64_t total = out.numel();
  eyeLikeKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(
      out.as<T>(), out.shape[1], k, firstElementBits<T>(one), total);
  KILN_CUDA_CHECK_LAUNCH("eyeLikeKernel");
  return Status::ok();
}

Status eyeLikeOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  if (in.rank() != 2) return ctx.error("input must be 2-D, got " + shapeToString(in.shape));
  DataType type = in.type;
  if (ctx.node().hasAttr("dtype")) {
    const auto modelType = static_cast<DataType>(ctx.node().attrInt("dtype", 1));
    if (!isSupportedDataType(modelType) || modelType == DataType::kString)
      return ctx.unsupported(std::string("dtype ") + dataTypeName(modelType));
    type = ctx.storageType(modelType);
  }
  if (type == DataType::kString) return ctx.unsupported("dtype string");
  const int64_t k = ctx.node().attrInt("k", 0);
  const Tensor one = castTensor(Tensor::scalarFloat(1.f), type);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, in.shape));
  if (out.numel() == 0) return Status::ok();
  KILN_DISPATCH_BYTES(type, ctx, return launchEyeLike<T>(ctx, out, k, one));
  return Status::ok();
}

// ================================================================== OneHot

// out[o, v, i] = on when the (normalized) index at [o, i] equals v, else off.
template <class T>
__global__ void oneHotKernel(const void* indices, DataType indexType, const T* values, T* out,
                             int64_t depth, int64_t inner, int64_t total) {
  const T off = values[0], on = values[1];
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t r = e / inner;
    const int64_t i = e - r * inner;
    const int64_t o = r / depth;
    const int64_t v = r - o * depth;
    int64_t index = loadAsInt64(indices, indexType, o * inner + i);
    if (index < 0) index += depth;
    out[e] = index == v ? on : off;
  }
}

template <class T>
Status launchOneHot(const GpuKernelContext& ctx, const DeviceTensor& indices,
                    const DeviceTensor& values, const DeviceTensor& out, int64_t depth,
                    int64_t inner) {
  const int64_t total = out.numel();
  oneHotKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(
      indices.data, indices.type, values.as<const T>(), out.as<T>(), depth, inner, total);
  KILN_CUDA_CHECK_LAUNCH("oneHotKernel");
  return Status::ok();
}

Status oneHotOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& indices = ctx.input(0);
  const DeviceTensor& values = ctx.input(2);
  if (ctx.input(1).numel() != 1 || ctx.input(1).type == DataType::kString) {
    return ctx.error("depth must be a numeric scalar");
  }
  if (values.numel() != 2) return ctx.error("values must hold [off_value, on_value]");
  if (indices.type == DataType::kString) return ctx.error("indices must be numeric");
  if (!isDeviceIndexType(indices.type))
    return ctx.unsupported(std::string("indices of type ") + dataTypeName(indices.type));
  KILN_ASSIGN_OR_RETURN(Tensor depthT, ctx.hostInput(1));
  const int64_t depth = static_cast<int64_t>(depthT.valueAsDouble(0));
  if (depth < 1) return ctx.error("depth must be positive, got " + std::to_string(depth));
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(
      normalizeAxis(ctx, ctx.node().attrInt("axis", -1), indices.rank() + 1, &axis));
  Shape outShape = indices.shape;
  outShape.insert(outShape.begin() + axis, depth);
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, outShape, "output"));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= indices.shape[d];
  const int64_t inner = outer == 0 ? 0 : indices.numel() / outer;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, values.type, outShape));
  if (out.numel() == 0) return Status::ok();
  KILN_DISPATCH_BYTES(values.type, ctx,
                      return launchOneHot<T>(ctx, indices, values, out, depth, inner));
  return Status::ok();
}

}  // namespace

void registerPoolGpuKernels(GpuKernelRegistry& registry) {
  // Pooling: the CPU reads ceil_mode, dilations and storage_order whenever present.
  // 8-bit MaxPool (opset 12) runs on the device too; 8-bit global pooling stays on the host.
  registry.add("MaxPool", 1, 1000, &poolOp<kPoolMax>, supportsMaxPoolTypes);
  registry.add("AveragePool", 1, 1000, &poolOp<kPoolAverage>, supportsPoolTypes);
  registry.add("LpPool", 1, 1000, &poolOp<kPoolLp>, supportsPoolTypes);
  registry.add("GlobalMaxPool", 1, 1000, &globalPoolOp<kPoolMax>, supportsPoolTypes);
  registry.add("GlobalAveragePool", 1, 1000, &globalPoolOp<kPoolAverage>, supportsPoolTypes);
  registry.add("GlobalLpPool", 1, 1000, &globalPoolOp<kPoolLp>, supportsPoolTypes);
  // Resize / Upsample.
  registry.add("Upsample", 7, 10, &upsampleOp, supportsResizeTypes);
  registry.add("Resize", 10, 1000, &resizeOp, supportsResizeTypes);
  // Data movement.
  registry.add("DepthToSpace", 1, 1000, &depthToSpaceOp, supportsAnyFixedSizeType);
  registry.add("SpaceToDepth", 1, 1000, &spaceToDepthOp, supportsAnyFixedSizeType);
  registry.add("Trilu", 14, 1000, &triluOp, supportsTrilu);
  // Generators.
  registry.add("EyeLike", 9, 1000, &eyeLikeOp, supportsEyeLike);
  registry.add("ConstantOfShape", 9, 1000, &constantOfShapeOp, supportsConstantOfShape);
  registry.add("Range", 11, 1000, &rangeOp, supportsRangeTypes);
  registry.add("OneHot", 9, 1000, &oneHotOp, supportsOneHot);
}

}  // namespace kiln::cuda
