#include "backends/cuda/sm90a_device.h"

#include <cuda_runtime_api.h>

#include <atomic>

namespace kiln::cuda {

bool deviceRunsSm90a() {
#ifdef KILN_HAVE_SM90A
  static std::atomic<int> answer[64] = {};  // 0 unknown, 1 yes, 2 no
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return false;
  if (answer[device].load() == 0) {
    int major = 0, minor = 0;
    const bool known =
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess;
    answer[device].store(known && major == 9 && minor == 0 ? 1 : 2);
  }
  return answer[device].load() == 1;
#else
  return false;
#endif
}

}  // namespace kiln::cuda
