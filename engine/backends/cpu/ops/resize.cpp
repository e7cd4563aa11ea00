// Resize (opsets 10-19) and the deprecated Upsample (7-10, Resize with asymmetric
// coordinates). Interpolation is separable: each resized axis maps every output
// coordinate to an input coordinate (coordinate_transformation_mode), then to taps,
// input indices with weights (mode, antialias, exclude_outside). Nearest moves raw
// elements through per-axis index maps; linear and cubic run one weighted pass per
// axis in float (double for float64 data), following the ONNX reference.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "kiln/tensor_size.h"
#include "ops/resize_params.h"

namespace kiln::cpu {
namespace {

// Parsed and validated once for both backends (ops/resize_params.h).
using ResizeParams = ops::ResizeParams;

// The taps of one axis: output position y reads weight[y * taps + t] * in[index[...]],
// or the extrapolation value when `outside[y]` (tf_crop_and_resize).
struct AxisTaps {
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<uint8_t> outside;
};

// Maps output coordinate y of an axis to an input coordinate, in double precision as the
// ONNX reference does. `length` is the output length as scale * input (fractional when
// scales were given), which align_corners and tf_crop_and_resize divide by.
double sourceCoordinate(const ResizeParams& p, int axis, int64_t y, int64_t inDim, int64_t outDim) {
  const double scale = p.scales[axis];
  const double length = p.fromSizes ? static_cast<double>(outDim) : scale * inDim;
  const std::string& mode = p.coordMode;
  if (mode == "asymmetric") return y / scale;
  if (mode == "align_corners") return length == 1 ? 0.0 : y * (inDim - 1) / (length - 1);
  if (mode == "pytorch_half_pixel") return length == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (mode == "tf_half_pixel_for_nn") return (y + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    const double offset = inDim / 2.0 * (1 - outDim / length);
    return offset + (y + 0.5) / scale - 0.5;
  }
  if (mode == "tf_crop_and_resize") {
    const double start = p.roi[axis], end = p.roi[axis + p.scales.size()];
    const double x = length == 1 ? (end - start) * (inDim - 1) / 2
                                 : y * (end - start) * (inDim - 1) / (length - 1);
    return x + start * (inDim - 1);
  }
  return (y + 0.5) / scale - 0.5;  // half_pixel
}

// x held to +-2^53 (NaN to -2^53) before a cast to int64: tf_crop_and_resize's roi comes
// from the model, and a roi of 1e300 or NaN made the cast UB. Past 2^53 a double is an
// integer and every index it gives is clamped to the same edge, so no finite x changes
// its result.
double holdCoordinate(double x) {
  constexpr double kLimit = 9007199254740992.0;  // 2^53
  return x >= -kLimit ? std::min(x, kLimit) : -kLimit;
}

int64_t nearestIndex(const ResizeParams& p, double x, int axis) {
  x = holdCoordinate(x);
  const std::string& m = p.nearestMode;
  if (m == "floor") return static_cast<int64_t>(std::floor(x));
  if (m == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (m == "round_prefer_ceil") return static_cast<int64_t>(std::floor(x + 0.5));
  // Opset < 11 "simple": what ONNX Runtime did for Upsample/Resize-10.
  if (m == "simple") return static_cast<int64_t>(p.scales[axis] < 1 ? std::ceil(x) : std::trunc(x));
  return static_cast<int64_t>(std::ceil(x - 0.5));  // round_prefer_floor
}

double interpolationWeight(const ResizeParams& p, double t) {
  t = std::abs(t);
  if (p.mode == "linear") return std::max(0.0, 1 - t);
  const double a = p.cubicA;
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// Builds the taps of one axis for linear or cubic. The left neighbour is preferred,
// so an exact integer coordinate x uses floor(x) - 1 with ratio 1. Antialias widens
// the kernel by 1/scale when downsampling.
AxisTaps interpolationTaps(const ResizeParams& p, int axis, int64_t inDim, int64_t outDim) {
  const double support = p.mode == "linear" ? 1.0 : 2.0;
  const double kernelScale = p.antialias ? std::min(p.scales[axis], 1.0) : 1.0;
  const int64_t first = static_cast<int64_t>(std::floor(-support / kernelScale)) + 1;
  AxisTaps taps;
  taps.taps = 2 - 2 * first;
  taps.index.resize(outDim * taps.taps);
  taps.weight.resize(outDim * taps.taps);
  taps.outside.resize(outDim, 0);
  for (int64_t y = 0; y < outDim; ++y) {
    const double x = sourceCoordinate(p, axis, y, inDim, outDim);
    taps.outside[y] = p.coordMode == "tf_crop_and_resize" && (x < 0 || x > inDim - 1);
    double base = std::floor(holdCoordinate(x));
    double ratio = holdCoordinate(x) - base;
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    double sum = 0;
    for (int64_t t = 0; t < taps.taps; ++t) {
      const int64_t i = first + t;
      const int64_t src = static_cast<int64_t>(base) + i;
      double w = interpolationWeight(p, (i - ratio) * kernelScale);
      if (p.excludeOutside && (src < 0 || src >= inDim)) w = 0;
      sum += w;
      taps.index[y * taps.taps + t] = std::clamp<int64_t>(src, 0, inDim - 1);
      taps.weight[y * taps.taps + t] = w;
    }
    if ((p.antialias || p.excludeOutside) && sum != 0) {
      for (int64_t t = 0; t < taps.taps; ++t) taps.weight[y * taps.taps + t] /= sum;
    }
  }
  return taps;
}

// One weighted pass along `axis`: src is [outer, inDim, inner], dst [outer, outDim, inner].
template <class Acc>
void interpolateAxis(const Acc* src, Acc* dst, int64_t outer, int64_t inDim, int64_t inner,
                     const AxisTaps& taps, Acc extrapolation) {
  const int64_t outDim = static_cast<int64_t>(taps.outside.size());
  if (inner == 1) {  // the last axis: one dot product per output element
    for (int64_t o = 0; o < outer; ++o) {
      const Acc* in = src + o * inDim;
      for (int64_t y = 0; y < outDim; ++y) {
        Acc sum = 0;
        for (int64_t t = 0; t < taps.taps; ++t) {
          sum +=
              static_cast<Acc>(taps.weight[y * taps.taps + t]) * in[taps.index[y * taps.taps + t]];
        }
        dst[o * outDim + y] = taps.outside[y] ? extrapolation : sum;
      }
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t y = 0; y < outDim; ++y) {
      Acc* out = dst + (o * outDim + y) * inner;
      std::fill_n(out, inner, taps.outside[y] ? extrapolation : Acc(0));
      if (taps.outside[y]) continue;
      for (int64_t t = 0; t < taps.taps; ++t) {
        const Acc w = static_cast<Acc>(taps.weight[y * taps.taps + t]);
        const Acc* in = src + (o * inDim + taps.index[y * taps.taps + t]) * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] += w * in[i];
      }
    }
  }
}

// Antialias widens an axis's taps to 2 * support / scale: a scale of 0 (sizes of 0) made the
// width infinite and its cast to int64 UB, and a tiny one asked for more taps than any buffer
// holds (the taps' weights are held to the byte cap). An empty output axis computes no taps.
Status checkTapWidth(const KernelContext& ctx, const ResizeParams& p, int axis, int64_t outDim) {
  if (!p.antialias || outDim == 0) return Status::ok();
  const double support = p.mode == "linear" ? 1.0 : 2.0;
  const double width = 2 * support / std::min(p.scales[axis], 1.0) + 2;
  const double limit = static_cast<double>(tensorLimits().maxBytes / sizeof(double));
  if (!(width * static_cast<double>(outDim) < limit)) {
    return ctx.error("scale " + std::to_string(p.scales[axis]) + " of axis " +
                     std::to_string(axis) + " needs too many antialias taps");
  }
  return Status::ok();
}

template <class T, class Acc>
T saturateTo(Acc v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    v = std::nearbyint(v);
    v = std::clamp<Acc>(v, static_cast<Acc>(std::numeric_limits<T>::lowest()),
                        static_cast<Acc>(std::numeric_limits<T>::max()));
  }
  return static_cast<T>(v);
}

Status resizeInterpolated(KernelContext& ctx, const ResizeParams& p) {
  const Tensor& in = ctx.input(0);
  return dispatchAllTypes(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    Shape shape = in.shape();
    std::vector<Acc> cur(in.numel()), next;
    for (int64_t i = 0; i < in.numel(); ++i)
      cur[i] = static_cast<Acc>(static_cast<ComputeType<T>>(in.data<T>()[i]));
    for (int axis = 0; axis < in.rank(); ++axis) {
      const int64_t inDim = shape[axis], outDim = p.outShape[axis];
      const bool crop =
          p.coordMode == "tf_crop_and_resize" && (p.roi[axis] != 0 || p.roi[axis + in.rank()] != 1);
      if (inDim == outDim && p.scales[axis] == 1 && !crop) continue;
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < axis; ++d) outer *= shape[d];
      for (int d = axis + 1; d < in.rank(); ++d) inner *= shape[d];
      // Each pass's buffer is held to the byte cap: the input's other dims with this axis
      // already resized can outgrow both the input and the output.
      Shape passShape = shape;
      passShape[axis] = outDim;
      KILN_RETURN_IF_ERROR_CTX(
          checkTensorSize(std::is_same_v<Acc, double> ? DataType::kFloat64 : DataType::kFloat32,
                          passShape, "resize pass over axis " + std::to_string(axis)),
          ctx.node().describe());
      KILN_RETURN_IF_ERROR(checkTapWidth(ctx, p, axis, outDim));
      next.assign(outer * outDim * inner, Acc(0));
      if (inDim > 0 && outDim > 0) {
        interpolateAxis(cur.data(), next.data(), outer, inDim, inner,
                        interpolationTaps(p, axis, inDim, outDim),
                        static_cast<Acc>(p.extrapolation));
      }
      cur.swap(next);
      shape[axis] = outDim;
    }
    Tensor& out = ctx.allocateOutput(0, in.type(), p.outShape);
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = saturateTo<T>(cur[i]);
    return Status::ok();
  });
}

