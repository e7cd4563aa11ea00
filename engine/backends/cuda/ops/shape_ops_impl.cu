// Kernel of the shape ops (contract: shape_ops_impl.h): Shape's and Size's int64 values,
// carried in the kernel's parameters.
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/shape_ops_impl.h"

namespace kiln::cuda {
namespace {

__global__ void writeInt64sKernel(SmallInt64s values, int64_t* out) {
  int i = threadIdx.x;
  if (i < values.count) out[i] = values.values[i];
}

}  // namespace

Status launchWriteInt64s(const SmallInt64s& values, int64_t* out, cudaStream_t stream) {
  writeInt64sKernel<<<1, kMaxRank, 0, stream>>>(values, out);
  KILN_CUDA_CHECK_LAUNCH("writeInt64sKernel");
  return Status::ok();
}

}  // namespace kiln::cuda
