// Spatial resampling kernels: GridSample (N-D, linear / nearest / cubic, zeros /
// border / reflection padding) and Col2Im (the inverse of im2col).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/misc.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

enum class GridMode { kLinear, kNearest, kCubic };
enum class GridPadding { kZeros, kBorder, kReflection };

struct GridOptions {
  GridMode mode = GridMode::kLinear;
  GridPadding padding = GridPadding::kZeros;
  bool alignCorners = false;
};

// Refuses Col2Im outputs too large to allocate (a corrupt image_shape, not a real model).
constexpr double kMaxCol2ImElements = double(int64_t{1} << 32);
// Refuses interpolation stencils (taps per output element) beyond this size.
constexpr int64_t kMaxGridTaps = 4096;

Status readGridOptions(const KernelContext& ctx, GridOptions* o) {
  // Opset 20 renamed bilinear/bicubic to linear/cubic; both spellings are accepted.
  const std::string mode = ctx.node().attrString("mode", ctx.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear" || mode == "linear")
    o->mode = GridMode::kLinear;
  else if (mode == "nearest")
    o->mode = GridMode::kNearest;
  else if (mode == "bicubic" || mode == "cubic")
    o->mode = GridMode::kCubic;
  else
    return ctx.error("mode '" + mode + "' is not supported");
  const std::string padding = ctx.node().attrString("padding_mode", "zeros");
  if (padding == "zeros")
    o->padding = GridPadding::kZeros;
  else if (padding == "border")
    o->padding = GridPadding::kBorder;
  else if (padding == "reflection")
    o->padding = GridPadding::kReflection;
  else
    return ctx.error("padding_mode '" + padding + "' is not supported");
  o->alignCorners = ctx.node().attrInt("align_corners", 0) != 0;
  return Status::ok();
}

// One spatial axis of the input: its size and the valid coordinate range
// [lo, hi] (pixel centres with align_corners, pixel edges without).
struct GridAxis {
  int64_t size = 0;
  double lo = 0, hi = 0;
};

// Reflects x into [lo, hi] as many times as needed (PyTorch's reflect_coordinates).
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double n = std::floor(dx / range);
  const double r = dx - n * range;
  const bool even = std::fmod(n, 2.0) == 0.0;
  if (x < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

// Maps a normalized grid value in [-1, 1] to a pixel coordinate, then applies the
// border / reflection padding to coordinates outside the valid range.
double pixelCoordinate(double g, const GridAxis& axis, const GridOptions& o) {
  double x = o.alignCorners ? (g + 1) / 2 * (axis.size - 1) : ((g + 1) * axis.size - 1) / 2;
  if (std::isnan(x)) x = axis.lo - 4;
  // Nearest rounds half to even before padding, as PyTorch does.
  if (o.mode == GridMode::kNearest) x = std::nearbyint(x);
  if (x < axis.lo || x > axis.hi) {
    if (o.padding == GridPadding::kBorder)
      x = std::clamp(x, 0.0, static_cast<double>(axis.size - 1));
    else if (o.padding == GridPadding::kReflection)
      x = reflect(x, axis.lo, axis.hi);
  }
  // Far-away coordinates only ever read padding; clamping keeps the index math finite.
  return std::clamp(x, axis.lo - 4, axis.hi + 4);
}

// The element index a tap at integer position i reads, or -1 for zero padding.
int64_t tapIndex(int64_t i, const GridAxis& axis, GridPadding padding) {
  if (i >= 0 && i < axis.size) return i;
  if (padding == GridPadding::kZeros) return -1;
  if (padding == GridPadding::kReflection)
    i = static_cast<int64_t>(reflect(static_cast<double>(i), axis.lo, axis.hi));
  return std::clamp<int64_t>(i, 0, axis.size - 1);
}

// Keys' cubic convolution weights (a = -0.75) for the taps at -1, 0, 1, 2 from floor(x).
void cubicWeights(double t, double* w) {
  constexpr double a = -0.75;
  auto nearW = [&](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  auto farW = [&](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
  w[0] = farW(t + 1);
  w[1] = nearW(t);
  w[2] = nearW(1 - t);
  w[3] = farW(2 - t);
}

// Taps of one axis: `count` element indices (-1 = zero padding) and weights.
int axisTaps(double x, const GridAxis& axis, const GridOptions& o, int64_t* index, double* weight) {
  if (o.mode == GridMode::kNearest) {
    index[0] = tapIndex(static_cast<int64_t>(x), axis, o.padding);
    weight[0] = 1.0;
    return 1;
  }
  const double base = std::floor(x);
  const double t = x - base;
  const int64_t i0 = static_cast<int64_t>(base);
  if (o.mode == GridMode::kLinear) {
    index[0] = tapIndex(i0, axis, o.padding);
    index[1] = tapIndex(i0 + 1, axis, o.padding);
    weight[0] = 1 - t;
    weight[1] = t;
    return 2;
  }
  cubicWeights(t, weight);
  for (int k = 0; k < 4; ++k) index[k] = tapIndex(i0 - 1 + k, axis, o.padding);
  return 4;
}

// The stencil of one output location as flat input offsets and weights: the tensor
// product of each axis's taps, dropping taps that read zero padding.
void buildStencil(const double* g, const std::vector<GridAxis>& axes,
                  const std::vector<int64_t>& strides, const GridOptions& o,
                  std::vector<int64_t>* offsets, std::vector<double>* weights) {
  const int dims = static_cast<int>(axes.size());
  int64_t index[16][4];
  double weight[16][4];
  int count = 1;
  for (int d = 0; d < dims; ++d) {
    // The grid's last axis lists coordinates innermost first (x, y, z).
    count = axisTaps(pixelCoordinate(g[dims - 1 - d], axes[d], o), axes[d], o, index[d], weight[d]);
  }
  offsets->clear();
  weights->clear();
  int digit[16] = {};
  for (;;) {
    int64_t offset = 0;
    double w = 1.0;
    bool valid = true;
    for (int d = 0; d < dims && valid; ++d) {
      valid = index[d][digit[d]] >= 0;
      offset += index[d][digit[d]] * strides[d];
      w *= weight[d][digit[d]];
    }
    if (valid) {
      offsets->push_back(offset);
      weights->push_back(w);
    }
    int d = dims - 1;
    while (d >= 0 && ++digit[d] == count) digit[d--] = 0;
    if (d < 0) break;
  }
}

Status gridSampleKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& gridIn = ctx.input(1);
  GridOptions o;
  KILN_RETURN_IF_ERROR(readGridOptions(ctx, &o));
  const int dims = x.rank() - 2;
  if (dims < 1 || dims > 16 || (ctx.opset() < 20 && dims != 2)) {
    return ctx.error("X has unsupported rank " + std::to_string(x.rank()));
  }
  if (gridIn.rank() != x.rank() || gridIn.dim(0) != x.dim(0) || gridIn.dim(-1) != dims ||
      !isFloatingPoint(gridIn.type())) {
    return ctx.error("grid must be a float [N, ..., " + std::to_string(dims) +
                     "] tensor matching X " + shapeToString(x.shape()) + ", got " +
                     shapeToString(gridIn.shape()));
  }
  const int taps = o.mode == GridMode::kNearest ? 1 : o.mode == GridMode::kLinear ? 2 : 4;
  if (std::pow(taps, dims) > kMaxGridTaps)
    return ctx.error("too many spatial dimensions for this mode");
  std::vector<GridAxis> axes(dims);
  for (int d = 0; d < dims; ++d) {
    const int64_t size = x.dim(d + 2);
    axes[d] = o.alignCorners ? GridAxis{size, 0.0, size - 1.0} : GridAxis{size, -0.5, size - 0.5};
  }
  Shape outShape = {x.dim(0), x.dim(1)};
  outShape.insert(outShape.end(), gridIn.shape().begin() + 1, gridIn.shape().end() - 1);
  const int64_t locations = shapeNumel(Shape(gridIn.shape().begin() + 1, gridIn.shape().end() - 1));
  const int64_t planeSize = shapeNumel(Shape(x.shape().begin() + 2, x.shape().end()));
  if (planeSize == 0 && shapeNumel(outShape) > 0)
    return ctx.error("X has an empty spatial dimension");
  const std::vector<int64_t> strides =
      contiguousStrides(Shape(x.shape().begin() + 2, x.shape().end()));
  const Tensor grid = castTensor(gridIn, DataType::kFloat64);
  if (x.type() == DataType::kString) return ctx.error("X must be numeric");
  return dispatchAllTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* dst = ctx.allocateOutput(0, x.type(), outShape).template data<T>();
    const int64_t batch = x.dim(0), channels = x.dim(1);
    std::vector<int64_t> offsets;
    std::vector<double> weights;
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t p = 0; p < locations; ++p) {
        buildStencil(grid.data<double>() + (n * locations + p) * dims, axes, strides, o, &offsets,
                     &weights);
        for (int64_t c = 0; c < channels; ++c) {
          const T* plane = src + (n * channels + c) * planeSize;
          double acc = 0.0;
          for (size_t k = 0; k < offsets.size(); ++k)
            acc += weights[k] * static_cast<double>(plane[offsets[k]]);
          dst[(n * channels + c) * locations + p] = static_cast<T>(acc);
        }
      }
    }
    return Status::ok();
  });
}

