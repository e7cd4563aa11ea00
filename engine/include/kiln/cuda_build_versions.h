// The CUDA library versions this build was compiled against, beside what
// probeCudaDevice (kiln/cuda_runtime.h) finds at run time.
#pragma once

namespace kiln::cuda {

// CUDART_VERSION, CUDNN_VERSION and CUBLAS_VERSION at compile time; all 0 in a CPU-only build.
struct CudaBuildVersions {
  int runtime = 0;  // 13000 = 13.0
  int cudnn = 0;    // 91000 = 9.10.0
  int cublas = 0;   // 130000 = 13.0.0
};
CudaBuildVersions cudaBuildVersions();

}  // namespace kiln::cuda