// Nearest: each axis maps output positions to input indices (-1: extrapolate).
Status resizeNearest(KernelContext& ctx, const ResizeParams& p) {
  const Tensor& in = ctx.input(0);
  const int rank = in.rank();
  std::vector<std::vector<int64_t>> maps(rank);
  for (int d = 0; d < rank; ++d) {
    const int64_t inDim = in.shape()[d], outDim = p.outShape[d];
    if (inDim == 0 && outDim > 0) return ctx.error("cannot resize an empty axis");
    for (int64_t y = 0; y < outDim; ++y) {
      const double x = sourceCoordinate(p, d, y, inDim, outDim);
      const bool outside = p.coordMode == "tf_crop_and_resize" && (x < 0 || x > inDim - 1);
      maps[d].push_back(outside ? -1 : std::clamp<int64_t>(nearestIndex(p, x, d), 0, inDim - 1));
    }
  }
  const Tensor fill =
      in.type() == DataType::kString
          ? Tensor(DataType::kString, {1})
          : castTensor(Tensor::scalarFloat(static_cast<float>(p.extrapolation)), in.type());
  Tensor& out = ctx.allocateOutput(0, in.type(), p.outShape);
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gatherByAxisMaps(elementData<T>(in), in.shape(), elementData<T>(out), p.outShape, maps,
                     elementData<T>(fill)[0]);
    return Status::ok();
  });
}

