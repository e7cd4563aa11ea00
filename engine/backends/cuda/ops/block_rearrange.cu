// DepthToSpace and SpaceToDepth on the GPU: the input reshaped to 6-D, transposed and
// reshaped back, one thread per output element moving raw bytes (dispatch on element
// size, so any fixed-size type).
//
// Contract: matches the CPU reference kernels (engine/backends/cpu/ops/shape_ops.cpp): the
// same opset ranges, attribute defaults (mode DCR), output shapes and error messages.
#include <string>
#include <vector>

#include "backends/cuda/ops/op_common.cuh"

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

Status blockSizeAndInput(const GpuKernelContext& ctx, int64_t* block) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  if (ctx.input(0).rank() != 4) {
    return ctx.error("input must be 4-D NCHW, got " + shapeToString(ctx.input(0).shape));
  }
  *block = ctx.node().attrInt("blocksize", 0);
  if (*block <= 0) return ctx.error("blocksize must be positive");
  return Status::ok();
}

Status depthToSpaceOp(GpuKernelContext& ctx) {
  int64_t b = 0;
  KILN_RETURN_IF_ERROR(blockSizeAndInput(ctx, &b));
  const Shape& s = ctx.input(0).shape;
  if (s[1] % (b * b) != 0) return ctx.error("channels are not a multiple of blocksize^2");
  const int64_t c = s[1] / (b * b);
  const Shape outShape = {s[0], c, s[2] * b, s[3] * b};
  const std::string mode = ctx.node().attrString("mode", "DCR");
  if (mode == "DCR")
    return blockRearrange(ctx, {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2}, outShape);
  if (mode == "CRD")
    return blockRearrange(ctx, {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3}, outShape);
  return ctx.error("unknown mode '" + mode + "'");
}

Status spaceToDepthOp(GpuKernelContext& ctx) {
  int64_t b = 0;
  KILN_RETURN_IF_ERROR(blockSizeAndInput(ctx, &b));
  const Shape& s = ctx.input(0).shape;
  if (s[2] % b != 0 || s[3] % b != 0)
    return ctx.error("height and width must be multiples of blocksize");
  const Shape split = {s[0], s[1], s[2] / b, b, s[3] / b, b};
  const Shape outShape = {s[0], s[1] * b * b, s[2] / b, s[3] / b};
  const std::string mode = ctx.node().attrString("mode", "DCR");
  if (mode == "DCR") return blockRearrange(ctx, split, {0, 3, 5, 1, 2, 4}, outShape);
  if (mode == "CRD") return blockRearrange(ctx, split, {0, 1, 3, 5, 2, 4}, outShape);
  return ctx.error("unknown mode '" + mode + "'");
}

}  // namespace

void registerBlockRearrangeGpuKernels(GpuKernelRegistry& registry) {
  registry.add("DepthToSpace", 1, 1000, &depthToSpaceOp, supportsAnyFixedSizeType);
  registry.add("SpaceToDepth", 1, 1000, &spaceToDepthOp, supportsAnyFixedSizeType);
}

}  // namespace kiln::cuda
