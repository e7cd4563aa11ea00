// The CUDA library versions this build was compiled against, beside what
// probeCudaDevice (kiln/cuda_runtime.h) and cudaRuntimeLibraries() find at run time.
#pragma once

#include <string>
#include <vector>

namespace kiln::cuda {

// CUDART_VERSION, CUDNN_VERSION and CUBLAS_VERSION at compile time; all 0 in a CPU-only build.
struct CudaBuildVersions {
  int runtime = 0;  // 13000 = 13.0
  int cudnn = 0;    // 91000 = 9.10.0
  int cublas = 0;   // 130000 = 13.0.0
};
CudaBuildVersions cudaBuildVersions();

// One of the CUDA libraries a CUDA build loads at run time (dlopen, on first use) rather
// than links: cuBLASLt, cuDNN and NVRTC. Without them Kiln starts and runs on the CPU;
// the CUDA backend is then unavailable and says which library is missing.
struct CudaRuntimeLibrary {
  std::string name;    // "cuDNN"
  std::string soname;  // "libcudnn.so.9", the one the build was linked against
  bool found = false;
  std::string path;   // where it was loaded from ("" when not found)
  std::string error;  // "cuDNN could not be loaded (libcudnn.so.9: ...)" when not found
  int version = 0;    // as the loaded library reports it, major * 10000 + minor * 100 + patch
};
// cuBLASLt, cuDNN, NVRTC in that order, each loaded if it was not yet; empty in a
// CPU-only build.
std::vector<CudaRuntimeLibrary> cudaRuntimeLibraries();

}  // namespace kiln::cuda
