// CUDA kernels for quantization, host half: QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear here (their checks, outputs and launch arguments; device half:
// quantize_impl.cu, contract quantize_impl.h); MatMulInteger and QLinearMatMul in
// matmul_integer.cpp.
//
// Contract: the CPU kernels' opset ranges, attributes, defaults, error messages and
// bit-exact results (cpu/ops/quantize.cpp, cpu/ops/matmul.cpp). Scale and zero point
// are per tensor, per axis or blocked (block_size), mapped to x's elements by
// QuantLayout exactly as the CPU does. Values are read as float like the CPU's
// readFloats; integer targets round half to even (rint) and saturate; float8
// (e4m3fn, e5m2) and float4e2m1 codes use device ports of common/data_type.cpp's
// converters (quantize_impl.cu). int4/uint4/int2/uint2 are stored unpacked, one value
// per byte, like the CPU. The integer GEMM is a 16x16 shared-memory tiled kernel
// accumulating in int32 (MatMulInteger wraps like the CPU's cast; QLinearMatMul refuses
// K beyond the int32-exact range instead of diverging from the CPU's exact sum).
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/matmul_integer.h"
#include "backends/cuda/ops/quantize_common.h"
#include "backends/cuda/ops/quantize_impl.h"
#include "ops/quantize_params.h"

namespace kiln::cuda {
namespace {

using namespace qz;

using ops::integerRange;

// ---- Scale layout -------------------------------------------------------------------

// The layout of x's scale / zero point (ops/quantize_params.h, as the CPU's), its errors
// named after the node.
Status makeLayout(const GpuKernelContext& ctx, const DeviceTensor& x, const DeviceTensor& scale,
                  const DeviceTensor* zeroPoint, ops::QuantLayout* layout) {
  auto made =
      ops::quantLayout(ctx.node(), x.shape, scale.shape, zeroPoint ? &zeroPoint->shape : nullptr);
  if (!made.isOk()) return ctx.error(made.status().message());
  *layout = made.value();
  return Status::ok();
}

// ---- QuantizeLinear / DequantizeLinear ----------------------------------------------

Status quantizeLinearKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& scale = ctx.input(1);
  const DeviceTensor* zeroPoint = inputOrNull(ctx, 2);
  DataType outType = DataType::kUInt8;
  const int64_t outputDtype = ctx.node().attrInt("output_dtype", 0);
  if (zeroPoint) {
    outType = zeroPoint->type;
    if (outputDtype != 0 && outputDtype != static_cast<int64_t>(outType)) {
      return ctx.error("attribute 'output_dtype' differs from the zero point type");
    }
  } else if (outputDtype != 0) {
    outType = static_cast<DataType>(outputDtype);
  }
  if (!isFloatData(x.type) && x.type != DataType::kInt32) {
    return ctx.unsupported(std::string("input x of type ") + dataTypeName(x.type));
  }
  if (!isFloatData(scale.type)) {
    return ctx.unsupported(std::string("scale of type ") + dataTypeName(scale.type));
  }
  QuantizeLaunch p;
  KILN_RETURN_IF_ERROR(makeLayout(ctx, x, scale, zeroPoint, &p.layout));
  const bool isInt = integerRange(outType, &p.lo, &p.hi);
  if (!isInt && !isFloatCode(outType)) {
    return ctx.unsupported(std::string("quantizing to ") + dataTypeName(outType));
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, outType, x.shape));
  if (x.numel() == 0) return Status::ok();
  p.x = x.data;
  p.xType = x.type;
  p.scale = scale.data;
  p.scaleType = scale.type;
  if (zeroPoint && isInt) {
    p.zeroPoint = zeroPoint->data;
    p.zeroType = zeroPoint->type;
  }
  p.y = y.data;
  p.yType = outType;
  p.saturate = ctx.node().attrInt("saturate", 1) != 0;
  p.n = x.numel();
  return launchQuantize(p, ctx.stream());
}

