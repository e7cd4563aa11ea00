// DepthToSpace and SpaceToDepth on the GPU: the input reshaped to 6-D, transposed and
// reshaped back, one thread per output element moving raw bytes (dispatch on element
// size, so any fixed-size type). The host half: the view, the permutation and the output;
// the kernel is block_rearrange_impl.cu's (contract: block_rearrange_impl.h).
//
// Contract: matches the CPU reference kernels (engine/backends/cpu/ops/shape_ops.cpp): the
// same opset ranges, attribute defaults (mode DCR), output shapes and error messages.
#include <string>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/block_rearrange_impl.h"
#include "backends/cuda/ops/op_common.h"
#include "ops/block_rearrange_params.h"

namespace kiln::cuda {
namespace block_rearrange {
namespace {

// Reshape of the input to the 6-D `split`, transpose by `perm`, reshape to `outShape`.
Status blockRearrange(GpuKernelContext& ctx, const Shape& split, const std::vector<int>& perm,
                      const Shape& outShape) {
  const DeviceTensor& in = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  if (out.numel() == 0) return Status::ok();
  // The packed strides of `split` (device_common's packedStrides: 0 on dims of one
  // element), read in the order of `perm`.
  const int rank = static_cast<int>(split.size());
  int64_t packed[kPermuteMaxRank] = {};
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    packed[d] = split[d] == 1 ? 0 : stride;
    stride *= split[d];
  }
  PermuteLaunch args;
  args.in = in.data;
  args.out = out.data;
  args.type = in.type;
  args.total = out.numel();
  args.rank = rank;
  for (int k = 0; k < rank; ++k) {
    args.dims[k] = split[perm[k]];
    args.strides[k] = packed[perm[k]];
  }
  if (!isWordSized(in.type)) return unsupportedType(ctx, in.type);
  return launchPermute(args, ctx.stream());
}

// DepthToSpace / SpaceToDepth: the 6-D view and permutation of ops/block_rearrange_params.h.
Status blockRearrangeOp(GpuKernelContext& ctx, bool toSpace) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  auto r = ops::blockRearrangeOf(ctx.node(), ctx.input(0).shape, toSpace);
  if (!r.isOk()) return ctx.error(r.status().message());
  return blockRearrange(ctx, r->split, r->perm, r->outShape);
}

Status depthToSpaceOp(GpuKernelContext& ctx) {
  return blockRearrangeOp(ctx, true);
}

Status spaceToDepthOp(GpuKernelContext& ctx) {
  return blockRearrangeOp(ctx, false);
}

}  // namespace
}  // namespace block_rearrange

void registerBlockRearrangeGpuKernels(GpuKernelRegistry& registry) {
  registry.add("DepthToSpace", 1, 1000, &block_rearrange::depthToSpaceOp, supportsAnyFixedSizeType);
  registry.add("SpaceToDepth", 1, 1000, &block_rearrange::spaceToDepthOp, supportsAnyFixedSizeType);
}

}  // namespace kiln::cuda