// Col2Im geometry: per spatial dim, image size, kernel, dilation, stride, pads and
// the resulting number of sliding blocks.
struct Col2ImGeometry {
  std::vector<int64_t> image, block, dilation, stride, padBegin, blocks;
};

Status readCol2ImGeometry(const KernelContext& ctx, Col2ImGeometry* g) {
  if (!isInteger(ctx.input(1).type()) || !isInteger(ctx.input(2).type())) {
    return ctx.error("image_shape and block_shape must be integer tensors");
  }
  g->image = ctx.input(1).toInt64Vector();
  g->block = ctx.input(2).toInt64Vector();
  const size_t dims = g->image.size();
  if (dims == 0 || g->block.size() != dims)
    return ctx.error("image_shape and block_shape must have the same length");
  g->dilation = ctx.node().attrInts("dilations", std::vector<int64_t>(dims, 1));
  g->stride = ctx.node().attrInts("strides", std::vector<int64_t>(dims, 1));
  std::vector<int64_t> pads = ctx.node().attrInts("pads", std::vector<int64_t>(2 * dims, 0));
  if (g->dilation.size() != dims || g->stride.size() != dims || pads.size() != 2 * dims) {
    return ctx.error("dilations, strides and pads must match the " + std::to_string(dims) +
                     " spatial dims");
  }
  g->padBegin.assign(pads.begin(), pads.begin() + dims);
  for (size_t d = 0; d < dims; ++d) {
    if (g->image[d] <= 0 || g->block[d] <= 0 || g->dilation[d] <= 0 || g->stride[d] <= 0 ||
        pads[d] < 0 || pads[d + dims] < 0) {
      return ctx.error(
          "image_shape, block_shape, dilations and strides must be positive, pads >= 0");
    }
    // Held to the dim limit, and the dilated block too, so the sums below stay in int64
    // (a dilation or pad of INT64_MAX overflowed them).
    const int64_t maxDim = tensorLimits().maxDim;
    if (g->image[d] > maxDim || g->block[d] > maxDim || g->dilation[d] > maxDim ||
        g->stride[d] > maxDim || pads[d] > maxDim || pads[d + dims] > maxDim ||
        g->block[d] - 1 > maxDim / g->dilation[d]) {
      return ctx.error("image_shape, block_shape, dilations, strides or pads of axis " +
                       std::to_string(d) + " pass the dim limit " + std::to_string(maxDim));
    }
    const int64_t span = g->dilation[d] * (g->block[d] - 1) + 1;
    const int64_t padded = g->image[d] + pads[d] + pads[d + dims];
    if (padded < span) return ctx.error("the block is larger than the padded image");
    g->blocks.push_back((padded - span) / g->stride[d] + 1);
  }
  return Status::ok();
}

