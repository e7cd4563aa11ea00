// DepthToSpace and SpaceToDepth on the GPU: the input reshaped to 6-D, transposed and
// reshaped back, one thread per output element moving raw bytes (dispatch on element
// size, so any fixed-size type).
//
// Contract: matches the CPU reference kernels (engine/backends/cpu/ops/shape_ops.cpp): the
// same opset ranges, attribute defaults (mode DCR), output shapes and error messages.
#include <string>
#include <vector>

#include "backends/cuda/ops/op_common.cuh"
#include "ops/block_rearrange_params.h"

namespace kiln::cuda {
namespace {

// out[i] = in[offset of i's coordinates under `info`]: a transpose of a packed view.
template <class T>
__global__ void permuteKernel(const T* in, T* out, ShapeInfo info, int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    out[e] = in[stridedOffset(info, e)];
  }
}

template <class T>
Status launchPermute(const GpuKernelContext& ctx, const DeviceTensor& in, const DeviceTensor& out,
                     const ShapeInfo& info) {
  const int64_t total = out.numel();
  permuteKernel<T>
      <<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(in.as<const T>(), out.as<T>(), info, total);
  KILN_CUDA_CHECK_LAUNCH("permuteKernel");
  return Status::ok();
}

// Reshape of the input to the 6-D `split`, transpose by `perm`, reshape to `outShape`.
Status blockRearrange(GpuKernelContext& ctx, const Shape& split, const std::vector<int>& perm,
                      const Shape& outShape) {
  const DeviceTensor& in = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  if (out.numel() == 0) return Status::ok();
  const ShapeInfo packed = packedStrides(split);
  ShapeInfo info;
  info.rank = static_cast<int>(split.size());
  for (int k = 0; k < info.rank; ++k) {
    info.dims[k] = split[perm[k]];
    info.strides[k] = packed.strides[perm[k]];
  }
  KILN_DISPATCH_BYTES(in.type, ctx, return launchPermute<T>(ctx, in, out, info));
  return Status::ok();
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

void registerBlockRearrangeGpuKernels(GpuKernelRegistry& registry) {
  registry.add("DepthToSpace", 1, 1000, &depthToSpaceOp, supportsAnyFixedSizeType);
  registry.add("SpaceToDepth", 1, 1000, &spaceToDepthOp, supportsAnyFixedSizeType);
}

}  // namespace kiln::cuda
