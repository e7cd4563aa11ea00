// MaxPool (with Indices), AveragePool, LpPool and their Global* forms.
//
// Windows are resolved per axis once: for output position o the window starts
// at o * stride - pad_begin, and its taps k with start + k * dilation inside the
// input form one contiguous range [lo, hi). Spatial ranks 1 and 2 run as 3-D
// with unit leading axes, so one loop nest serves all of them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops/nn_common.h"
#include "backends/cpu/ops/pool.h"
#include "backends/cpu/ops/spatial.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

// Per-axis window ranges for every output position of one axis.
struct AxisWindows {
  std::vector<int64_t> start;   // input coordinate of tap 0
  std::vector<int64_t> lo, hi;  // taps inside the input
  std::vector<int64_t> padded;  // taps inside the input or its explicit pads
  int64_t dilation = 1;
};

AxisWindows axisWindows(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                        int64_t padBegin, int64_t padEnd) {
  AxisWindows w;
  w.dilation = dilation;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - padBegin;
    int64_t lo, hi;
    validRange(start, dilation, in, kernel, &lo, &hi);
    int64_t padLo, padHi;
    validRange(start + padBegin, dilation, in + padBegin + padEnd, kernel, &padLo, &padHi);
    w.start.push_back(start);
    w.lo.push_back(lo);
    w.hi.push_back(hi);
    w.padded.push_back(padHi - padLo);
  }
  return w;
}

// The geometry as three axes (leading unit axes for ranks 1 and 2).
struct Pool3d {
  AxisWindows axes[3];
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
};

Pool3d makePool3d(const SpatialGeometry& g) {
  Pool3d p;
  const int shift = 3 - g.rank();
  for (int a = 0; a < 3; ++a) {
    const int d = a - shift;
    if (d < 0) {
      p.axes[a] = axisWindows(1, 1, 1, 1, 1, 0, 0);
      continue;
    }
    p.in[a] = g.input[d];
    p.out[a] = g.output[d];
    p.axes[a] = axisWindows(g.input[d], g.output[d], g.kernel[d], g.strides[d], g.dilations[d],
                            g.padsBegin[d], g.padsEnd[d]);
  }
  return p;
}

struct PoolOptions {
  PoolKind kind = PoolKind::kMax;
  bool countIncludePad = false;
  double p = 2.0;
  bool columnMajor = false;  // MaxPool storage_order = 1
};

// Pools one [in0, in1, in2] plane into [out0, out1, out2]; `indexBase` is the
// plane's flat offset for MaxPool's Indices (written when `indices` is set).
template <class T>
void poolPlane(const T* x, const Pool3d& p, const PoolOptions& o, T* y, int64_t* indices,
               int64_t indexBase) {
  using C = ComputeType<T>;
  const AxisWindows &a0 = p.axes[0], &a1 = p.axes[1], &a2 = p.axes[2];
  int64_t outIndex = 0;
  for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
      for (int64_t o2 = 0; o2 < p.out[2]; ++o2, ++outIndex) {
        double sum = 0.0;
        C best = std::numeric_limits<C>::lowest();
        int64_t bestIndex = -1;
        for (int64_t k0 = a0.lo[o0]; k0 < a0.hi[o0]; ++k0) {
          const int64_t i0 = a0.start[o0] + k0 * a0.dilation;
          for (int64_t k1 = a1.lo[o1]; k1 < a1.hi[o1]; ++k1) {
            const int64_t i1 = a1.start[o1] + k1 * a1.dilation;
            const T* row = x + (i0 * p.in[1] + i1) * p.in[2];
            for (int64_t k2 = a2.lo[o2]; k2 < a2.hi[o2]; ++k2) {
              const int64_t i2 = a2.start[o2] + k2 * a2.dilation;
              const C v = static_cast<C>(row[i2]);
              if (o.kind == PoolKind::kMax) {
                if (bestIndex < 0 || v > best) {
                  best = v;
                  bestIndex = o.columnMajor ? (i2 * p.in[1] + i1) * p.in[0] + i0
                                            : (i0 * p.in[1] + i1) * p.in[2] + i2;
                }
              } else if (o.kind == PoolKind::kAverage) {
                sum += static_cast<double>(v);
              } else {
                sum += std::pow(std::fabs(static_cast<double>(v)), o.p);
              }
            }
          }
        }
        if (o.kind == PoolKind::kMax) {
          y[outIndex] = static_cast<T>(best);
          if (indices) indices[outIndex] = indexBase + std::max<int64_t>(bestIndex, 0);
        } else if (o.kind == PoolKind::kAverage) {
          const int64_t count =
              o.countIncludePad
                  ? a0.padded[o0] * a1.padded[o1] * a2.padded[o2]
                  : (a0.hi[o0] - a0.lo[o0]) * (a1.hi[o1] - a1.lo[o1]) * (a2.hi[o2] - a2.lo[o2]);
          y[outIndex] = static_cast<T>(count > 0 ? sum / static_cast<double>(count) : 0.0);
        } else {
          y[outIndex] = static_cast<T>(std::pow(sum, 1.0 / o.p));
        }
      }
    }
  }
}

bool kindAcceptsType(PoolKind kind, DataType type) {
  if (isFloatingPoint(type) && type != DataType::kFp8E4M3 && type != DataType::kFp8E5M2 &&
      type != DataType::kFp8E4M3Uz && type != DataType::kFp8E5M2Uz) {
    return true;
  }
  return kind == PoolKind::kMax && isQuantized8(type);
}

