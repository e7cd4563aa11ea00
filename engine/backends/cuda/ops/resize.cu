// Resize (10+) and Upsample (7-10) on the GPU.
//
// Contract: every kernel here matches the CPU reference kernel of the same op
// (engine/backends/cpu/ops/resize.cpp): the same opset ranges, attribute defaults, output
// shapes, error messages and arithmetic order where it decides results. Coordinates,
// nearest indices and interpolation taps are computed on the device in double exactly as
// the CPU does (no fused multiply-adds where they could move a coordinate). Nearest
// gathers raw elements of any fixed-size type; linear / cubic run one separable pass per
// resized axis in float (double for float64), like the CPU. scales / sizes / roi come
// from hostInput (free for constants).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/ops/op_common.cuh"
#include "ops/resize_params.h"

namespace kiln::cuda {
namespace {

__host__ __device__ __forceinline__ int64_t clampIndex(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

size_t alignUp(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

// ------------------------------------------------------------------ support predicates

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
// Parsed and validated once for both backends (ops/resize_params.h).
using ResizeConfig = ops::ResizeParams;

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
  KILN_RETURN_IF_ERROR(requireInputs(ctx, ctx.opset() < 11 ? 2 : 1));
  ResizeConfig p = ops::resizeAttributes(ctx.node(), ctx.opset());
  ops::ResizeInputs inputs;
  if (ctx.opset() < 11) {  // Resize-10: (X, scales)
    KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "scales", &inputs.scales));
  } else {
    // roi is only read by tf_crop_and_resize: its values stay on the device otherwise.
    if (ctx.hasInput(1) && !isFloatingPoint(ctx.input(1).type))
      return ctx.error("roi must be a float tensor");
    if (p.coordMode == "tf_crop_and_resize")
      KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "roi", &inputs.roi));
    KILN_RETURN_IF_ERROR(readFloats(ctx, 2, "scales", &inputs.scales));
    KILN_RETURN_IF_ERROR(readInts(ctx, 3, "sizes", &inputs.sizes));
  }
  Status resolved = ops::resolveResize(ctx.node(), ctx.input(0).shape, inputs, &p);
  if (!resolved.isOk()) return ctx.error(resolved.message());
  return runResize(ctx, p);
}

// Upsample-7 reads scales from an attribute, 9-10 from input 1; coordinates are asymmetric.
Status upsampleOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, ctx.opset() < 9 ? 1 : 2));
  ResizeConfig p = ops::resizeAttributes(ctx.node(), ctx.opset());
  ops::ResizeInputs inputs;
  if (ctx.opset() < 9) {
    for (float s : ctx.node().attrFloats("scales")) inputs.scales.push_back(s);
  } else {
    KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "scales", &inputs.scales));
  }
  Status resolved = ops::resolveResize(ctx.node(), ctx.input(0).shape, inputs, &p);
  if (!resolved.isOk()) return ctx.error(resolved.message());
  return runResize(ctx, p);
}

}  // namespace

void registerResizeGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Upsample", 7, 10, &upsampleOp, supportsResizeTypes);
  registry.add("Resize", 10, 1000, &resizeOp, supportsResizeTypes);
}

}  // namespace kiln::cuda
