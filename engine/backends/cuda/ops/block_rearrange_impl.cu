// Kernel of DepthToSpace and SpaceToDepth (contract: block_rearrange_impl.h; host half:
// block_rearrange.cpp): a transpose of the input's 6-D view, one thread per output element
// moving raw bytes (dispatch on element size, so any fixed-size type).
#include <string>

#include "backends/cuda/ops/block_rearrange_impl.h"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::block_rearrange {
namespace {

// out[i] = in[offset of i's coordinates under `info`]: a transpose of a packed view.
template <class T>
__global__ void permuteKernel(const T* in, T* out, ShapeInfo info, int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    out[e] = in[stridedOffset(info, e)];
  }
}

template <class T>
Status permute(const PermuteLaunch& args, const ShapeInfo& info, cudaStream_t stream) {
  const int64_t total = args.total;
  permuteKernel<T><<<gridFor(total), kBlockSize, 0, stream>>>(
      static_cast<const T*>(args.in), static_cast<T*>(args.out), info, total);
  KILN_CUDA_CHECK_LAUNCH("permuteKernel");
  return Status::ok();
}

}  // namespace

// Dispatch on the element's size only: the permutation moves bytes.
Status launchPermute(const PermuteLaunch& args, cudaStream_t stream) {
  ShapeInfo info;
  info.rank = args.rank;
  for (int k = 0; k < args.rank; ++k) {
    info.dims[k] = args.dims[k];
    info.strides[k] = args.strides[k];
  }
  return dispatchWord(args.type,
                      [&](auto word) { return permute<decltype(word)>(args, info, stream); });
}

}  // namespace kiln::cuda::block_rearrange
