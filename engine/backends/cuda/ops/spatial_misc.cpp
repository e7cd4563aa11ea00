// Spatial and miscellaneous kernels of the CUDA backend, the host half: GridSample, RoiAlign
// and AffineGrid here (their kernels: spatial_misc_impl.cu, contract spatial_misc_impl.h);
// Col2Im, MaxUnpool, CenterCropPad and TensorScatter in col2im_unpool.cpp (kernels:
// col2im_unpool_impl.cu); helpers of both: spatial_misc_common.h (host) and
// spatial_misc_common.cuh (device). The opset ranges, attributes, defaults and error
// messages are the CPU kernels'
// (backends/cpu/ops/misc_grid_sample.cpp, misc_detection.cpp, affine_grid.cpp,
// pool_unpool.cpp, slice_pad.cpp, tensor_extra_ops.cpp).
//
// Contract:
// - GridSample (16+): float X with 1 to 3 spatial dims (4-D and 5-D X, and 3-D from
//   opset 20), every mode (linear/bilinear, nearest, cubic/bicubic), padding mode and
//   align_corners. One thread per output element evaluates the CPU's stencil in double.
//   More spatial dims are refused as unsupported (host fallback).
// - RoiAlign (10+): avg / max (ONNX Runtime's weighted-corner max), half_pixel /
//   output_half_pixel, sampling_ratio 0 = adaptive, in double. rois and batch_indices stay
//   on the device and are never waited on: where the CPU raises an error (a batch index
//   out of range, a non-finite roi, a sampling grid over 2^26 samples) the output bins
//   of that roi are NaN instead.
// - AffineGrid (20+), Col2Im (18+, up to 8 spatial dims): size / image_shape /
//   block_shape are read with hostInput(); the math is the CPU's, in double.
// - MaxUnpool (9+): float X; indices (int32/int64) stay on the device: an index outside
//   the inferred output cannot raise the CPU's error and is skipped. Duplicate indices
//   (overlapping pooling windows) carry the same value and race benignly.
// - CenterCropPad (18+): any fixed-size type, shape read with hostInput().
// - TensorScatter (24+): any fixed-size type; write_indices stay on the device: a batch
//   whose start the CPU would reject (negative, or past the cache in linear mode) is left
//   unwritten. Circular writes longer than the cache keep the last update, as the CPU.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/spatial_misc_common.h"
#include "backends/cuda/ops/spatial_misc_impl.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {
namespace {

using namespace sm;

// ============================ GridSample ============================

Status readGridParams(const GpuKernelContext& ctx, GridParams* p) {
  const std::string mode = ctx.node().attrString("mode", ctx.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear" || mode == "linear")
    p->mode = kLinear;
  else if (mode == "nearest")
    p->mode = kNearest;
  else if (mode == "bicubic" || mode == "cubic")
    p->mode = kCubic;
  else
    return ctx.error("mode '" + mode + "' is not supported");
  const std::string padding = ctx.node().attrString("padding_mode", "zeros");
  if (padding == "zeros")
    p->padding = kZeros;
  else if (padding == "border")
    p->padding = kBorder;
  else if (padding == "reflection")
    p->padding = kReflection;
  else
    return ctx.error("padding_mode '" + padding + "' is not supported");
  p->alignCorners = ctx.node().attrInt("align_corners", 0) != 0;
  return Status::ok();
}

Status gridSampleKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& grid = ctx.input(1);
  GridParams p;
  KILN_RETURN_IF_ERROR(readGridParams(ctx, &p));
  const int spatial = x.rank() - 2;
  if (spatial < 1 || spatial > 16 || (ctx.opset() < 20 && spatial != 2))
    return ctx.error("X has unsupported rank " + std::to_string(x.rank()));
  if (grid.rank() != x.rank() || grid.shape[0] != x.shape[0] || grid.shape.back() != spatial ||
      !isFloatingPoint(grid.type)) {
    return ctx.error("grid must be a float [N, ..., " + std::to_string(spatial) +
                     "] tensor matching X " + dims(x) + ", got " + dims(grid));
  }
  const int taps = p.mode == kNearest ? 1 : p.mode == kLinear ? 2 : 4;
  if (std::pow(taps, spatial) > 4096) return ctx.error("too many spatial dimensions for this mode");
  if (spatial > kMaxGridDims)
    return ctx.unsupported("GridSample with " + std::to_string(spatial) + " spatial dims");
  if (!isFloatStorage(grid.type))
    return ctx.unsupported(std::string("grid of type ") + dataTypeName(grid.type));
  p.dims = spatial;
  p.gridCode = floatCode(grid.type);
  int64_t stride = 1;
  for (int d = spatial - 1; d >= 0; --d) {
    const int64_t size = x.shape[d + 2];
    p.size[d] = size;
    p.stride[d] = stride;
    stride *= size;
    p.lo[d] = p.alignCorners ? 0.0 : -0.5;
    p.hi[d] = p.alignCorners ? size - 1.0 : size - 0.5;
  }
  p.plane = stride;
  p.channels = x.shape[1];
  Shape outShape = {x.shape[0], x.shape[1]};
  outShape.insert(outShape.end(), grid.shape.begin() + 1, grid.shape.end() - 1);
  p.locations = shapeNumel(Shape(grid.shape.begin() + 1, grid.shape.end() - 1));
  if (p.plane == 0 && shapeNumel(outShape) > 0)
    return ctx.error("X has an empty spatial dimension");
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, outShape));
  if (y.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, x.type, device_types::kStorageFloats));
  GridSampleLaunch launch;
  launch.x = x.data;
  launch.grid = grid.data;
  launch.y = y.data;
  launch.type = x.type;
  launch.count = y.numel();
  launch.params = p;
  return launchGridSample(launch, ctx.stream());
}

