// Status conversion for CUDA, cuBLASLt and cuDNN return codes. Every library call
// of the CUDA backend goes through one of these macros; a failed launch is caught
// by KILN_CUDA_CHECK_LAUNCH right after it.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kiln/status.h"

namespace kiln::cuda {

// kOutOfMemory for allocation failures, kInternal otherwise; message names `what`.
Status cudaErrorStatus(cudaError_t error, const char* what);

}  // namespace kiln::cuda

#define KILN_CUDA_CHECK(expr)                                        \
  do {                                                               \
    cudaError_t kiln_cuda_error_ = (expr);                           \
    if (kiln_cuda_error_ != cudaSuccess)                             \
      return ::kiln::cuda::cudaErrorStatus(kiln_cuda_error_, #expr); \
  } while (0)

// After a <<<>>> launch: reports a bad configuration or a sticky error by name.
#define KILN_CUDA_CHECK_LAUNCH(kernelName)                                \
  do {                                                                    \
    cudaError_t kiln_cuda_error_ = cudaGetLastError();                    \
    if (kiln_cuda_error_ != cudaSuccess)                                  \
      return ::kiln::cuda::cudaErrorStatus(kiln_cuda_error_, kernelName); \
  } while (0)
