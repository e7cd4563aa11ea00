// Resize (10+) and Upsample (7-10) on the GPU. The host half: attributes and inputs read
// and resolved, outputs, the coordinate terms and the passes; the kernels are
// resize_impl.cu's (contract: resize_impl.h).
//
// Contract: every kernel here matches the CPU reference kernel of the same op
// (engine/backends/cpu/ops/resize.cpp): the same opset ranges, attribute defaults, output
// shapes, error messages and arithmetic order where it decides results. Coordinates,
// nearest indices and interpolation taps are computed on the device in double exactly as
// the CPU does (no fused multiply-adds where they could move a coordinate). Nearest
// gathers raw elements of any fixed-size type; linear / cubic run one separable pass per
// resized axis in float (double for float64), like the CPU. scales / sizes / roi come
// from hostInput (free for constants).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/resize_impl.h"
#include "backends/cuda/ops/op_common.h"
#include "ops/resize_params.h"

namespace kiln::cuda {
namespace resize {
namespace {

size_t alignUp(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

// ------------------------------------------------------------------ host checks

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

Status resizeNearest(GpuKernelContext& ctx, const ResizeConfig& p) {
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  if (rank > kResizeMaxRank)
    return ctx.unsupported("nearest resize of rank " + std::to_string(rank));
  for (int d = 0; d < rank; ++d) {
    if (in.shape[d] == 0 && p.outShape[d] > 0) return ctx.error("cannot resize an empty axis");
  }
  if (dataTypeSize(in.type) == 0) return unsupportedType(ctx, in.type);
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
    KILN_RETURN_IF_ERROR(launchNearestMap(s, maps, mapEntries, ctx.stream()));
  }
  if (!isWordSized(in.type)) return unsupportedType(ctx, in.type);
  return launchNearestGather(s, in.type, in.data, out.data, maps, fill.rawData(), out.numel(),
                             ctx.stream());
}

// Bytes of an intermediate element: the compute type of the float storage types (float,
// double for float64).
size_t computeTypeBytes(DataType t) {
  return t == DataType::kFloat64 ? sizeof(double) : sizeof(float);
}

// Both passes of a resize of two adjacent axes in one kernel (launchResize2d): the last two
// (SegFormer's and FPN-style decoders' bilinear upsampling of [N, C, H, W]) or, with
// `inner` > 1, the two before a kept innermost axis (the same of NHWC storage).
Status resizeTwoAdjacentAxes(GpuKernelContext& ctx, const ResizePassLaunch& rows,
                             const ResizePassLaunch& columns, int64_t inner,
                             const DeviceTensor& out) {
  const DeviceTensor& in = ctx.input(0);
  Resize2dLaunch launch;
  launch.rows = rows;
  launch.columns = columns;
  launch.type = in.type;
  launch.in = in.data;
  launch.out = out.data;
  launch.planes = rows.outer;  // the axes before H
  launch.inner = inner;
  size_t bytes = 0;
  size_t offsets[2][3];
  for (int k = 0; k < 2; ++k) {
    const TapsParams& tp = (k == 0 ? rows : columns).taps;
    const int64_t entries = tp.axis.outDim * tp.taps;
    offsets[k][0] = bytes;
    bytes += alignUp(entries * sizeof(int64_t));
    offsets[k][1] = bytes;
    bytes += alignUp(entries * sizeof(double));
    offsets[k][2] = bytes;
    bytes += alignUp(tp.axis.outDim);
  }
  KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(bytes));
  char* base = static_cast<char*>(scratch);
  ResizePassLaunch* passes[2] = {&launch.rows, &launch.columns};
  for (int k = 0; k < 2; ++k) {
    passes[k]->index = reinterpret_cast<int64_t*>(base + offsets[k][0]);
    passes[k]->weight = reinterpret_cast<double*>(base + offsets[k][1]);
    passes[k]->outside = reinterpret_cast<uint8_t*>(base + offsets[k][2]);
  }
  ctx.setImplementation(inner > 1 ? "kiln resize of the two axes before the innermost (NHWC), "
                                    "both passes in one kernel"
                                  : "kiln resize of the last two axes, both passes in one kernel");
  return launchResize2d(launch, ctx.stream());
}

// Linear / cubic; the input's type is in kInterpolatedTypes.
Status resizeInterpolated(GpuKernelContext& ctx, const ResizeConfig& p) {
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, p.outShape));
  if (out.numel() == 0) return Status::ok();