// ============================ RoiAlign ============================

Status roiAlignKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& rois = ctx.input(1);
  const DeviceTensor& indices = ctx.input(2);
  if (x.rank() != 4) return ctx.error("X must be [N, C, H, W], got " + dims(x));
  if (rois.rank() != 2 || rois.shape[1] != 4 || !isFloatingPoint(rois.type))
    return ctx.error("rois must be a float [num_rois, 4] tensor, got " + dims(rois));
  if (indices.rank() != 1 || indices.shape[0] != rois.shape[0] || !isInteger(indices.type))
    return ctx.error("batch_indices must be an integer [num_rois] tensor");
  const Node& node = ctx.node();
  RoiParams p;
  const std::string mode = node.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return ctx.error("mode must be avg or max, got '" + mode + "'");
  p.maxMode = mode == "max";
  // Opset 16 added coordinate_transformation_mode; older RoiAlign had no pixel shift.
  const std::string ctm = node.attrString("coordinate_transformation_mode",
                                          ctx.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return ctx.error("coordinate_transformation_mode '" + ctm + "' is not supported");
  p.halfPixel = ctm == "half_pixel";
  p.outH = node.attrInt("output_height", 1);
  p.outW = node.attrInt("output_width", 1);
  p.samplingRatio = node.attrInt("sampling_ratio", 0);
  p.spatialScale = node.attrFloat("spatial_scale", 1.0f);
  if (p.outH <= 0 || p.outW <= 0) return ctx.error("output_height/output_width must be positive");
  if (p.samplingRatio < 0) return ctx.error("sampling_ratio must be >= 0");
  p.batch = x.shape[0];
  p.channels = x.shape[1];
  p.height = x.shape[2];
  p.width = x.shape[3];
  if (!isFloatStorage(rois.type))
    return ctx.unsupported(std::string("rois of type ") + dataTypeName(rois.type));
  if (!isIndexType(indices.type))
    return ctx.unsupported(std::string("batch_indices of type ") + dataTypeName(indices.type));
  p.roisCode = floatCode(rois.type);
  p.indices64 = indices.type == DataType::kInt64;
  const int64_t numRois = rois.shape[0];
  if (p.height == 0 || p.width == 0) return ctx.error("X has an empty spatial dimension");
  const Shape outShape{numRois, p.channels, p.outH, p.outW};
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, outShape));
  if (y.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, x.type, device_types::kStorageFloats));
  RoiAlignLaunch launch;
  launch.x = x.data;
  launch.rois = rois.data;
  launch.batchIndices = indices.data;
  launch.y = y.data;
  launch.type = x.type;
  launch.count = y.numel();
  launch.params = p;
  return launchRoiAlign(launch, ctx.stream());
}

// ============================ AffineGrid ============================

Status affineGridKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& theta = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor sizeTensor, ctx.hostInput(1));
  const std::vector<int64_t> size = sizeTensor.toInt64Vector();
  if (sizeTensor.rank() != 1 || (size.size() != 4 && size.size() != 5))
    return ctx.error("size must be [N, C, H, W] or [N, C, D, H, W]");
  const int spatial = static_cast<int>(size.size()) - 2;
  const Shape thetaShape = {size[0], spatial, spatial + 1};
  if (theta.shape != thetaShape)
    return ctx.error("theta shape " + dims(theta) + " must be " + shapeToString(thetaShape));
  for (int64_t s : size) {
    if (s < 0) return ctx.error("size values must not be negative");
  }
  AffineParams p;
  p.spatial = spatial;
  p.alignCorners = ctx.node().attrInt("align_corners", 0) != 0;
  p.batch = size[0];
  p.depth = spatial == 3 ? size[2] : 1;
  p.height = size[size.size() - 2];
  p.width = size.back();
  Shape outShape = {size[0]};
  for (size_t d = 2; d < size.size(); ++d) outShape.push_back(size[d]);
  outShape.push_back(spatial);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, theta.type, outShape));
  const int64_t points = p.batch * p.depth * p.height * p.width;
  if (points == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, theta.type, device_types::kStorageFloats));
  AffineGridLaunch launch;
  launch.theta = theta.data;
  launch.out = out.data;
  launch.type = theta.type;
  launch.points = points;
  launch.params = p;
  return launchAffineGrid(launch, ctx.stream());
}

// ============================ support predicates ============================

std::string supportsGridSample(const Node&, const std::vector<DataType>& types) {
  return checkTypes(types, {Accept::kFloat, Accept::kFloat});
}
std::string supportsRoiAlign(const Node&, const std::vector<DataType>& types) {
  return checkTypes(types, {Accept::kFloat, Accept::kFloat, Accept::kIndex});
}
std::string supportsAffineGrid(const Node&, const std::vector<DataType>& types) {
  return checkTypes(types, {Accept::kFloat, Accept::kInteger});
}

}  // namespace

void registerSpatialMiscGpuKernels(GpuKernelRegistry& registry) {
  registry.add("GridSample", 16, 1000, gridSampleKernel, supportsGridSample);
  registry.add("RoiAlign", 10, 1000, roiAlignKernel, supportsRoiAlign);
  registry.add("AffineGrid", 20, 1000, affineGridKernel, supportsAffineGrid);
  registerCol2ImUnpoolGpuKernels(registry);
}

}  // namespace kiln::cuda
