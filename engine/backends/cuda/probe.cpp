#include <cublasLt.h>
#include <cublas_api.h>
#include <cudnn.h>
#include <cuda_runtime_api.h>

#include "backends/cuda/lazy_libraries.h"
#include "kiln/cuda_build_versions.h"
#include "kiln/cuda_runtime.h"

namespace kiln::cuda {

bool builtWithCuda() {
  return true;
}

CudaBuildVersions cudaBuildVersions() {
  return {CUDART_VERSION, CUDNN_VERSION, CUBLAS_VERSION};
}

DeviceInfo probeCudaDevice(int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  cudaRuntimeGetVersion(&info.runtimeVersion);
  // The libraries first: the package installs without them (docs/packaging.md), and
  // without them no GPU layer can be built or run whatever the driver says.
  if (const std::string missing = missingCudaLibraries(); !missing.empty()) {
    info.reason = missing;
    return info;
  }
  cudaError_t error = cudaDriverGetVersion(&info.driverVersion);
  if (error != cudaSuccess || info.driverVersion == 0) {
    info.reason = "no NVIDIA driver is installed (libcuda could not be loaded)";
    return info;
  }
  int count = 0;
  error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    info.reason = std::string("the CUDA driver reports ") + cudaGetErrorString(error);
    cudaGetLastError();
    return info;
  }
  if (ordinal < 0 || ordinal >= count) {
    info.reason = count == 0 ? "no CUDA device is visible"
                             : "device " + std::to_string(ordinal) + " does not exist (" +
                                   std::to_string(count) + " visible)";
    return info;
  }
  cudaDeviceProp prop{};
  error = cudaGetDeviceProperties(&prop, ordinal);
  if (error != cudaSuccess) {
    info.reason = std::string("cannot query device: ") + cudaGetErrorString(error);
    return info;
  }
  if (info.driverVersion < info.runtimeVersion) {
    info.reason = "the driver supports CUDA " + std::to_string(info.driverVersion / 1000) + "." +
                  std::to_string(info.driverVersion % 1000 / 10) + " but Kiln was built with " +
                  std::to_string(info.runtimeVersion / 1000) + "." +
                  std::to_string(info.runtimeVersion % 1000 / 10);
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.computeMajor = prop.major;
  info.computeMinor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.totalMemoryBytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.l2CacheBytes = prop.l2CacheSize;
  info.cudnnVersion = static_cast<int>(cudnnGetVersion());
  info.cublasVersion = static_cast<int>(cublasLtGetVersion());
  return info;
}

}  // namespace kiln::cuda
