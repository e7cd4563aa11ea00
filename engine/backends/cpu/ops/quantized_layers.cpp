// ai.kiln QuantizedConv and QuantizedMatMul on the CPU (contract:
// ir/quantized_layers.h): integer products with int32 accumulation, then per channel
// y = act(acc * x_scale * w_scale[c] + bias[c] (+ Z; + z_scale * Z for an int8 Z))
// written as float32 or requantized to int8/uint8. The convolution unfolds the
// zero-point-free input with im2col (exact: the values are small integers) and
// multiplies it with the int8 filter rows; padding reads as 0, which is the real
// value 0 after the shift.
#include <cmath>
#include <cstring>

#include "backends/cpu/ops/conv.h"
#include "backends/cpu/ops/conv_epilogue.h"
#include "backends/cpu/ops/int8_common.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

Status checkInt8Weights(const KernelContext& ctx) {
  if (!ctx.hasInput(kQuantW) || ctx.input(kQuantW).type() != DataType::kInt8)
    return ctx.error("input 1 (W) must be int8");
  return Status::ok();
}

// The residual Z as the epilogue adds it: float32 as is, or int8 (zero point 0)
// times z_scale.
struct Residual {
  const Tensor* z = nullptr;
  float scale = 0;  // > 0: Z is int8
  double at(int64_t i) const {
    return scale > 0 ? scale * static_cast<double>(z->data<int8_t>()[i]) : z->data<float>()[i];
  }
};

Status readResidual(const KernelContext& ctx, const Shape& outShape, Residual* out) {
  out->z = ctx.inputOrNull(kQuantResidual);
  const Tensor* scale = ctx.inputOrNull(kQuantZScale);
  if (!out->z) {
    if (scale) return ctx.error("input 9 (z_scale) needs input 3 (Z)");
    return Status::ok();
  }
  if (out->z->shape() != outShape)
    return ctx.error("input 3 (Z) must have the output's shape " + shapeToString(outShape) +
                     ", got " + shapeToString(out->z->shape()));
  if (out->z->type() == DataType::kInt8) {
    if (!scale) return ctx.error("input 3 (Z) is int8 but input 9 (z_scale) is absent");
    if (scale->type() != DataType::kFloat32 || scale->numel() != 1)
      return ctx.error("input 9 (z_scale) must be one float32 value");
    out->scale = scale->data<float>()[0];
    if (!(out->scale > 0) || !std::isfinite(out->scale))
      return ctx.error("input 9 (z_scale) must be positive and finite, got " +
                       std::to_string(out->scale));
    return Status::ok();
  }
  if (out->z->type() != DataType::kFloat32)
    return ctx.error("input 3 (Z) must be float32, or int8 with input 9 (z_scale)");
  if (scale) return ctx.error("input 9 (z_scale) is present but input 3 (Z) is not int8");
  return Status::ok();
}

// One group of one image: acc[m, p] over this group's output channels.
void convolveGroup(const ConvProblem& p, const float* shiftedX, const int8_t* w, float* col,
                   std::vector<int16_t>* colInt, int32_t* acc) {
  const int64_t cg = p.inChannels / p.group;
  const int64_t mg = p.outChannels / p.group;
  const int64_t depth = cg * p.geometry.kernelSize();
  const int64_t outSize = p.geometry.outputSize();
  if (isPointwise(p.geometry)) {
    for (int64_t i = 0; i < depth * outSize; ++i) (*colInt)[i] = static_cast<int16_t>(shiftedX[i]);
  } else {
    im2col(shiftedX, cg, p.geometry, col);
    for (int64_t i = 0; i < depth * outSize; ++i) (*colInt)[i] = static_cast<int16_t>(col[i]);
  }
  // acc[mg x outSize] = w[mg x depth] * col[depth x outSize]: rows of W drive the loop.
  std::memset(acc, 0, sizeof(int32_t) * mg * outSize);
  for (int64_t m = 0; m < mg; ++m) {
    int32_t* row = acc + m * outSize;
    for (int64_t k = 0; k < depth; ++k) {
      const int32_t wv = w[m * depth + k];
      if (wv == 0) continue;
      const int16_t* c = colInt->data() + k * outSize;
      for (int64_t q = 0; q < outSize; ++q) row[q] += wv * c[q];
    }
  }
}

