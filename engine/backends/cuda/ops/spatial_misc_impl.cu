// The device half of GridSample, RoiAlign and AffineGrid: their kernels and launchers
// (contract: spatial_misc_impl.h; the ops' contract and the host checks: spatial_misc.cpp).
#include <cmath>
#include <cstdint>

#include "backends/cuda/ops/spatial_misc_common.cuh"
#include "backends/cuda/ops/spatial_misc_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::sm {
namespace {

// ============================ GridSample ============================

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

// ============================ RoiAlign ============================

constexpr double kMaxRoiSamples = double(int64_t{1} << 26);

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

// ============================ AffineGrid ============================

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

}  // namespace

Status launchGridSample(const GridSampleLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kStorageFloats>(args.type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = args.count;
    gridSampleDevice<T><<<gridFor(n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.x), args.grid, static_cast<T*>(args.y), args.params, n);
    KILN_CUDA_CHECK_LAUNCH("GridSample");
    return Status::ok();
  });
}

Status launchRoiAlign(const RoiAlignLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kStorageFloats>(args.type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = args.count;
    roiAlignDevice<T><<<gridFor(n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.x), args.rois, args.batchIndices, static_cast<T*>(args.y),
        args.params, n);
    KILN_CUDA_CHECK_LAUNCH("RoiAlign");
    return Status::ok();
  });
}

Status launchAffineGrid(const AffineGridLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kStorageFloats>(args.type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t points = args.points;
    affineGridDevice<T><<<gridFor(points), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.theta), static_cast<T*>(args.out), args.params, points);
    KILN_CUDA_CHECK_LAUNCH("AffineGrid");
    return Status::ok();
  });
}

}  // namespace kiln::cuda::sm
