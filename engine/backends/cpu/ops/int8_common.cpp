#include "backends/cpu/ops/int8_common.h"

#include <algorithm>
#include <cmath>

namespace kiln::cpu {

int32_t QuantParams::quantize(float x) const {
  if (std::isnan(x)) return zeroPoint;  // as QuantizeLinear on the GPU (a NaN has no integer)
  const double q = std::nearbyint(static_cast<double>(x / scale)) + zeroPoint;
  return static_cast<int32_t>(std::clamp(q, static_cast<double>(lo()), static_cast<double>(hi())));
}

Status readQuantParams(const KernelContext& ctx, size_t scaleSlot, size_t zeroPointSlot,
                       QuantParams* out) {
  const Tensor* scale = ctx.inputOrNull(scaleSlot);
  const std::string scaleName = "input " + std::to_string(scaleSlot) + " (scale)";
  if (!scale || scale->type() != DataType::kFloat32 || scale->numel() != 1)
    return ctx.error(scaleName + " must be one float32 value");
  out->scale = scale->data<float>()[0];
  if (!(out->scale > 0) || !std::isfinite(out->scale))
    return ctx.error(scaleName + " must be positive and finite, got " + std::to_string(out->scale));
  out->zeroPoint = 0;
  out->type = DataType::kInt8;
  if (const Tensor* zp = ctx.inputOrNull(zeroPointSlot)) {
    if ((zp->type() != DataType::kInt8 && zp->type() != DataType::kUInt8) || zp->numel() != 1)
      return ctx.error("input " + std::to_string(zeroPointSlot) +
                       " (zero point) must be one int8 or uint8 value");
    out->type = zp->type();
    out->zeroPoint = static_cast<int32_t>(zp->valueAsInt64(0));
  }
  return Status::ok();
}

Status shiftedActivations(const KernelContext& ctx, const QuantParams& params,
                          std::vector<int16_t>* out) {
  const Tensor& x = ctx.input(kQuantX);
  out->resize(static_cast<size_t>(x.numel()));
  const int64_t n = x.numel();
  if (x.type() == DataType::kFloat32) {
    const float* xs = x.data<float>();
    for (int64_t i = 0; i < n; ++i)
      (*out)[i] = static_cast<int16_t>(params.quantize(xs[i]) - params.zeroPoint);
    return Status::ok();
  }
  if (x.type() != params.type)
    return ctx.error(std::string("input X is ") + dataTypeName(x.type()) +
                     ", but its zero point makes it " + dataTypeName(params.type) +
                     " (or pass float32)");
  if (x.type() == DataType::kInt8) {
    const int8_t* xs = x.data<int8_t>();
    for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<int16_t>(xs[i] - params.zeroPoint);
  } else {
    const uint8_t* xs = x.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<int16_t>(xs[i] - params.zeroPoint);
  }
  return Status::ok();
}

Status dequantizeMultipliers(const KernelContext& ctx, float xScale, int64_t channels,
                             std::vector<double>* out) {
  const Tensor* ws = ctx.inputOrNull(kQuantWScale);
  if (!ws || ws->type() != DataType::kFloat32 || (ws->numel() != 1 && ws->numel() != channels) ||
      ws->rank() > 1)
    return ctx.error("input 6 (w_scale) must be a float32 scalar or 1-D of " +
                     std::to_string(channels) + " output channels");
  out->resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const float s = ws->data<float>()[ws->numel() == 1 ? 0 : c];
    if (!(s > 0) || !std::isfinite(s))
      return ctx.error("w_scale of channel " + std::to_string(c) + " must be positive and finite");
    (*out)[c] = static_cast<double>(xScale) * s;
  }
  return Status::ok();
}

Status readBias(const KernelContext& ctx, int64_t channels, std::vector<double>* out) {
  out->assign(static_cast<size_t>(channels), 0.0);
  const Tensor* b = ctx.inputOrNull(kQuantBias);
  if (!b) return Status::ok();
  if (b->type() != DataType::kFloat32 || b->numel() != channels)
    return ctx.error("input 2 (bias) must be float32 with " + std::to_string(channels) +
                     " values, got " + dataTypeName(b->type()) + " " + shapeToString(b->shape()));
  for (int64_t c = 0; c < channels; ++c) (*out)[c] = b->data<float>()[c];
  return Status::ok();
}

void OutputWriter::write(int64_t i, double v) const {
  if (!quantized) {
    const float f = static_cast<float>(v);
    if (out->type() == DataType::kFloat16)
      out->data<uint16_t>()[i] = floatToHalf(f);
    else if (out->type() == DataType::kBFloat16)
      out->data<uint16_t>()[i] = floatToBFloat16(f);
    else
      out->data<float>()[i] = f;
    return;
  }
  const int32_t q = params.quantize(static_cast<float>(v));
  if (params.type == DataType::kUInt8)
    out->data<uint8_t>()[i] = static_cast<uint8_t>(q);
  else
    out->data<int8_t>()[i] = static_cast<int8_t>(q);
}

Status allocateQuantizedOutput(KernelContext& ctx, const Shape& shape, OutputWriter* writer) {
  writer->quantized = ctx.hasInput(kQuantYScale);
  if (writer->quantized)
    KILN_RETURN_IF_ERROR(readQuantParams(ctx, kQuantYScale, kQuantYZeroPoint, &writer->params));
  writer->out = &ctx.allocateOutput(
      0, writer->quantized ? writer->params.type : quantizedFloatOutputType(ctx.node()), shape);
  return Status::ok();
}

void int8Gemm(int64_t rows, int64_t cols, int64_t depth, const int16_t* a, const int8_t* b,
              int32_t* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* row = acc + r * cols;
    for (int64_t k = 0; k < depth; ++k) {
      const int32_t av = a[r * depth + k];
      if (av == 0) continue;
      const int8_t* brow = b + k * cols;
      for (int64_t c = 0; c < cols; ++c) row[c] += av * brow[c];
    }
  }
}

}  // namespace kiln::cpu
