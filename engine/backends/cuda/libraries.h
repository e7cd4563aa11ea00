// Per-context library handles: one cuBLASLt and one cuDNN handle bound to the
// context's stream. Handles are created lazily (cuDNN's first handle costs ~100 ms)
// and are never shared between contexts, so contexts may run concurrently.
#pragma once

#include <cublasLt.h>
#include <cudnn.h>
#include <cuda_runtime_api.h>

#include <string>

#include "kiln/status.h"

namespace kiln::cuda {

class Libraries {
 public:
  Libraries() = default;
  ~Libraries();
  Libraries(const Libraries&) = delete;
  Libraries& operator=(const Libraries&) = delete;

  Result<cublasLtHandle_t> cublasLt();
  // The cuDNN handle, set to `stream`.
  Result<cudnnHandle_t> cudnn(cudaStream_t stream);

 private:
  cublasLtHandle_t m_cublasLt = nullptr;
  cudnnHandle_t m_cudnn = nullptr;
  cudaStream_t m_cudnnStream = nullptr;
};

Status cublasStatus(cublasStatus_t status, const char* what);
// A failed cuDNN call as a Status: `what`, the status name and cuDNN's own last
// message for this thread (cudnnGetLastErrorString), which names the attribute or
// the graph pattern it refused.
Status cudnnStatus(cudnnStatus_t status, const char* what);
// cuDNN's last error message on this thread ("" when it has none).
std::string cudnnLastError();

}  // namespace kiln::cuda

#define KILN_CUBLAS_CHECK(expr)                                      \
  do {                                                               \
    cublasStatus_t kiln_cublas_status_ = (expr);                     \
    if (kiln_cublas_status_ != CUBLAS_STATUS_SUCCESS)                \
      return ::kiln::cuda::cublasStatus(kiln_cublas_status_, #expr); \
  } while (0)

#define KILN_CUDNN_CHECK(expr)                                     \
  do {                                                             \
    cudnnStatus_t kiln_cudnn_status_ = (expr);                     \
    if (kiln_cudnn_status_ != CUDNN_STATUS_SUCCESS)                \
      return ::kiln::cuda::cudnnStatus(kiln_cudnn_status_, #expr); \
  } while (0)
