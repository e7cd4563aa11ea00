// Spatial and miscellaneous kernels of the CUDA backend: GridSample, RoiAlign and AffineGrid
// here; Col2Im, MaxUnpool, CenterCropPad and TensorScatter in col2im_unpool.cu (helpers of
// both: spatial_misc_common.cuh); with the opset
// ranges, attributes, defaults and error messages of the CPU kernels
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
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/ops/spatial_misc_common.cuh"
#include "backends/cuda/type_dispatch.cuh"
#include "ops/spatial_params.h"

namespace kiln::cuda {
namespace {

using namespace sm;

// ============================ GridSample ============================

enum GridMode : int { kLinear = 0, kNearest = 1, kCubic = 2 };
enum GridPadding : int { kZeros = 0, kBorder = 1, kReflection = 2 };
constexpr int kMaxGridDims = 3;

struct GridParams {
  int dims = 0;
  int mode = kLinear, padding = kZeros;
  bool alignCorners = false;
  int gridCode = kF32;
  int64_t size[kMaxGridDims] = {};
  int64_t stride[kMaxGridDims] = {};
  double lo[kMaxGridDims] = {}, hi[kMaxGridDims] = {};
  int64_t channels = 0, locations = 0, plane = 0;
};

__device__ double reflectCoordinate(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double n = floor(dx / range);
  const double r = dx - n * range;
  const bool even = fmod(n, 2.0) == 0.0;
  if (x < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

__device__ double pixelCoordinate(double g, int d, const GridParams& p) {
  const double size = static_cast<double>(p.size[d]);
  const double lo = p.lo[d], hi = p.hi[d];
  double x = p.alignCorners ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
  if (isnan(x)) x = lo - 4;
  if (p.mode == kNearest) x = rint(x);  // half to even, as std::nearbyint
  if (x < lo || x > hi) {
    if (p.padding == kBorder)
      x = fmin(fmax(x, 0.0), size - 1);
    else if (p.padding == kReflection)
      x = reflectCoordinate(x, lo, hi);
  }
  return fmin(fmax(x, lo - 4), hi + 4);
}

__device__ int64_t tapIndex(int64_t i, int d, const GridParams& p) {
  const int64_t size = p.size[d];
  if (i >= 0 && i < size) return i;
  if (p.padding == kZeros) return -1;
  if (p.padding == kReflection)
    i = static_cast<int64_t>(reflectCoordinate(static_cast<double>(i), p.lo[d], p.hi[d]));
  return i < 0 ? 0 : (i > size - 1 ? size - 1 : i);
}

__device__ int axisTaps(double x, int d, const GridParams& p, int64_t* index, double* weight) {
  if (p.mode == kNearest) {
    index[0] = tapIndex(static_cast<int64_t>(x), d, p);
    weight[0] = 1.0;
    return 1;
  }
  const double base = floor(x);
  const double t = x - base;
  const int64_t i0 = static_cast<int64_t>(base);
  if (p.mode == kLinear) {
    index[0] = tapIndex(i0, d, p);
    index[1] = tapIndex(i0 + 1, d, p);
    weight[0] = 1 - t;
    weight[1] = t;
    return 2;
  }
  constexpr double a = -0.75;  // Keys' cubic convolution
  auto nearW = [&](double v) { return ((a + 2) * v - (a + 3)) * v * v + 1; };
  auto farW = [&](double v) { return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a; };
  weight[0] = farW(t + 1);
  weight[1] = nearW(t);
  weight[2] = nearW(1 - t);
  weight[3] = farW(2 - t);
  for (int k = 0; k < 4; ++k) index[k] = tapIndex(i0 - 1 + k, d, p);
  return 4;
}

template <class T>
__global__ void gridSampleDevice(const T* __restrict__ x, const void* __restrict__ grid,
                                 T* __restrict__ y, GridParams p, int64_t n) {
  KILN_GRID_LOOP(idx, n) {
    const int64_t loc = idx % p.locations;
    const int64_t nc = idx / p.locations;
    const int64_t batch = nc / p.channels;
    const int64_t g = (batch * p.locations + loc) * p.dims;
    int64_t index[kMaxGridDims][4];
    double weight[kMaxGridDims][4];
    int count = 1;
    for (int d = 0; d < p.dims; ++d) {
      // The grid's last axis lists coordinates innermost first (x, y, z).
      const double coord = pixelCoordinate(loadFloat(grid, p.gridCode, g + p.dims - 1 - d), d, p);
      count = axisTaps(coord, d, p, index[d], weight[d]);
    }
    int combos = 1;
    for (int d = 0; d < p.dims; ++d) combos *= count;
    const T* plane = x + nc * p.plane;
    double acc = 0.0;
    for (int c = 0; c < combos; ++c) {  // the last axis's tap varies fastest, as on the CPU
      int rest = c;
      int digit[kMaxGridDims];
      for (int d = p.dims - 1; d >= 0; --d) {
        digit[d] = rest % count;
        rest /= count;
      }
      int64_t offset = 0;
      double w = 1.0;
      bool valid = true;
      for (int d = 0; d < p.dims && valid; ++d) {
        valid = index[d][digit[d]] >= 0;
        offset += index[d][digit[d]] * p.stride[d];
        w *= weight[d][digit[d]];
      }
      if (valid) acc += w * static_cast<double>(toFloat(plane[offset]));
    }
    y[idx] = storeDouble<T>(acc);
  }
}

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

template <class T>
Status launchGridSample(GpuKernelContext& ctx, const DeviceTensor& x, const DeviceTensor& grid,
                        const DeviceTensor& y, const GridParams& p) {
  const int64_t n = y.numel();
  gridSampleDevice<T>
      <<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(x.as<T>(), grid.data, y.as<T>(), p, n);
  KILN_CUDA_CHECK_LAUNCH("GridSample");
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
  return dispatchDeviceType(ctx, x.type, device_types::kStorageFloats, [&](auto tag) {
    return launchGridSample<decltype(tag)>(ctx, x, grid, y, p);
  });
}

// ============================ RoiAlign ============================

constexpr double kMaxRoiSamples = double(int64_t{1} << 26);

struct RoiParams {
  int64_t batch = 0, channels = 0, height = 0, width = 0, outH = 1, outW = 1;
  int64_t samplingRatio = 0;
  double spatialScale = 1.0;
  bool maxMode = false, halfPixel = true;
  int roisCode = kF32;
  bool indices64 = true;
};

template <class T>
__global__ void roiAlignDevice(const T* __restrict__ x, const void* __restrict__ rois,
                               const void* __restrict__ batchIndices, T* __restrict__ y,
                               RoiParams p, int64_t n) {
  KILN_GRID_LOOP(idx, n) {
    const int64_t pw = idx % p.outW;
    const int64_t ph = (idx / p.outW) % p.outH;
    const int64_t c = (idx / (p.outW * p.outH)) % p.channels;
    const int64_t r = idx / (p.outW * p.outH * p.channels);
    const int64_t b = loadIndex(batchIndices, p.indices64, r);
    const double offset = p.halfPixel ? 0.5 : 0.0;
    const double startW = loadFloat(rois, p.roisCode, r * 4) * p.spatialScale - offset;
    const double startH = loadFloat(rois, p.roisCode, r * 4 + 1) * p.spatialScale - offset;
    double roiW = loadFloat(rois, p.roisCode, r * 4 + 2) * p.spatialScale - offset - startW;
    double roiH = loadFloat(rois, p.roisCode, r * 4 + 3) * p.spatialScale - offset - startH;
    if (b < 0 || b >= p.batch || !isfinite(startW) || !isfinite(startH) || !isfinite(roiW) ||
        !isfinite(roiH)) {
      y[idx] = storeDouble<T>(nan(""));  // the CPU raises an error here
      continue;
    }
    if (!p.halfPixel) {  // malformed rois become 1x1
      roiW = fmax(roiW, 1.0);
      roiH = fmax(roiH, 1.0);
    }
    const double binH = roiH / p.outH, binW = roiW / p.outW;
    double autoH = fmax(0.0, ceil(roiH / p.outH));
    double autoW = fmax(0.0, ceil(roiW / p.outW));
    if (autoH == 0.0 || autoW == 0.0) autoH = autoW = 0.0;
    const double ratio = static_cast<double>(p.samplingRatio);
    const double perBinSamples = p.samplingRatio > 0 ? ratio * ratio : autoH * autoW;
    if (perBinSamples * static_cast<double>(p.outH) * static_cast<double>(p.outW) >
        kMaxRoiSamples) {
      y[idx] = storeDouble<T>(nan(""));  // the CPU raises an error here
      continue;
    }
    const int64_t gridH = p.samplingRatio > 0 ? p.samplingRatio : static_cast<int64_t>(autoH);
    const int64_t gridW = p.samplingRatio > 0 ? p.samplingRatio : static_cast<int64_t>(autoW);
    const T* plane = x + (b * p.channels + c) * p.height * p.width;
    double acc = 0.0;
    int64_t k = 0;
    for (int64_t iy = 0; iy < gridH; ++iy) {
      const double sy = startH + ph * binH + (iy + 0.5) * binH / gridH;
      for (int64_t ix = 0; ix < gridW; ++ix, ++k) {
        const double sx = startW + pw * binW + (ix + 0.5) * binW / gridW;
        // The CPU's bilinearSample: four corners and weights.
        int64_t pos[4] = {0, 0, 0, 0};
        double w[4] = {0, 0, 0, 0};
        if (!(sy < -1.0 || sy > p.height || sx < -1.0 || sx > p.width)) {
          double yy = fmax(sy, 0.0), xx = fmax(sx, 0.0);
          int64_t y0 = static_cast<int64_t>(yy), x0 = static_cast<int64_t>(xx);
          int64_t y1 = y0 + 1, x1 = x0 + 1;
          if (y0 >= p.height - 1) yy = static_cast<double>(y0 = y1 = p.height - 1);
          if (x0 >= p.width - 1) xx = static_cast<double>(x0 = x1 = p.width - 1);
          const double ly = yy - y0, lx = xx - x0, hy = 1.0 - ly, hx = 1.0 - lx;
          pos[0] = y0 * p.width + x0;
          pos[1] = y0 * p.width + x1;
          pos[2] = y1 * p.width + x0;
          pos[3] = y1 * p.width + x1;
          w[0] = hy * hx;
          w[1] = hy * lx;
          w[2] = ly * hx;
          w[3] = ly * lx;
        }
        if (p.maxMode) {
          double v = w[0] * static_cast<double>(toFloat(plane[pos[0]]));
          for (int q = 1; q < 4; ++q)
            v = fmax(v, w[q] * static_cast<double>(toFloat(plane[pos[q]])));
          acc = k == 0 ? v : fmax(acc, v);
        } else {
          for (int q = 0; q < 4; ++q) acc += w[q] * static_cast<double>(toFloat(plane[pos[q]]));
        }
      }
    }
    if (!p.maxMode) acc /= static_cast<double>(gridH * gridW > 1 ? gridH * gridW : 1);
    y[idx] = storeDouble<T>(acc);
  }
}

template <class T>
Status launchRoiAlign(GpuKernelContext& ctx, const DeviceTensor& x, const DeviceTensor& rois,
                      const DeviceTensor& indices, const DeviceTensor& y, const RoiParams& p) {
  const int64_t n = y.numel();
  roiAlignDevice<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(x.as<T>(), rois.data, indices.data,
                                                                 y.as<T>(), p, n);
  KILN_CUDA_CHECK_LAUNCH("RoiAlign");
  return Status::ok();
}

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
  return dispatchDeviceType(ctx, x.type, device_types::kStorageFloats, [&](auto tag) {
    return launchRoiAlign<decltype(tag)>(ctx, x, rois, indices, y, p);
  });
}

// ============================ AffineGrid ============================

struct AffineParams {
  int spatial = 2;
  int64_t batch = 0, depth = 1, height = 0, width = 0;
  bool alignCorners = false;
};

__device__ __forceinline__ double baseCoordinate(int64_t i, int64_t count, bool align) {
  if (align)
    return count == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(count - 1);
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(count);
}

template <class T>
__global__ void affineGridDevice(const T* __restrict__ theta, T* __restrict__ out, AffineParams p,
                                 int64_t points) {
  KILN_GRID_LOOP(idx, points) {
    const int64_t xi = idx % p.width;
    const int64_t yi = (idx / p.width) % p.height;
    const int64_t zi = (idx / (p.width * p.height)) % p.depth;
    const int64_t n = idx / (p.width * p.height * p.depth);
    const int cols = p.spatial + 1;
    const double point[4] = {
        baseCoordinate(xi, p.width, p.alignCorners), baseCoordinate(yi, p.height, p.alignCorners),
        p.spatial == 3 ? baseCoordinate(zi, p.depth, p.alignCorners) : 1.0, 1.0};
    const T* m = theta + n * p.spatial * cols;
    for (int r = 0; r < p.spatial; ++r) {
      double acc = 0;
      for (int c = 0; c < cols; ++c)
        acc += static_cast<double>(toFloat(m[r * cols + c])) * point[c];
      out[idx * p.spatial + r] = storeDouble<T>(acc);
    }
  }
}

template <class T>
Status launchAffineGrid(GpuKernelContext& ctx, const DeviceTensor& theta, const DeviceTensor& out,
                        const AffineParams& p, int64_t points) {
  affineGridDevice<T>
      <<<gridFor(points), kBlockSize, 0, ctx.stream()>>>(theta.as<T>(), out.as<T>(), p, points);
  KILN_CUDA_CHECK_LAUNCH("AffineGrid");
  return Status::ok();
}

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
  return dispatchDeviceType(ctx, theta.type, device_types::kStorageFloats, [&](auto tag) {
    return launchAffineGrid<decltype(tag)>(ctx, theta, out, p, points);
  });
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
