// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
//
// Scale and zero point are per tensor (one value), per axis (1-D along `axis`,
// opset 13) or blocked (opset 21: x's shape with dim `axis` divided into
// ceil(dim / block_size) blocks). Integer targets round half to even and
// saturate; float8 targets (opset 19) convert, saturating unless
// saturate = 0; float4e2m1 (opset 23) always saturates. int4/uint4/int2/uint2 are
// stored unpacked, one value per byte.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/nn_common.h"
#include "ops/quantize_params.h"

namespace kiln::cpu {
namespace {

// Maps an element of x to the index of its scale / zero point (the layout: ops/quantize_params.h).
struct QuantLayout : ops::QuantLayout {
  int64_t index(int64_t i) const {
    if (kind == kTensor) return 0;
    const int64_t a = (i / inner) % axisDim;
    if (kind == kAxis) return a;
    const int64_t outer = i / (inner * axisDim);
    return (outer * scaleAxisDim + a / blockSize) * inner + i % inner;
  }
};

Status makeLayout(const KernelContext& ctx, const Tensor& x, const Tensor& scale,
                  const Tensor* zeroPoint, QuantLayout* layout) {
  auto made = ops::quantLayout(ctx.node(), x.shape(), scale.shape(),
                               zeroPoint ? &zeroPoint->shape() : nullptr);
  if (!made.isOk()) return ctx.error(made.status().message());
  static_cast<ops::QuantLayout&>(*layout) = made.value();
  return Status::ok();
}

// Elements of a numeric tensor as float (typed fast paths for the common types).
std::vector<float> readFloats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  const auto copy = [&](const auto* p) {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(p[i]);
  };
  switch (t.type()) {
    case DataType::kFloat32:
      copy(t.data<float>());
      break;
    case DataType::kUInt8:
      copy(t.data<uint8_t>());
      break;
    case DataType::kInt8:
      copy(t.data<int8_t>());
      break;
    case DataType::kInt32:
      copy(t.data<int32_t>());
      break;
    default:
      for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(t.valueAsDouble(i));
  }
  return out;
}

template <class T>
void quantizeInts(const std::vector<float>& x, const std::vector<float>& scale,
                  const std::vector<float>& zp, const QuantLayout& layout, double lo, double hi,
                  T* y) {
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t s = layout.index(static_cast<int64_t>(i));
    const double q = std::nearbyint(static_cast<double>(x[i] / scale[s])) + zp[s];
    y[i] = static_cast<T>(std::clamp(std::isnan(q) ? 0.0 : q, lo, hi));
  }
}

using ops::integerRange;

Status quantizeLinearKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zeroPoint = ctx.inputOrNull(2);
  DataType outType = DataType::kUInt8;
  const int64_t outputDtype = ctx.node().attrInt("output_dtype", 0);
  if (zeroPoint) {
    outType = zeroPoint->type();
    if (outputDtype != 0 && outputDtype != static_cast<int64_t>(outType)) {
      return ctx.error("attribute 'output_dtype' differs from the zero point type");
    }
  } else if (outputDtype != 0) {
    outType = static_cast<DataType>(outputDtype);
  }
  if (!isFloatingPoint(x.type()) && x.type() != DataType::kInt32) {
    return ctx.unsupported(std::string("input x of type ") + dataTypeName(x.type()));
  }
  QuantLayout layout;
  KILN_RETURN_IF_ERROR(makeLayout(ctx, x, scale, zeroPoint, &layout));
  const std::vector<float> xs = readFloats(x), scales = readFloats(scale);
  const std::vector<float> zps =
      zeroPoint ? readFloats(*zeroPoint) : std::vector<float>(scales.size(), 0.0f);
  double lo, hi;
  const bool isInt = integerRange(outType, &lo, &hi);
  if (!isInt && outType != DataType::kFp8E4M3 && outType != DataType::kFp8E5M2 &&
      outType != DataType::kFloat4E2M1) {
    return ctx.unsupported(std::string("quantizing to ") + dataTypeName(outType));
  }
  Tensor& y = ctx.allocateOutput(0, outType, x.shape());
  if (isInt) {
    switch (outType) {
      case DataType::kUInt8:
      case DataType::kUInt4:
      case DataType::kUInt2:
        quantizeInts(xs, scales, zps, layout, lo, hi, y.data<uint8_t>());
        break;
      case DataType::kInt8:
      case DataType::kInt4:
      case DataType::kInt2:
        quantizeInts(xs, scales, zps, layout, lo, hi, y.data<int8_t>());
        break;
      case DataType::kUInt16:
        quantizeInts(xs, scales, zps, layout, lo, hi, y.data<uint16_t>());
        break;
      default:
        quantizeInts(xs, scales, zps, layout, lo, hi, y.data<int16_t>());
        break;
    }
    return Status::ok();
  }
  const bool saturate = ctx.node().attrInt("saturate", 1) != 0;
  uint8_t* out = y.data<uint8_t>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const float v = xs[i] / scales[layout.index(static_cast<int64_t>(i))];
    if (outType == DataType::kFloat4E2M1)
      out[i] = floatToFloat4E2M1(v);  // always saturates
    else if (outType == DataType::kFp8E4M3)
      out[i] = floatToFp8E4M3(v, saturate);
    else
      out[i] = floatToFp8E5M2(v, saturate);
  }
  return Status::ok();
}

