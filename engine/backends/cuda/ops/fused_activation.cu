#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/fused_activation.h"

namespace kiln::cuda {
namespace {

template <class T>
__global__ void geluErfKernel(T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float x = toFloat(y[i]);
    y[i] = fromFloat<T>(x * 0.5f * (1.0f + erff(x * 0.70710678118654752f)));
  }
}

// What KILN_DISPATCH_FLOAT reports a type it does not take through.
struct StatusOnly {
  Status unsupported(const std::string& message) const { return kiln::unsupported(message); }
};

}  // namespace

Status geluErfInPlace(void* y, DataType type, int64_t n, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  StatusOnly context;
  if (type == DataType::kFloat64)
    return unsupported("GELU epilogue in float64");  // not a storage type
  KILN_DISPATCH_FLOAT(type, context,
                      geluErfKernel<<<gridFor(n), kBlockSize, 0, stream>>>(static_cast<T*>(y), n));
  KILN_CUDA_CHECK_LAUNCH("geluErfKernel");
  return Status::ok();
}

}  // namespace kiln::cuda
