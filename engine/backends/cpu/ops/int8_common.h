// The quantization arithmetic the CPU INT8 layers share (contract of the layers:
// ir/quantized_layers.h): reading scale and zero-point inputs, turning X into
// zero-point-free integers, and the per-channel epilogue that dequantizes the int32
// accumulators and, for an INT8 output, requantizes them. Rounding is half to even
// and saturating, as ONNX QuantizeLinear and TensorRT's kernels do.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/kernel.h"
#include "ir/quantized_layers.h"

namespace kiln::cpu {

struct QuantParams {
  float scale = 1.f;
  int32_t zeroPoint = 0;
  DataType type = DataType::kInt8;  // kInt8 or kUInt8
  int32_t lo() const { return type == DataType::kUInt8 ? 0 : -128; }
  int32_t hi() const { return type == DataType::kUInt8 ? 255 : 127; }
  // round(x / scale) + zero point, saturated.
  int32_t quantize(float x) const;
};

// Scale (float32, one positive finite value) and optional zero point (int8/uint8
// scalar) at the two slots; errors name the input.
Status readQuantParams(const KernelContext& ctx, size_t scaleSlot, size_t zeroPointSlot,
                       QuantParams* out);

// X's values minus its zero point, as int16 (uint8 - zp spans [-255, 255]). X is
// int8/uint8 of the zero point's type, or float32 quantized here with `params`.
Status shiftedActivations(const KernelContext& ctx, const QuantParams& params,
                          std::vector<int16_t>* out);

// One float per output channel: w_scale broadcast to `channels` (a scalar or a
// 1-D of that size), times x_scale.
Status dequantizeMultipliers(const KernelContext& ctx, float xScale, int64_t channels,
                             std::vector<double>* out);

// The optional float32 bias at kQuantBias as `channels` doubles (zeros when absent).
Status readBias(const KernelContext& ctx, int64_t channels, std::vector<double>* out);

// Writes float value v to element i of the output: float32 as is, rounded once to a
// float16/bfloat16 output (float_output_type), or requantized with `outParams` when the
// layer has an INT8 output.
struct OutputWriter {
  Tensor* out = nullptr;
  bool quantized = false;
  QuantParams params;
  void write(int64_t i, double v) const;
};
// Allocates output 0 of `shape`: int8/uint8 when y_scale is present, else the node's
// float output type (float32 unless float_output_type says float16 / bfloat16).
Status allocateQuantizedOutput(KernelContext& ctx, const Shape& shape, OutputWriter* writer);

// acc[rows x cols] (+)= a[rows x depth] * b[depth x cols], int32 accumulation; a
// and b row-major, b int8.
void int8Gemm(int64_t rows, int64_t cols, int64_t depth, const int16_t* a, const int8_t* b,
              int32_t* acc);

}  // namespace kiln::cpu
