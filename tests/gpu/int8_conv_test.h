// What the INT8 GPU tests share (test_cuda_int8.cpp, test_cuda_int8_choices.cpp): scalar
// and int8 tensors, per-channel scales, the channels-last QuantizedConv layers they run and
// a one-layer run that checks where the layer ran and what it says it ran.
#pragma once

#include <cmath>
#include <vector>

#include "gpu/gpu_op_test.h"
#include "ir/quantized_layers.h"
#include "kiln/passes.h"
#include "support/op_test.h"

namespace kiln::test {

inline Tensor scalar(DataType type, double v) {
  return castTensor(Tensor::fromVector(DataType::kFloat64, {}, std::vector<double>{v}), type);
}

inline Tensor int8Weights(const Shape& shape, uint32_t seed) {
  return castTensor(randomTensor(DataType::kInt64, shape, seed, -127, 127), DataType::kInt8);
}

inline Tensor channelScales(int64_t channels, uint32_t seed) {
  return randomTensor(DataType::kFloat32, {channels}, seed, 0.002, 0.02);
}

// What a QuantizedConv adds as its residual Z.
enum class Residual { kNone, kFloat, kInt8 };

// A channels-last QuantizedConv (NHWC int8 X, KRSC int8 W, symmetric) as the
// channels_last_layout pass leaves it: one cuDNN fused graph (int8_conv_cudnn.cpp).
inline GpuOpTest channelsLastInt8Conv(bool int8Out, Residual residual) {
  GpuOpTest t(kQuantizedConvOp, 1, kKilnDomain);
  t.attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .attr("activation", std::string("relu"))
      .attr("kiln_channels_last", int64_t{1})
      .input(int8Weights({2, 7, 7, 16}, 11))  // X [N, H, W, C] int8 values
      .constant(int8Weights({32, 3, 3, 16}, 12))
      .constant(randomTensor(DataType::kFloat32, {32}, 13));
  if (residual == Residual::kFloat)
    t.input(randomTensor(DataType::kFloat32, {2, 7, 7, 32}, 14));
  else if (residual == Residual::kInt8)
    t.input(int8Weights({2, 7, 7, 32}, 14));
  else
    t.missingInput();
  t.constant(scalar(DataType::kFloat32, 0.02))
      .constant(scalar(DataType::kInt8, 0))
      .constant(channelScales(32, 15));
  if (int8Out)
    t.constant(scalar(DataType::kFloat32, 0.05)).constant(scalar(DataType::kInt8, 0));
  else if (residual == Residual::kInt8)
    t.missingInput().missingInput();
  if (residual == Residual::kInt8) t.constant(scalar(DataType::kFloat32, 0.03));  // z_scale
  return t;
}

// A channels-last QuantizedConv with an int8 Y (scales that keep most values inside
// (0, 127)), ReLU, and an int8 residual when `residual`: X [N, H, W, C], W [K, R, S, C].
inline GpuOpTest int8EpilogueConv(const Shape& x, const Shape& w, int64_t stride, int64_t pad,
                                  bool residual, const Shape& y) {
  GpuOpTest t(kQuantizedConvOp, 1, kKilnDomain);
  const int64_t k = w[0];
  t.attr("activation", std::string("relu"))
      .attr("kiln_channels_last", int64_t{1})
      .attr("strides", std::vector<int64_t>{stride, stride})
      .attr("pads", std::vector<int64_t>{pad, pad, pad, pad})
      .input(int8Weights(x, 28))
      .constant(int8Weights(w, 29))
      .constant(randomTensor(DataType::kFloat32, {k}, 30));
  if (residual)
    t.input(int8Weights(y, 31));
  else
    t.missingInput();
  const double depth = static_cast<double>(w[1] * w[2] * w[3]);
  t.constant(scalar(DataType::kFloat32, 0.02))
      .constant(scalar(DataType::kInt8, 0))
      .constant(channelScales(k, 32))
      .constant(scalar(DataType::kFloat32, 0.4 * std::sqrt(depth / 128.0)))
      .constant(scalar(DataType::kInt8, 0));
  if (residual) t.constant(scalar(DataType::kFloat32, 0.3));
  return t;
}

// Runs the one-layer `net` of `t` on the GPU (FP16 engine, poisoned output) and checks
// that the layer ran there with `expected` in its implementation text; its output. `code`:
// the engine's compiled code (shared with the runs given the same object).
inline Tensor runOneGpuLayer(const GpuOpTest& t, const Network& net, const char* expected,
                             std::shared_ptr<cuda::CompiledCode> code) {
  std::vector<cuda::LayerInfo> layers;
  auto out = runCudaPoisoned(net, t.feeds(), cuda::Precision::kFloat16, "out0", &layers, false, {},
                             std::move(code));
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(layers.size(), 1u);
  if (!out.isOk() || layers.size() != 1) return Tensor();
  EXPECT_NE(layers[0].implementation.find(expected), std::string::npos) << layers[0].implementation;
  EXPECT_EQ(layers[0].placement, cuda::LayerPlacement::kGpu) << layers[0].note;
  return out.value();
}

}  // namespace kiln::test
