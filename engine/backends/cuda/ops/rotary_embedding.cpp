// RotaryEmbedding (opset 23) on the GPU, with the attributes, defaults and error messages
// of the CPU kernel (backends/cpu/ops/rotary_embedding.cpp). The host half: the geometry,
// the position ids' type and the output; the kernel is rotary_embedding_impl.cu's
// (contract: rotary_embedding_impl.h).
//
// Contract: 3-D (num_heads) and 4-D input, interleaved or split pairs,
// rotary_embedding_dim, caches indexed by position_ids or (batch, seq, dim/2); float32,
// float16 and bfloat16, computed in float. position_ids stay on the device and are never
// waited on: a position outside the cache cannot raise the CPU's error, so its rotated
// features come out as zeros.
#include <string>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/op_common.h"
#include "backends/cuda/ops/rotary_embedding_impl.h"
#include "ops/rotary_params.h"

namespace kiln::cuda {
namespace {

Status rotaryEmbeddingKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& cosCache = ctx.input(1);
  const DeviceTensor& sinCache = ctx.input(2);
  const DeviceTensor* ids = ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  auto geometry = ops::rotaryGeometry(ctx.node(), x.shape, x.type, cosCache.shape, cosCache.type,
                                      sinCache.shape, sinCache.type, ids ? &ids->shape : nullptr,
                                      ids ? ids->type : DataType::kUndefined);
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  RotaryParams p;
  static_cast<ops::RotaryGeometry&>(p) = geometry.value();
  if (ids) {
    if (!isIndexType(ids->type))
      return ctx.unsupported(std::string("position_ids of type ") + dataTypeName(ids->type));
    p.ids = ids->data;
    p.ids64 = ids->type == DataType::kInt64;
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, x.type, kRotaryDeviceTypes));
  RotaryLaunch args;
  args.type = x.type;
  args.x = x.data;
  args.cosCache = cosCache.data;
  args.sinCache = sinCache.data;
  args.y = y.data;
  args.n = x.numel();
  args.params = p;
  return launchRotaryEmbedding(args, ctx.stream());
}

std::string supportsRotary(const Node&, const std::vector<DataType>& types) {
  for (size_t i = 0; i < 3; ++i) {
    const DataType t = typeAt(types, i);
    if (t != DataType::kUndefined && !isFloatStorage(t))
      return std::string("no GPU kernel for ") + dataTypeName(t) + " inputs";
  }
  const DataType ids = typeAt(types, 3);
  if (ids != DataType::kUndefined && !isIndexType(ids))
    return std::string("no GPU kernel for position_ids of type ") + dataTypeName(ids);
  return "";
}

}  // namespace

void registerRotaryEmbeddingGpuKernel(GpuKernelRegistry& registry) {
  registry.add("RotaryEmbedding", 23, 1000, rotaryEmbeddingKernel, supportsRotary);
}

}  // namespace kiln::cuda