  // The passes: the resized axes in order; the CPU skips the unchanged ones too.
  const int coordMode = coordModeCode(p.coordMode);
  const bool cubic = p.mode == "cubic";
  const double support = cubic ? 2.0 : 1.0;
  std::vector<ResizePassLaunch> passes;
  std::vector<int> passAxes;
  Shape shape = in.shape;
  int64_t maxTapEntries = 0, maxOut = 0;
  for (int axis = 0; axis < rank; ++axis) {
    const int64_t inDim = shape[axis], outDim = p.outShape[axis];
    const bool crop =
        coordMode == kTfCropAndResize && (p.roi[axis] != 0 || p.roi[axis + rank] != 1);
    if (inDim == outDim && p.scales[axis] == 1 && !crop) continue;
    ResizePassLaunch pass;
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
    passAxes.push_back(axis);
  }
  if (passes.empty()) {  // nothing resized: the values pass through unchanged
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(out.data, in.data, in.byteSize(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return Status::ok();
  }
  const bool adjacent = passes.size() == 2 && passAxes[1] == passAxes[0] + 1;
  const int64_t inner = adjacent ? passes[1].inner : 0;  // the kept axes after the two
  const bool fixedTaps = adjacent && passes[0].taps.taps == passes[1].taps.taps &&
                         (passes[0].taps.taps == 2 || passes[0].taps.taps == 4) &&
                         in.type != DataType::kFloat64;
  if (adjacent && coordMode != kTfCropAndResize && passes[0].taps.taps <= kResize2dMaxTaps &&
      passes[1].taps.taps <= kResize2dMaxTaps && (inner == 1 || fixedTaps) &&
      passes[1].taps.axis.outDim * inner < (int64_t(1) << 32))
    return resizeTwoAdjacentAxes(ctx, passes[0], passes[1], inner, out);

  // Workspace: the taps of one pass (reused, stream-ordered), then up to two
  // intermediate buffers in the compute type.
  int64_t maxIntermediate = 0;
  for (size_t k = 0; k + 1 < passes.size(); ++k)
    maxIntermediate = std::max(maxIntermediate, passes[k].outNumel);
  const size_t indexBytes = alignUp(maxTapEntries * sizeof(int64_t));
  const size_t weightBytes = alignUp(maxTapEntries * sizeof(double));
  const size_t outsideBytes = alignUp(maxOut);
  const size_t bufferBytes = alignUp(maxIntermediate * computeTypeBytes(in.type));
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
    ResizePassLaunch& pass = passes[k];
    pass.type = in.type;
    pass.src = k == 0 ? in.data : buffer[(k - 1) % 2];
    pass.srcIsT = k == 0;
    pass.dst = k == last ? out.data : buffer[k % 2];
    pass.dstIsT = k == last;
    pass.extrapolation = p.extrapolation;
    pass.index = index;
    pass.weight = weight;
    pass.outside = outside;
    KILN_RETURN_IF_ERROR(launchResizePass(pass, ctx.stream()));
  }
  return Status::ok();
}

Status runResize(GpuKernelContext& ctx, const ResizeConfig& p) {
  if (p.mode == "nearest") return resizeNearest(ctx, p);
  if (p.mode == "linear" || p.mode == "cubic") {
    const DataType type = ctx.input(0).type;
    KILN_RETURN_IF_ERROR(requireDeviceType(ctx, type, kInterpolatedTypes));
    return resizeInterpolated(ctx, p);
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
}  // namespace resize

void registerResizeGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Upsample", 7, 10, &resize::upsampleOp, resize::supportsResizeTypes);
  registry.add("Resize", 10, 1000, &resize::resizeOp, resize::supportsResizeTypes);
}

}  // namespace kiln::cuda