Status dequantizeLinearKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& scale = ctx.input(1);
  const DeviceTensor* zeroPoint = inputOrNull(ctx, 2);
  // Float codes (float8, float4): their zero point must be zero and is not subtracted.
  const bool floatCodes = isFloatCode(x.type);
  double lo, hi;
  if (!floatCodes && !integerRange(x.type, &lo, &hi) && x.type != DataType::kInt32) {
    return ctx.unsupported(std::string("dequantizing ") + dataTypeName(x.type));
  }
  if (zeroPoint && zeroPoint->type != x.type) {
    return ctx.error("x_zero_point must have the type of x");
  }
  if (!isFloatData(scale.type)) {
    return ctx.unsupported(std::string("scale of type ") + dataTypeName(scale.type));
  }
  QuantizeLaunch p;
  KILN_RETURN_IF_ERROR(makeLayout(ctx, x, scale, zeroPoint, &p.layout));
  const int64_t outputDtype = ctx.node().attrInt("output_dtype", 0);
  const DataType outType =
      outputDtype != 0 ? ctx.storageType(static_cast<DataType>(outputDtype)) : scale.type;
  if (!isFloatData(outType)) {
    return ctx.unsupported("DequantizeLinear output must be a float type");
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, outType, x.shape));
  if (x.numel() == 0) return Status::ok();
  p.x = x.data;
  p.xType = x.type;
  p.scale = scale.data;
  p.scaleType = scale.type;
  if (zeroPoint && !floatCodes) {
    p.zeroPoint = zeroPoint->data;
    p.zeroType = zeroPoint->type;
  }
  p.y = y.data;
  p.yType = outType;
  p.n = x.numel();
  return launchDequantize(p, ctx.stream());
}

bool isQuantizedCode(DataType t) {
  double lo, hi;
  return integerRange(t, &lo, &hi) || isFloatCode(t);
}

std::string supportsQuantize(const Node& node, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0), scale = typeAt(types, 1), zero = typeAt(types, 2);
  if (!isFloatData(x) && x != DataType::kInt32)
    return std::string("no GPU kernel for QuantizeLinear of ") + dataTypeName(x);
  if (!isFloatData(scale))
    return std::string("no GPU kernel for a scale of ") + dataTypeName(scale);
  const int64_t outputDtype = node.attrInt("output_dtype", 0);
  const DataType out = zero != DataType::kUndefined ? zero
                       : outputDtype != 0           ? static_cast<DataType>(outputDtype)
                                                    : DataType::kUInt8;
  if (!isQuantizedCode(out))
    return std::string("no GPU kernel for quantizing to ") + dataTypeName(out);
  return "";
}

std::string supportsDequantize(const Node& node, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0), scale = typeAt(types, 1);
  if (!isQuantizedCode(x) && x != DataType::kInt32)
    return std::string("no GPU kernel for dequantizing ") + dataTypeName(x);
  if (!isFloatData(scale))
    return std::string("no GPU kernel for a scale of ") + dataTypeName(scale);
  const int64_t outputDtype = node.attrInt("output_dtype", 0);
  if (outputDtype != 0 && !isFloatData(static_cast<DataType>(outputDtype)))
    return "DequantizeLinear output must be a float type";
  return "";
}

// ---- DynamicQuantizeLinear ----------------------------------------------------------

Status dynamicQuantizeLinearKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  if (x.type != DataType::kFloat32 && x.type != DataType::kFloat16 &&
      x.type != DataType::kBFloat16) {
    return ctx.unsupported("DynamicQuantizeLinear needs float32 x");
  }
  const int64_t n = x.numel();
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, DataType::kUInt8, x.shape));
  void* scaleOut = nullptr;
  uint8_t* zeroOut = nullptr;
  const DataType scaleType = ctx.storageType(DataType::kFloat32);
  if (ctx.outputCount() > 1) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor s, ctx.allocateOutput(1, scaleType, {}));
    scaleOut = s.data;
  }
  if (ctx.outputCount() > 2) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor z, ctx.allocateOutput(2, DataType::kUInt8, {}));
    zeroOut = z.as<uint8_t>();
  }
  KILN_ASSIGN_OR_RETURN(void* workspace, ctx.workspace(dynamicQuantizeWorkspaceBytes(n)));
  DynamicQuantizeLaunch launch;
  launch.x = x.data;
  launch.xType = x.type;
  launch.n = n;
  launch.y = y.as<uint8_t>();
  launch.scaleOut = scaleOut;
  launch.scaleType = scaleType;
  launch.zeroOut = zeroOut;
  launch.workspace = workspace;
  return launchDynamicQuantize(launch, ctx.stream());
}

std::string supportsDynamicQuantize(const Node&, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0);
  if (x != DataType::kFloat32 && x != DataType::kFloat16 && x != DataType::kBFloat16)
    return "DynamicQuantizeLinear needs float32 x";
  return "";
}
}  // namespace

void registerQuantizeGpuKernels(GpuKernelRegistry& registry) {
  // One kernel per op, as on the CPU: axis (13), float8 + saturate (19), blocks,
  // int4 and output_dtype (21) are attributes or types older models never use.
  registry.add("QuantizeLinear", 10, 1000, &quantizeLinearKernel, &supportsQuantize);
  registry.add("DequantizeLinear", 10, 1000, &dequantizeLinearKernel, &supportsDequantize);
  registry.add("DynamicQuantizeLinear", 11, 1000, &dynamicQuantizeLinearKernel,
               &supportsDynamicQuantize);
  registerIntegerMatMulGpuKernels(registry);
}

}  // namespace kiln::cuda
