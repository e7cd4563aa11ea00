#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/libraries.h"

namespace kiln::cuda {

Status cudaErrorStatus(cudaError_t error, const char* what) {
  std::string message =
      std::string(what) + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
  if (error == cudaErrorMemoryAllocation) {
    return Status(StatusCode::kOutOfMemory, "GPU out of memory: " + message);
  }
  return Status(StatusCode::kInternal, "CUDA error: " + message);
}

Status cublasStatus(cublasStatus_t status, const char* what) {
  // cublasLtGetStatusString names the status, or the missing library (lazy_libraries.h).
  std::string message = std::string(what) + ": cuBLAS status " + std::to_string(int(status)) +
                        " (" + cublasLtGetStatusString(status) + ")";
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return Status(StatusCode::kOutOfMemory, message);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return Status(StatusCode::kUnsupported, message);
  return Status(StatusCode::kInternal, message);
}

std::string cudnnLastError() {
  char message[1024] = {};
  cudnnGetLastErrorString(message, sizeof(message));
  message[sizeof(message) - 1] = '\0';
  return message;
}

Status cudnnStatus(cudnnStatus_t status, const char* what) {
  std::string message = std::string(what) + ": " + cudnnGetErrorString(status);
  if (const std::string detail = cudnnLastError(); !detail.empty())
    message += " (cuDNN: " + detail + ")";
  if (status == CUDNN_STATUS_NOT_SUPPORTED || status == CUDNN_STATUS_NOT_SUPPORTED_SHAPE) {
    return Status(StatusCode::kUnsupported, message);
  }
  if (status == CUDNN_STATUS_ALLOC_FAILED) return Status(StatusCode::kOutOfMemory, message);
  return Status(StatusCode::kInternal, message);
}

Status GpuKernelContext::error(const std::string& message) const {
  return nodeStatus(StatusCode::kInvalidArgument, node(), message);
}

Status GpuKernelContext::unsupported(const std::string& message) const {
  return nodeStatus(StatusCode::kUnsupported, node(), message + " (CUDA backend)");
}

}  // namespace kiln::cuda
