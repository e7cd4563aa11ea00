// ai.kiln Fp8MatMul on the CPU (contract: ir/fp8_layers.h), the reference the CUDA
// FP8 GEMM is checked against. Every E4M3 code decodes exactly to float (a table of
// the 256 codes); the product of two E4M3 values (4 significant bits each) is exact,
// and the products accumulate in double, so the sum is as close to exact as the
// output allows. A float X is quantized exactly as QuantizeLinear (saturate = 1)
// does: the float quotient x / x_scale, rounded to E4M3. The epilogue (scales, bias,
// relu) runs in double and rounds once to float32, or to E4M3 of y / y_scale.
#include <array>
#include <cmath>

#include "backends/cpu/kernel.h"
#include "ir/fp8_layers.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

const std::array<float, 256>& e4m3Values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int code = 0; code < 256; ++code) t[code] = fp8E4M3ToFloat(static_cast<uint8_t>(code));
    return t;
  }();
  return table;
}

Status readScale(const KernelContext& ctx, size_t slot, const char* name, float* out) {
  const Tensor* s = ctx.inputOrNull(slot);
  if (!s || s->type() != DataType::kFloat32 || s->numel() != 1)
    return ctx.error("input " + std::to_string(slot) + " (" + name + ") must be one float32 value");
  *out = s->data<float>()[0];
  if (!(*out > 0) || !std::isfinite(*out))
    return ctx.error(std::string(name) + " must be positive and finite, got " +
                     std::to_string(*out));
  return Status::ok();
}

bool isFloatInput(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64;
}

// X's values as the E4M3 values they are (or become, quantized with x_scale).
Status decodeInput(const KernelContext& ctx, float xScale, std::vector<float>* out) {
  const Tensor& x = ctx.input(kFp8X);
  const std::array<float, 256>& values = e4m3Values();
  out->resize(static_cast<size_t>(x.numel()));
  if (isFp8Type(x.type())) {
    const uint8_t* codes = x.data<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) (*out)[i] = values[codes[i]];
    return Status::ok();
  }
  if (!isFloatInput(x.type()))
    return ctx.error(std::string("input X must be float8e4m3fn or float, got ") +
                     dataTypeName(x.type()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float quotient = static_cast<float>(x.valueAsDouble(i)) / xScale;
    (*out)[i] = values[floatToFp8E4M3(quotient, true)];
  }
  return Status::ok();
}

Status readBias(const KernelContext& ctx, int64_t cols, std::vector<double>* out) {
  out->assign(static_cast<size_t>(cols), 0.0);
  const Tensor* b = ctx.inputOrNull(kFp8Bias);
  if (!b) return Status::ok();
  if (b->type() != DataType::kFloat32 || b->numel() != cols)
    return ctx.error("input 2 (B) must be float32 with one value per output column (" +
                     std::to_string(cols) + ")");
  for (int64_t c = 0; c < cols; ++c) (*out)[c] = b->data<float>()[c];
  return Status::ok();
}

// acc[rows x cols] = x[rows x depth] * w[depth x cols], in double.
void accumulate(int64_t rows, int64_t cols, int64_t depth, const std::vector<float>& x,
                const std::vector<float>& w, std::vector<double>* acc) {
  acc->assign(static_cast<size_t>(rows * cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double* row = acc->data() + r * cols;
    for (int64_t k = 0; k < depth; ++k) {
      const double xv = x[r * depth + k];
      if (xv == 0) continue;
      const float* wr = w.data() + k * cols;
      for (int64_t c = 0; c < cols; ++c) row[c] += xv * wr[c];
    }
  }
}

Status fp8MatMulKernel(KernelContext& ctx) {
  for (size_t slot : {kFp8X, kFp8W, kFp8XScale, kFp8WScale})  // B (slot 2) is optional
    if (!ctx.hasInput(slot))
      return ctx.error("required input " + std::to_string(slot) + " is missing");
  const Tensor& x = ctx.input(kFp8X);
  const Tensor& w = ctx.input(kFp8W);
  if (!isFp8Type(w.type())) return ctx.error("input 1 (W) must be float8e4m3fn");
  if (w.rank() != 2 || x.rank() < 1 || x.dim(-1) != w.dim(0))
    return ctx.error("X " + shapeToString(x.shape()) + " and W " + shapeToString(w.shape()) +
                     " do not multiply (W must be [K, N] with K X's last dim)");
  const std::string act = ctx.node().attrString("activation", "none");
  if (act != "none" && act != "relu")
    return ctx.error("unknown activation '" + act + "' (none, relu)");
  float xScale = 1, wScale = 1, yScale = 1;
  KILN_RETURN_IF_ERROR(readScale(ctx, kFp8XScale, "x_scale", &xScale));
  KILN_RETURN_IF_ERROR(readScale(ctx, kFp8WScale, "w_scale", &wScale));
  const bool fp8Output = ctx.hasInput(kFp8YScale);
  if (fp8Output) KILN_RETURN_IF_ERROR(readScale(ctx, kFp8YScale, "y_scale", &yScale));
  const int64_t depth = w.dim(0), cols = w.dim(1);
  const int64_t rows = depth == 0 ? 0 : x.numel() / depth;
  std::vector<float> xv, wv;
  KILN_RETURN_IF_ERROR(decodeInput(ctx, xScale, &xv));
  wv.resize(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i) wv[i] = e4m3Values()[w.data<uint8_t>()[i]];
  std::vector<double> bias, acc;
  KILN_RETURN_IF_ERROR(readBias(ctx, cols, &bias));
  accumulate(rows, cols, depth, xv, wv, &acc);
  Shape outShape = x.shape();
  outShape.back() = cols;
  Tensor& y = ctx.allocateOutput(0, fp8Output ? DataType::kFp8E4M3 : DataType::kFloat32, outShape);
  const double multiplier = static_cast<double>(xScale) * wScale;
  for (int64_t i = 0; i < rows * cols; ++i) {
    double v = acc[i] * multiplier + bias[i % cols];
    if (act == "relu" && v < 0) v = 0;
    if (fp8Output)
      y.data<uint8_t>()[i] = floatToFp8E4M3(static_cast<float>(v) / yScale, true);
    else
      y.data<float>()[i] = static_cast<float>(v);
  }
  return Status::ok();
}

}  // namespace

void registerFp8LayerKernels(KernelRegistry& registry) {
  registry.add(kFp8MatMulOp, 1, 1000, &fp8MatMulKernel, kKilnDomain);
}

}  // namespace kiln::cpu
