// Pooling on the GPU: MaxPool, AveragePool, LpPool and their global forms.
//
// Contract: every kernel here matches the CPU reference kernel of the same op
// (engine/backends/cpu/ops/pool.cpp): the same opset ranges, attribute defaults, output
// shapes, error messages and arithmetic order where it decides results.
//  - MaxPool / AveragePool / LpPool (1-3 spatial axes): one thread per output
//    element walks its window in the CPU's order, so MaxPool's value and Indices
//    (first maximum, row- or column-major) are exact. Sums are in float (double for
//    float64 data). MaxPool also pools int8 / uint8 (compared in float, exactly; an
//    empty window gives the type's lowest, as the CPU's). GlobalAveragePool / GlobalMaxPool /
//    GlobalLpPool: one warp (small planes) or one block (large planes) reduces each (n, c) plane.
//  - Channels-last pools (ir/channels_last.h): the geometry is resolved here, the
//    kernels are pool_channels_last.cu's.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/ops/pool_channels_last.h"
#include "ir/channels_last.h"
#include "ops/spatial_params.h"

namespace kiln::cuda {
namespace {

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

// ------------------------------------------------------------------ support predicates

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

// ================================================================== pooling

enum PoolKind : int { kPoolMax = 0, kPoolAverage = 1, kPoolLp = 2 };

// The geometry is the CPU's, parsed and checked once (ops/spatial_params.h).
using ops::SpatialGeometry;

Status poolGeometry(const GpuKernelContext& ctx, const Shape& x, bool ceilMode,
                    SpatialGeometry* g) {
  // No kernel fallback: pooling needs kernel_shape.
  Status s = ops::readSpatialAttributes(ctx.node(), x, {}, g);
  if (s.isOk()) s = ops::computeForwardGeometry(ctx.node(), ceilMode, g);
  return s.isOk() ? s : ctx.error(s.message());
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
  pp.inSize = g.inputSize();
  pp.outSize = g.outputSize();
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
}

}  // namespace kiln::cuda
