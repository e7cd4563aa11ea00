#include "version_report.h"

#include <kiln_git_revision.h>

#include <string>

#include "kiln/cuda_build_versions.h"
#include "kiln/cuda_runtime.h"
#include "kiln/version.h"

namespace kiln::app {
namespace {

// CUDA's 13000 -> "13.0".
std::string cudaVersion(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// cuDNN's and cuBLAS's major * 10000 + minor * 100 + patch -> "9.10.0".
std::string libraryVersion(int v) {
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
         std::to_string(v % 100);
}

// "libraries at run time: cuBLASLt 13.1.0 (/usr/.../libcublasLt.so.13), cuDNN could not
// be loaded (libcudnn.so.9: cannot open ...), ..." - what this process loaded, or why not.
std::string runtimeLibraries() {
  std::string text;
  for (const cuda::CudaRuntimeLibrary& library : cuda::cudaRuntimeLibraries()) {
    text += text.empty() ? "libraries at run time: " : ", ";
    text += library.found
                ? library.name + " " + libraryVersion(library.version) + " (" + library.path + ")"
                : library.error;
  }
  return text.empty() ? text : text + "\n";
}

}  // namespace

std::string versionReport(const std::string& program) {
  std::string text = program + " " + kKilnVersion + " (git " + KILN_GIT_REVISION + ")\n";
  if (!cuda::builtWithCuda()) return text + "built without CUDA: the CPU reference backend only\n";
  const cuda::CudaBuildVersions built = cuda::cudaBuildVersions();
  text += "built with CUDA " + cudaVersion(built.runtime) + ", cuDNN " +
          libraryVersion(built.cudnn) + ", cuBLASLt " + libraryVersion(built.cublas) + "\n";
  text += runtimeLibraries();
  const cuda::DeviceInfo device = cuda::probeCudaDevice(0);
  if (!device.available) return text + "at run time: no usable GPU: " + device.reason + "\n";
  return text + "at run time: " + device.name + " (sm_" + std::to_string(device.computeMajor) +
         std::to_string(device.computeMinor) + "), driver for CUDA " +
         cudaVersion(device.driverVersion) + ", CUDA runtime " +
         cudaVersion(device.runtimeVersion) + ", cuDNN " + libraryVersion(device.cudnnVersion) +
         ", cuBLASLt " + libraryVersion(device.cublasVersion) + "\n";
}

}  // namespace kiln::app
