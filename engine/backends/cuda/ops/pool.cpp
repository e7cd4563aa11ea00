// Pooling on the GPU: MaxPool, AveragePool, LpPool and their global forms. The host half:
// attributes, geometry, checks, outputs; the kernels are pool_impl.cu's (contract:
// pool_impl.h) and, for channels-last layers, pool_channels_last.cu's.
//
// Contract: every kernel here matches the CPU reference kernel of the same op
// (engine/backends/cpu/ops/pool.cpp): the same opset ranges, attribute defaults, output
// shapes, error messages and arithmetic order where it decides results.
//  - MaxPool / AveragePool / LpPool (1-3 spatial axes): one thread per output
//    element walks its window in the CPU's order, so MaxPool's value and Indices
//    (first maximum, row- or column-major) are exact. Sums are in float (double for
//    float64 data). MaxPool also pools int8 / uint8 (compared in float, exactly; an
//    empty window gives the type's lowest, as the CPU's). GlobalAveragePool / GlobalMaxPool /
//    GlobalLpPool: one warp (small planes) or one block (large planes) reduces each (n, c) plane.
//  - Channels-last pools (ir/channels_last.h): the geometry is resolved here, the
//    kernels are pool_channels_last.cu's.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/pool_channels_last.h"
#include "backends/cuda/ops/pool_impl.h"
#include "backends/cuda/ops/op_common.h"
#include "ir/channels_last.h"
#include "ops/spatial_params.h"

namespace kiln::cuda {
namespace pool {
namespace {

// ------------------------------------------------------------------ support predicates

std::string supportsPoolTypes(const Node&, const std::vector<DataType>& types) {
  const DataType t = firstType(types);
  if (t == DataType::kUndefined || isFloatData(t)) return "";
  return std::string("no GPU pooling kernel for ") + dataTypeName(t) + " inputs";
}

// MaxPool also pools int8 / uint8 (fold_qdq's quantized MaxPools, NCHW and
// channels-last); the other pools, global MaxPool included, stay float.
std::string supportsMaxPoolTypes(const Node& node, const std::vector<DataType>& types) {
  const DataType t = firstType(types);
  if (t == DataType::kInt8 || t == DataType::kUInt8) return "";
  return supportsPoolTypes(node, types);
}

// ================================================================== pooling

// The geometry is the CPU's, parsed and checked once (ops/spatial_params.h).
using ops::SpatialGeometry;

Status poolGeometry(const GpuKernelContext& ctx, const Shape& x, bool ceilMode,
                    SpatialGeometry* g) {
  // No kernel fallback: pooling needs kernel_shape.
  Status s = ops::readSpatialAttributes(ctx.node(), x, {}, g);
  if (s.isOk()) s = ops::computeForwardGeometry(ctx.node(), ceilMode, g);
  return s.isOk() ? s : ctx.error(s.message());
}

PoolParams makePoolParams(const SpatialGeometry& g) {
  PoolParams pp;
  const int shift = 3 - g.rank();
  for (int a = 0; a < 3; ++a) {
    const int d = a - shift;
    const bool unit = d < 0;
    pp.in[a] = unit ? 1 : g.input[d];
    pp.out[a] = unit ? 1 : g.output[d];
    pp.kernel[a] = unit ? 1 : g.kernel[d];
    pp.stride[a] = unit ? 1 : g.strides[d];
    pp.dilation[a] = unit ? 1 : g.dilations[d];
    pp.padBegin[a] = unit ? 0 : g.padsBegin[d];
    pp.padEnd[a] = unit ? 0 : g.padsEnd[d];
  }
  pp.inSize = g.inputSize();
  pp.outSize = g.outputSize();
  return pp;
}

// Reads LpPool's p: a float before opset 2, an int after.
double readP(const Node& node) {
  auto it = node.attributes.find("p");
  if (it == node.attributes.end()) return 2.0;
  return it->second.kind == Attribute::Kind::kFloat ? it->second.f
                                                    : static_cast<double>(it->second.i);
}

Status runPool(GpuKernelContext& ctx, const SpatialGeometry& g, PoolParams pp) {
  const DeviceTensor& x = ctx.input(0);
  if (g.rank() > 3) return ctx.unsupported("pooling over more than 3 spatial axes");
  Shape outShape = {x.shape[0], x.shape[1]};
  outShape.insert(outShape.end(), g.output.begin(), g.output.end());
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, outShape));
  int64_t* indices = nullptr;
  if (pp.kind == kPoolMax && ctx.wantsOutput(1)) {
    if (pp.columnMajor && g.rank() != 2)
      return ctx.unsupported("storage_order 1 needs 2 spatial axes");
    KILN_ASSIGN_OR_RETURN(DeviceTensor idx, ctx.allocateOutput(1, DataType::kInt64, outShape));
    indices = idx.as<int64_t>();
  }
  pp.planes = x.shape[0] * x.shape[1];
  if (pp.outSize == 0 || pp.planes == 0) return Status::ok();
  if (pp.inSize == 0) return ctx.error("input X has an empty spatial extent");
  if (x.type == DataType::kInt8 || x.type == DataType::kUInt8) {
    if (pp.kind != kPoolMax) return ctx.unsupported("integer pooling other than MaxPool");
  } else if (!inDeviceTypes(x.type, device_types::kFloats)) {
    return unsupportedType(ctx, x.type);
  }
  return launchPoolWindow(pp, x.type, x.data, y.data, indices, ctx.stream());
}

// A channels-last MaxPool / AveragePool (ir/channels_last.h): X [N, H, W, C].
Status runChannelsLastPool(GpuKernelContext& ctx, int kind) {
  const DeviceTensor& x = ctx.input(0);
  if (x.rank() != 4) return ctx.error("a channels-last pool needs a 4-D X");
  if (kind == kPoolLp) return ctx.unsupported("channels-last LpPool");
  if (ctx.wantsOutput(1)) return ctx.unsupported("channels-last MaxPool with indices");
  const Node& node = ctx.node();
  SpatialGeometry g;
  KILN_RETURN_IF_ERROR(
      poolGeometry(ctx, toChannelsFirstShape(x.shape), node.attrInt("ceil_mode", 0) != 0, &g));
  KILN_ASSIGN_OR_RETURN(
      DeviceTensor y,
      ctx.allocateOutput(0, x.type, {x.shape[0], g.output[0], g.output[1], x.shape[3]}));
  ChannelsLastWindow p;
  p.n = x.shape[0];
  p.h = x.shape[1];
  p.w = x.shape[2];
  p.c = x.shape[3];
  p.outH = g.output[0];
  p.outW = g.output[1];
  p.kernelH = static_cast<int>(g.kernel[0]);
  p.kernelW = static_cast<int>(g.kernel[1]);
  p.strideH = static_cast<int>(g.strides[0]);
  p.strideW = static_cast<int>(g.strides[1]);
  p.dilationH = static_cast<int>(g.dilations[0]);
  p.dilationW = static_cast<int>(g.dilations[1]);
  p.padTop = static_cast<int>(g.padsBegin[0]);
  p.padLeft = static_cast<int>(g.padsBegin[1]);
  p.padBottom = static_cast<int>(g.padsEnd[0]);
  p.padRight = static_cast<int>(g.padsEnd[1]);
  p.max = kind == kPoolMax;
  p.countIncludePad = node.attrInt("count_include_pad", 0) != 0;
  if (p.n * p.outH * p.outW * p.c > 0 && p.h * p.w == 0)
    return ctx.error("input X has an empty spatial extent");
  ctx.setImplementation("kiln channels-last pool");
  return poolChannelsLast(p, x.type, x.data, y.data, ctx.stream());
}

template <int kKind>
Status poolOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  if (isChannelsLast(ctx.node())) return runChannelsLastPool(ctx, kKind);
  const Node& node = ctx.node();
  SpatialGeometry g;
  KILN_RETURN_IF_ERROR(
      poolGeometry(ctx, ctx.input(0).shape, node.attrInt("ceil_mode", 0) != 0, &g));
  PoolParams pp = makePoolParams(g);
  pp.kind = kKind;
  pp.countIncludePad = node.attrInt("count_include_pad", 0) != 0;
  pp.p = readP(node);
  pp.columnMajor = node.attrInt("storage_order", 0) == 1;
  if (kKind == kPoolLp && !(pp.p > 0)) return ctx.error("attribute 'p' must be positive");
  return runPool(ctx, g, pp);
}