// Advances a row-major multi-index over `shape`; false after the last one.
bool nextIndex(std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

Status col2ImKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& input = ctx.input(0);
  if (input.rank() != 3) return ctx.error("input must be [N, C * prod(block_shape), L]");
  Col2ImGeometry g;
  KILN_RETURN_IF_ERROR(readCol2ImGeometry(ctx, &g));
  const int64_t kernelSize = shapeNumel(g.block), blockCount = shapeNumel(g.blocks);
  if (kernelSize < 0 || blockCount < 0)  // shapeNumel's overflow
    return ctx.error("block_shape " + shapeToString(g.block) + " has too many elements");
  if (input.dim(1) % kernelSize != 0 || input.dim(2) != blockCount) {
    return ctx.error("input " + shapeToString(input.shape()) + " does not match " +
                     std::to_string(kernelSize) + " kernel elements and " +
                     std::to_string(blockCount) + " blocks");
  }
  const int64_t batch = input.dim(0), channels = input.dim(1) / kernelSize;
  Shape outShape = {batch, channels};
  outShape.insert(outShape.end(), g.image.begin(), g.image.end());
  const int64_t imageSize = shapeNumel(g.image);
  if (imageSize < 0 ||
      static_cast<double>(imageSize) * static_cast<double>(batch * channels) > kMaxCol2ImElements) {
    return ctx.error("image_shape " + shapeToString(g.image) + " is too large");
  }
  const std::vector<int64_t> imageStrides = contiguousStrides(g.image);
  const size_t dims = g.image.size();
  if (input.type() == DataType::kString) return ctx.error("input must be numeric");
  return dispatchAllTypes(input.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = input.data<T>();
    T* dst = ctx.allocateOutput(0, input.type(), outShape).template data<T>();
    std::vector<double> image(imageSize);
    std::vector<int64_t> k(dims), b(dims);  // kernel and block multi-indices
    for (int64_t nc = 0; nc < batch * channels; ++nc) {
      std::fill(image.begin(), image.end(), 0.0);
      const T* columns = src + nc * kernelSize * blockCount;
      std::fill(k.begin(), k.end(), 0);
      for (int64_t kFlat = 0; kFlat < kernelSize; ++kFlat, nextIndex(k, g.block)) {
        std::fill(b.begin(), b.end(), 0);
        for (int64_t bFlat = 0; bFlat < blockCount; ++bFlat, nextIndex(b, g.blocks)) {
          int64_t at = 0;
          bool inside = true;
          for (size_t d = 0; d < dims && inside; ++d) {
            const int64_t pos = b[d] * g.stride[d] - g.padBegin[d] + k[d] * g.dilation[d];
            inside = pos >= 0 && pos < g.image[d];
            at += pos * imageStrides[d];
          }
          if (inside) image[at] += static_cast<double>(columns[kFlat * blockCount + bFlat]);
        }
      }
      for (int64_t i = 0; i < imageSize; ++i) dst[nc * imageSize + i] = static_cast<T>(image[i]);
    }
    return Status::ok();
  });
}

}  // namespace

void registerSamplingKernels(KernelRegistry& registry) {
  registry.add("GridSample", 16, 1000, &gridSampleKernel);
  registry.add("Col2Im", 18, 1000, &col2ImKernel);
}

}  // namespace kiln::cpu
