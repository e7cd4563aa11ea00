// The channels-last INT8 convolution through cuDNN (int8_conv_cudnn.cpp), which the
// QuantizedConv kernel (int8_layers.cpp) calls for nodes with kiln_channels_last = 1.
#pragma once

#include "backends/cuda/gpu_kernel.h"
#include "ir/quantized_layers.h"

namespace kiln::cuda {

// The storage of an INT8 layer's float Y (QuantizedConv, QuantizedMatMul; every CUDA path):
// the node's float_output_type (a strongly typed model's float16 after the layer), else
// the engine's float storage.
inline DataType int8FloatOutputType(const GpuKernelContext& ctx) {
  const DataType t = quantizedFloatOutputType(ctx.node());
  return t == DataType::kFloat32 ? ctx.floatType() : ctx.storageType(t);
}

// Runs the context's channels-last QuantizedConv (NHWC int8 X, KRSC int8 W, optional
// NHWC float Z, int8 or float NHWC Y) as one cuDNN fused graph. kUnsupported (the
// node then runs on the host fallback, with the reason) for what cuDNN's path does
// not take: non-zero zero points, activations other than ReLU, no engine.
Status quantizedConvChannelsLast(GpuKernelContext& ctx);

}  // namespace kiln::cuda
