// CopyConcat on the GPU: three device-to-device copies on the caller's stream (the
// layout is row-major, so concatenation along dimension 0 is A's bytes then B's).
#include <cuda_runtime_api.h>

#include "copy_concat_plugin.h"

namespace kiln_examples {

int32_t copyConcatOnStream(const void* a, size_t bytesA, const void* b, size_t bytesB,
                           void* copyOut, void* concatOut, void* stream, const char** error) {
  auto s = static_cast<cudaStream_t>(stream);
  auto* concat = static_cast<unsigned char*>(concatOut);
  cudaError_t e = cudaSuccess;
  if (bytesB) e = cudaMemcpyAsync(copyOut, b, bytesB, cudaMemcpyDeviceToDevice, s);
  if (e == cudaSuccess && bytesA)
    e = cudaMemcpyAsync(concat, a, bytesA, cudaMemcpyDeviceToDevice, s);
  if (e == cudaSuccess && bytesB)
    e = cudaMemcpyAsync(concat + bytesA, b, bytesB, cudaMemcpyDeviceToDevice, s);
  if (e != cudaSuccess) {
    *error = cudaGetErrorString(e);
    return kiln::plugin::kStatusCudaError;
  }
  return kiln::plugin::kStatusSuccess;
}

}  // namespace kiln_examples