Status quantizedConvKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  KILN_RETURN_IF_ERROR(checkInt8Weights(ctx));
  ConvProblem p;
  KILN_RETURN_IF_ERROR(prepareConvProblem(ctx, ctx.input(kQuantX), ctx.input(kQuantW), &p));
  QuantParams xp;
  KILN_RETURN_IF_ERROR(readQuantParams(ctx, kQuantXScale, kQuantXZeroPoint, &xp));
  Epilogue epilogue;
  KILN_RETURN_IF_ERROR(parseEpilogue(ctx, &epilogue));
  std::vector<double> multiplier, bias;
  KILN_RETURN_IF_ERROR(dequantizeMultipliers(ctx, xp.scale, p.outChannels, &multiplier));
  KILN_RETURN_IF_ERROR(readBias(ctx, p.outChannels, &bias));
  const Shape outShape = spatialOutputShape(p.batch, p.outChannels, p.geometry);
  Residual z;
  KILN_RETURN_IF_ERROR(readResidual(ctx, outShape, &z));
  std::vector<int16_t> shifted;
  KILN_RETURN_IF_ERROR(shiftedActivations(ctx, xp, &shifted));
  OutputWriter writer;
  KILN_RETURN_IF_ERROR(allocateQuantizedOutput(ctx, outShape, &writer));
  if (writer.out->numel() == 0) return Status::ok();

  const int64_t inSize = SpatialGeometry::product(p.geometry.input);
  const int64_t outSize = p.geometry.outputSize();
  const int64_t cg = p.inChannels / p.group, mg = p.outChannels / p.group;
  const int64_t depth = cg * p.geometry.kernelSize();
  std::vector<float> shiftedFloat(static_cast<size_t>(cg * inSize));
  std::vector<float> col(static_cast<size_t>(depth * outSize));
  std::vector<int16_t> colInt(col.size());
  std::vector<int32_t> acc(static_cast<size_t>(mg * outSize));
  const int8_t* w = ctx.input(kQuantW).data<int8_t>();
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t g = 0; g < p.group; ++g) {
      const int16_t* xg = shifted.data() + (n * p.inChannels + g * cg) * inSize;
      for (int64_t i = 0; i < cg * inSize; ++i) shiftedFloat[i] = xg[i];
      convolveGroup(p, shiftedFloat.data(), w + g * mg * depth, col.data(), &colInt, acc.data());
      for (int64_t m = 0; m < mg; ++m) {
        const int64_t channel = g * mg + m;
        const int64_t base = (n * p.outChannels + channel) * outSize;
        for (int64_t q = 0; q < outSize; ++q) {
          double y = acc[m * outSize + q] * multiplier[channel] + bias[channel];
          if (z.z) y += z.at(base + q);
          writer.write(base + q, activate(y, epilogue));
        }
      }
    }
  }
  return Status::ok();
}

Status quantizedMatMulKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  KILN_RETURN_IF_ERROR(checkInt8Weights(ctx));
  const Tensor& a = ctx.input(kQuantX);
  const Tensor& w = ctx.input(kQuantW);
  if (w.rank() != 2 || a.rank() < 1 || a.dim(-1) != w.dim(0))
    return ctx.error("A " + shapeToString(a.shape()) + " and W " + shapeToString(w.shape()) +
                     " do not multiply (W must be [K, N] with K A's last dim)");
  const std::string act = ctx.node().attrString("activation", "none");
  if (act != "none" && act != "relu")
    return ctx.error("unknown activation '" + act + "' (none, relu)");
  const int64_t depth = w.dim(0), cols = w.dim(1);
  const int64_t rows = depth == 0 ? 0 : a.numel() / depth;
  QuantParams xp;
  KILN_RETURN_IF_ERROR(readQuantParams(ctx, kQuantXScale, kQuantXZeroPoint, &xp));
  std::vector<double> multiplier, bias;
  KILN_RETURN_IF_ERROR(dequantizeMultipliers(ctx, xp.scale, cols, &multiplier));
  KILN_RETURN_IF_ERROR(readBias(ctx, cols, &bias));
  std::vector<int16_t> shifted;
  KILN_RETURN_IF_ERROR(shiftedActivations(ctx, xp, &shifted));
  Shape outShape = a.shape();
  outShape.back() = cols;
  OutputWriter writer;
  KILN_RETURN_IF_ERROR(allocateQuantizedOutput(ctx, outShape, &writer));
  std::vector<int32_t> acc(static_cast<size_t>(rows * cols), 0);
  int8Gemm(rows, cols, depth, shifted.data(), w.data<int8_t>(), acc.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      double y = acc[r * cols + c] * multiplier[c] + bias[c];
      if (act == "relu" && y < 0) y = 0;
      writer.write(r * cols + c, y);
    }
  }
  return Status::ok();
}

}  // namespace

void registerQuantizedLayerKernels(KernelRegistry& registry) {
  registry.add(kQuantizedConvOp, 1, 1000, &quantizedConvKernel, kKilnDomain);
  registry.add(kQuantizedMatMulOp, 1, 1000, &quantizedMatMulKernel, kKilnDomain);
}

}  // namespace kiln::cpu