template <int kKind>
Status globalPoolOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  if (x.rank() < 3) return ctx.error("input X must have rank >= 3, got " + shapeToString(x.shape));
  if (isChannelsLast(ctx.node())) {  // X [N, H, W, C] -> Y [N, 1, 1, C]
    if (x.rank() != 4 || kKind == kPoolLp)
      return ctx.unsupported("channels-last global pooling other than 4-D average / max");
    KILN_ASSIGN_OR_RETURN(DeviceTensor y,
                          ctx.allocateOutput(0, x.type, {x.shape[0], 1, 1, x.shape[3]}));
    ctx.setImplementation("kiln channels-last global pool");
    return globalPoolChannelsLast(x.shape[0], x.shape[1] * x.shape[2], x.shape[3],
                                  kKind == kPoolMax, x.type, x.data, y.data, ctx.stream());
  }
  Shape outShape(x.shape.size(), 1);
  outShape[0] = x.shape[0];
  outShape[1] = x.shape[1];
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, outShape));
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t size =
      planes == 0 ? shapeNumel(Shape(x.shape.begin() + 2, x.shape.end())) : x.numel() / planes;
  if (planes == 0) return Status::ok();
  if (size == 0) return ctx.error("input X has an empty spatial extent");
  if (!inDeviceTypes(x.type, kGlobalPoolTypes)) return unsupportedType(ctx, x.type);
  return launchGlobalPool(x.type, x.data, y.data, planes, size, kKind, readP(ctx.node()),
                          ctx.stream());
}

}  // namespace
}  // namespace pool

void registerPoolGpuKernels(GpuKernelRegistry& registry) {
  using namespace pool;
  // Pooling: the CPU reads ceil_mode, dilations and storage_order whenever present.
  // 8-bit MaxPool (opset 12) runs on the device too; 8-bit global pooling stays on the host.
  registry.add("MaxPool", 1, 1000, &poolOp<kPoolMax>, supportsMaxPoolTypes);
  registry.add("AveragePool", 1, 1000, &poolOp<kPoolAverage>, supportsPoolTypes);
  registry.add("LpPool", 1, 1000, &poolOp<kPoolLp>, supportsPoolTypes);
  registry.add("GlobalMaxPool", 1, 1000, &globalPoolOp<kPoolMax>, supportsPoolTypes);
  registry.add("GlobalAveragePool", 1, 1000, &globalPoolOp<kPoolAverage>, supportsPoolTypes);
  registry.add("GlobalLpPool", 1, 1000, &globalPoolOp<kPoolLp>, supportsPoolTypes);
}

}  // namespace kiln::cuda