// Reads LpPool's p: a float before opset 2, an int after.
double readP(const Node& node) {
  auto it = node.attributes.find("p");
  if (it == node.attributes.end()) return 2.0;
  return it->second.kind == Attribute::Kind::kFloat ? it->second.f
                                                    : static_cast<double>(it->second.i);
}

Status runPool(KernelContext& ctx, const SpatialGeometry& g, const PoolOptions& options) {
  const Tensor& x = ctx.input(0);
  if (!kindAcceptsType(options.kind, x.type())) {
    return ctx.unsupported(std::string("input X has unsupported type ") + dataTypeName(x.type()));
  }
  if (g.rank() > 3) return ctx.unsupported("pooling over more than 3 spatial axes");
  const Shape outShape = spatialOutputShape(x.dim(0), x.dim(1), g);
  Tensor& y = ctx.allocateOutput(0, x.type(), outShape);
  int64_t* indices = nullptr;
  if (options.kind == PoolKind::kMax && ctx.wantsOutput(1)) {
    if (options.columnMajor && g.rank() != 2) {
      return ctx.unsupported("storage_order 1 needs 2 spatial axes");
    }
    indices = ctx.allocateOutput(1, DataType::kInt64, outShape).data<int64_t>();
  }
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  if (outSize == 0 || planes == 0) return Status::ok();
  if (inSize == 0) return ctx.error("input X has an empty spatial extent");
  // The window tables (four int64 per output position and axis) are held to the tensor
  // cap like any buffer: an empty or tiny output with one huge axis must not allocate
  // gigabytes of them (found by fuzz_onnx_import).
  int64_t positions = 0;
  for (int d = 0; d < g.rank(); ++d) positions += g.output[d];
  KILN_RETURN_IF_ERROR(checkTensorSize(DataType::kInt64, {4, positions},
                                       "the pooling windows of node '" + ctx.node().name + "'"));
  const Pool3d pool = makePool3d(g);
  return dispatchAllTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      for (int64_t plane = 0; plane < planes; ++plane) {
        poolPlane(x.data<T>() + plane * inSize, pool, options, y.data<T>() + plane * outSize,
                  indices ? indices + plane * outSize : nullptr, plane * inSize);
      }
    }
    return Status::ok();
  });
}

template <PoolKind kKind>
Status poolKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  SpatialGeometry g;
  KILN_RETURN_IF_ERROR(readSpatialAttributes(ctx, x.shape(), {}, &g));
  const bool ceilMode = ctx.node().attrInt("ceil_mode", 0) != 0;
  KILN_RETURN_IF_ERROR(computeForwardGeometry(ctx, ceilMode, &g));
  PoolOptions options;
  options.kind = kKind;
  options.countIncludePad = ctx.node().attrInt("count_include_pad", 0) != 0;
  options.p = readP(ctx.node());
  options.columnMajor = ctx.node().attrInt("storage_order", 0) == 1;
  if (kKind == PoolKind::kLp && !(options.p > 0))
    return ctx.error("attribute 'p' must be positive");
  return runPool(ctx, g, options);
}

// Global pooling is pooling with the window covering the whole plane.
template <PoolKind kKind>
Status globalPoolKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3)
    return ctx.error("input X must have rank >= 3, got " + shapeToString(x.shape()));
  SpatialGeometry g;
  g.input.assign(x.shape().begin() + 2, x.shape().end());
  g.kernel = g.input;
  const size_t rank = g.input.size();
  g.strides.assign(rank, 1);
  g.dilations.assign(rank, 1);
  g.padsBegin.assign(rank, 0);
  g.padsEnd.assign(rank, 0);
  g.output.assign(rank, 1);
  if (rank > 3) {
    // Fold extra leading spatial axes into one: a global window does not care.
    const int64_t size = g.inputSize();
    g.input = g.kernel = {size};
    g.strides = g.dilations = g.output = {1};
    g.padsBegin = g.padsEnd = {0};
  }
  PoolOptions options;
  options.kind = kKind;
  options.p = readP(ctx.node());
  KILN_RETURN_IF_ERROR(runPool(ctx, g, options));
  if (rank > 3) {
    Shape shape = {x.dim(0), x.dim(1)};
    shape.resize(rank + 2, 1);
    ctx.setOutput(0, ctx.outputs()[0].reshaped(shape));
  }
  return Status::ok();
}

}  // namespace

Status maxPoolKernel(KernelContext& ctx) {
  return poolKernel<PoolKind::kMax>(ctx);
}

void registerPoolKernels(KernelRegistry& registry) {
  // ceil_mode (10), dilations (10 for MaxPool, 19 for AveragePool) and 8-bit
  // MaxPool (12) are read whenever present; older models simply lack them.
  registry.add("MaxPool", 1, 1000, &maxPoolKernel);
  registry.add("AveragePool", 1, 1000, &poolKernel<PoolKind::kAverage>);
  registry.add("LpPool", 1, 1000, &poolKernel<PoolKind::kLp>);
  registry.add("GlobalMaxPool", 1, 1000, &globalPoolKernel<PoolKind::kMax>);
  registry.add("GlobalAveragePool", 1, 1000, &globalPoolKernel<PoolKind::kAverage>);
  registry.add("GlobalLpPool", 1, 1000, &globalPoolKernel<PoolKind::kLp>);
  registry.add("MaxUnpool", 9, 1000, &maxUnpoolKernel);
  registry.add("MaxRoiPool", 1, 1000, &maxRoiPoolKernel);
}

}  // namespace kiln::cpu