Status dequantizeLinearKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zeroPoint = ctx.inputOrNull(2);
  // Float codes (float8, float4): their zero point must be zero and is not subtracted.
  const bool floatCodes = x.type() == DataType::kFp8E4M3 || x.type() == DataType::kFp8E5M2 ||
                          x.type() == DataType::kFloat4E2M1;
  double lo, hi;
  if (!floatCodes && !integerRange(x.type(), &lo, &hi) && x.type() != DataType::kInt32) {
    return ctx.unsupported(std::string("dequantizing ") + dataTypeName(x.type()));
  }
  if (zeroPoint && zeroPoint->type() != x.type()) {
    return ctx.error("x_zero_point must have the type of x");
  }
  QuantLayout layout;
  KILN_RETURN_IF_ERROR(makeLayout(ctx, x, scale, zeroPoint, &layout));
  const std::vector<float> xs = readFloats(x), scales = readFloats(scale);
  const std::vector<float> zps =
      zeroPoint && !floatCodes ? readFloats(*zeroPoint) : std::vector<float>(scales.size(), 0.0f);
  const int64_t outputDtype = ctx.node().attrInt("output_dtype", 0);
  const DataType outType = outputDtype != 0 ? static_cast<DataType>(outputDtype) : scale.type();
  if (outType != DataType::kFloat32 && outType != DataType::kFloat16 &&
      outType != DataType::kBFloat16 && outType != DataType::kFloat64) {
    return ctx.unsupported("DequantizeLinear output must be a float type");
  }
  Tensor& y = ctx.allocateOutput(0, outType, x.shape());
  Status status = dispatchFloatTypes(outType, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y.data<T>();
    for (size_t i = 0; i < xs.size(); ++i) {
      const int64_t s = layout.index(static_cast<int64_t>(i));
      out[i] = static_cast<T>((xs[i] - zps[s]) * scales[s]);
    }
    return Status::ok();
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

// Quantizes x to uint8 with a scale and zero point chosen so that [min(x, 0),
// max(x, 0)] maps onto [0, 255].
Status dynamicQuantizeLinearKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kFloat32)
    return ctx.unsupported("DynamicQuantizeLinear needs float32 x");
  const float* xs = x.data<float>();
  float minValue = 0.0f, maxValue = 0.0f;
  for (int64_t i = 0; i < x.numel(); ++i) {
    minValue = std::min(minValue, xs[i]);
    maxValue = std::max(maxValue, xs[i]);
  }
  const float scale = (maxValue == minValue ? 1.0f : maxValue - minValue) / 255.0f;
  const float zeroPoint = std::nearbyint(std::clamp(0.0f - minValue / scale, 0.0f, 255.0f));
  Tensor& y = ctx.allocateOutput(0, DataType::kUInt8, x.shape());
  uint8_t* out = y.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float q = std::nearbyint(xs[i] / scale) + zeroPoint;
    out[i] = static_cast<uint8_t>(std::clamp(std::isnan(q) ? 0.0f : q, 0.0f, 255.0f));
  }
  if (ctx.outputCount() > 1) ctx.allocateOutput(1, DataType::kFloat32, {}).data<float>()[0] = scale;
  if (ctx.outputCount() > 2) {
    ctx.allocateOutput(2, DataType::kUInt8, {}).data<uint8_t>()[0] =
        static_cast<uint8_t>(zeroPoint);
  }
  return Status::ok();
}

}  // namespace

void registerQuantizeKernels(KernelRegistry& registry) {
  // One kernel per op: axis (13), float8 + saturate (19), blocks, int4 and
  // output_dtype (21) are attributes or types older models never use.
  registry.add("QuantizeLinear", 10, 1000, &quantizeLinearKernel);
  registry.add("DequantizeLinear", 10, 1000, &dequantizeLinearKernel);
  registry.add("DynamicQuantizeLinear", 11, 1000, &dynamicQuantizeLinearKernel);
}

}  // namespace kiln::cpu