Status runResize(KernelContext& ctx, const ResizeParams& p) {
  if (p.mode == "nearest") return resizeNearest(ctx, p);
  if (p.mode == "linear" || p.mode == "cubic") return resizeInterpolated(ctx, p);
  return ctx.error("unsupported mode '" + p.mode + "'");
}

// Reads a float tensor (scales, roi) as doubles.
Status readFloats(const KernelContext& ctx, size_t i, const char* what, std::vector<double>* out) {
  if (!ctx.hasInput(i)) return Status::ok();
  const Tensor& t = ctx.input(i);
  if (!isFloatingPoint(t.type())) return ctx.error(std::string(what) + " must be a float tensor");
  for (int64_t k = 0; k < t.numel(); ++k) out->push_back(t.valueAsDouble(k));
  return Status::ok();
}

Status resizeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.opset() < 11 ? 2 : 1));
  ResizeParams p = ops::resizeAttributes(ctx.node(), ctx.opset());
  ops::ResizeInputs inputs;
  if (ctx.opset() < 11) {  // Resize-10: (X, scales)
    KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "scales", &inputs.scales));
  } else {
    KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "roi", &inputs.roi));
    KILN_RETURN_IF_ERROR(readFloats(ctx, 2, "scales", &inputs.scales));
    KILN_RETURN_IF_ERROR(readIntInput(ctx, 3, "sizes", &inputs.sizes));
  }
  Status resolved = ops::resolveResize(ctx.node(), ctx.input(0).shape(), inputs, &p);
  if (!resolved.isOk()) return ctx.error(resolved.message());
  return runResize(ctx, p);
}

// Upsample-7 reads scales from an attribute, 9-10 from input 1; coordinates are asymmetric.
Status upsampleKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.opset() < 9 ? 1 : 2));
  ResizeParams p = ops::resizeAttributes(ctx.node(), ctx.opset());
  ops::ResizeInputs inputs;
  if (ctx.opset() < 9) {
    for (float s : ctx.node().attrFloats("scales")) inputs.scales.push_back(s);
  } else {
    KILN_RETURN_IF_ERROR(readFloats(ctx, 1, "scales", &inputs.scales));
  }
  Status resolved = ops::resolveResize(ctx.node(), ctx.input(0).shape(), inputs, &p);
  if (!resolved.isOk()) return ctx.error(resolved.message());
  return runResize(ctx, p);
}

}  // namespace

void registerResizeKernels(KernelRegistry& registry) {
  registry.add("Upsample", 7, 10, &upsampleKernel);
  registry.add("Resize", 10, 1000, &resizeKernel);
}

}  // namespace kiln::cpu
