// ConvInteger and QLinearConv: 8-bit convolutions. Inputs are shifted by their
// zero points into double buffers and run through the double convolution core:
// products of 8-bit values summed in double stay exact far past any realistic
// reduction length, and padding then reads as the input zero point, as the
// spec asks.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/conv.h"
#include "backends/cpu/ops/nn_common.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

// out[i] = in[i] - zeroPoint of i's slice (one zero point, or one per slice).
template <class T>
void shiftValues(const T* in, int64_t count, const std::vector<double>& zp, int64_t slice,
                 double* out) {
  for (int64_t i = 0; i < count; ++i) {
    out[i] = static_cast<double>(in[i]) - zp[zp.size() == 1 ? 0 : i / slice];
  }
}

// Converts an int8/uint8 tensor to double minus its zero point; `perChannel`
// zero points (one per leading-dim slice, as W's output channels) are allowed
// when `channels` > 0.
Status shiftedInput(const KernelContext& ctx, const Tensor& t, const Tensor* zeroPoint,
                    const char* name, int64_t channels, std::vector<double>* out) {
  if (!isQuantized8(t.type())) {
    return ctx.unsupported(std::string("input ") + name + " must be int8 or uint8, got " +
                           dataTypeName(t.type()));
  }
  std::vector<double> zp = {0.0};
  if (zeroPoint) {
    if (zeroPoint->type() != t.type()) {
      return ctx.error(std::string("zero point of ") + name + " must have the type of " + name);
    }
    zp = valuesAsDoubles(*zeroPoint);
    const bool perChannel = channels > 0 && static_cast<int64_t>(zp.size()) == channels;
    if (zp.size() != 1 && !perChannel) {
      return ctx.error(std::string("zero point of ") + name + " must be a scalar" +
                       (channels > 0 ? " or have one value per output channel" : ""));
    }
  }
  out->resize(static_cast<size_t>(t.numel()));
  const int64_t slice = zp.size() == 1 || t.numel() == 0 ? t.numel() : t.numel() / channels;
  if (t.type() == DataType::kInt8) {
    shiftValues(t.data<int8_t>(), t.numel(), zp, slice, out->data());
  } else {
    shiftValues(t.data<uint8_t>(), t.numel(), zp, slice, out->data());
  }
  return Status::ok();
}

// Runs the shared part of both ops: validation, shifting and the convolution.
Status runIntegerConv(const KernelContext& ctx, const Tensor& x, const Tensor* xZero,
                      const Tensor& w, const Tensor* wZero, ConvProblem* problem,
                      std::vector<double>* y) {
  KILN_RETURN_IF_ERROR(prepareConvProblem(ctx, x, w, problem));
  std::vector<double> xs, ws;
  KILN_RETURN_IF_ERROR(shiftedInput(ctx, x, xZero, "x", 0, &xs));
  KILN_RETURN_IF_ERROR(shiftedInput(ctx, w, wZero, "w", problem->outChannels, &ws));
  const Shape shape = spatialOutputShape(problem->batch, problem->outChannels, problem->geometry);
  // The double accumulators are the output's size: held to the tensor cap before they
  // exist (a hostile geometry asked for 64 TiB of them: fuzz_onnx_import).
  KILN_RETURN_IF_ERROR(
      checkTensorSize(DataType::kFloat64, shape, ctx.node().describe() + " accumulators"));
  y->assign(static_cast<size_t>(shapeNumel(shape)), 0.0);
  if (!y->empty()) runConvolution(*problem, xs.data(), ws.data(), nullptr, y->data());
  return Status::ok();
}

template <class T>
void requantize(const std::vector<double>& acc, const std::vector<double>& multiplier,
                const std::vector<double>& bias, double yZero, int64_t channels, int64_t planeSize,
                T* out) {
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t m = static_cast<int64_t>(i) / planeSize % channels;
    const double scale = multiplier[multiplier.size() == 1 ? 0 : m];
    const double b = bias.empty() ? 0.0 : bias[m];
    out[i] = saturateRound<T>((acc[i] + b) * scale + yZero);
  }
}

}  // namespace

Status convIntegerKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  ConvProblem problem;
  std::vector<double> y;
  KILN_RETURN_IF_ERROR(runIntegerConv(ctx, ctx.input(0), ctx.inputOrNull(2), ctx.input(1),
                                      ctx.inputOrNull(3), &problem, &y));
  Tensor& out =
      ctx.allocateOutput(0, DataType::kInt32,
                         spatialOutputShape(problem.batch, problem.outChannels, problem.geometry));
  int32_t* data = out.data<int32_t>();
  for (size_t i = 0; i < y.size(); ++i) data[i] = static_cast<int32_t>(std::llround(y[i]));
  return Status::ok();
}

// y = saturate(round((conv(x - x_zp, w - w_zp) + B) * x_scale * w_scale / y_scale) + y_zp).
Status qlinearConvKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(8));
  const Tensor& x = ctx.input(0);
  const Tensor& yZeroTensor = ctx.input(7);
  if (yZeroTensor.type() != x.type() || yZeroTensor.numel() != 1) {
    return ctx.error("y_zero_point must be a scalar of the type of x");
  }
  ConvProblem problem;
  std::vector<double> acc;
  KILN_RETURN_IF_ERROR(
      runIntegerConv(ctx, x, &ctx.input(2), ctx.input(3), &ctx.input(5), &problem, &acc));
  const std::vector<double> wScale = valuesAsDoubles(ctx.input(4));
  const int64_t channels = problem.outChannels;
  if (ctx.input(1).numel() != 1 || ctx.input(6).numel() != 1 ||
      (wScale.size() != 1 && static_cast<int64_t>(wScale.size()) != channels)) {
    return ctx.error("x_scale and y_scale must be scalars, w_scale a scalar or one per channel");
  }
  // Scales combine in float32 as the reference computes them.
  const float xScale = static_cast<float>(ctx.input(1).valueAsDouble(0));
  const float yScale = static_cast<float>(ctx.input(6).valueAsDouble(0));
  std::vector<double> multiplier(wScale.size());
  for (size_t m = 0; m < wScale.size(); ++m) {
    multiplier[m] = static_cast<double>(xScale * static_cast<float>(wScale[m]) / yScale);
  }
  std::vector<double> bias;
  if (const Tensor* b = ctx.inputOrNull(8)) {
    if (b->type() != DataType::kInt32 || b->numel() != channels) {
      return ctx.error("input B must be int32 with one value per output channel");
    }
    bias = valuesAsDoubles(*b);
  }
  Tensor& out = ctx.allocateOutput(0, x.type(),
                                   spatialOutputShape(problem.batch, channels, problem.geometry));
  const int64_t planeSize = problem.geometry.outputSize();
  const double yZero = yZeroTensor.valueAsDouble(0);
  if (planeSize == 0) return Status::ok();
  if (x.type() == DataType::kInt8) {
    requantize(acc, multiplier, bias, yZero, channels, planeSize, out.data<int8_t>());
  } else {
    requantize(acc, multiplier, bias, yZero, channels, planeSize, out.data<uint8_t>());
  }
  return Status::ok();
}

}  // namespace kiln::cpu
