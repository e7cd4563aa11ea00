// Helpers shared by the CPU tactics: type dispatch limited to the types they
// compute in float, the float work buffer of an output, and the typed frame
// around a float convolution.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/ops/conv.h"
#include "backends/cpu/ops/nn_common.h"

namespace kiln::cpu {

// Calls f(TypeTag<T>{}) for float32, float16 and bfloat16, whose reference
// kernels compute in float too. Any other type is ctx.unsupported naming it:
// float64 and integers stay with the reference, which computes them natively.
template <class F>
Status dispatchTacticTypes(const KernelContext& ctx, DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat32:
      return f(TypeTag<float>{});
    case DataType::kFloat16:
      return f(TypeTag<Half>{});
    case DataType::kBFloat16:
      return f(TypeTag<BFloat16>{});
    default:
      return ctx.unsupported(std::string("data type ") + dataTypeName(type) +
                             ": this tactic computes float32, float16 and bfloat16 only");
  }
}

// Output tensor `out` (storage type T) as a float buffer to compute into: the
// tensor's own data for float32; otherwise a buffer that finish() converts into
// the tensor.
template <class T>
class FloatOutput {
 public:
  explicit FloatOutput(Tensor& out) : m_out(out) {
    if constexpr (!std::is_same_v<T, float>) m_buffer.resize(static_cast<size_t>(out.numel()));
  }
  float* data() {
    if constexpr (std::is_same_v<T, float>) {
      return m_out.data<float>();
    } else {
      return m_buffer.data();
    }
  }
  void finish() {
    if constexpr (!std::is_same_v<T, float>) {
      convertFromBuffer(m_buffer.data(), m_out.numel(), m_out.data<T>());
    }
  }

 private:
  Tensor& m_out;
  std::vector<float> m_buffer;
};

// y = conv(x, w) + bias in float for a validated problem (bias may be null).
using FloatConvolution = void (*)(const ConvProblem& problem, const float* x, const float* w,
                                  const float* bias, float* y);

// Allocates Conv's output and runs `convolve` on inputs X, W and optional B,
// converting float16/bfloat16 in and out; other types are ctx.unsupported.
inline Status runFloatConvolution(KernelContext& ctx, const ConvProblem& problem,
                                  FloatConvolution convolve) {
  const Tensor& x = ctx.input(0);
  return dispatchTacticTypes(ctx, x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Shape shape = spatialOutputShape(problem.batch, problem.outChannels, problem.geometry);
    Tensor& out = ctx.allocateOutput(0, x.type(), shape);
    if (out.numel() == 0) return Status::ok();
    return runTypedConvolution<T>(ctx, problem, out, convolve);
  });
}

}  // namespace kiln::cpu
