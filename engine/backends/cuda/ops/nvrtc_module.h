// Kernels Kiln generates at build time: CUDA C compiled by NVRTC to a cubin for the
// current device's exact compute capability (--gpu-architecture=sm_XY), loaded with
// the CUDA runtime's library API (cudaLibraryLoadData / cudaLibraryGetKernel, CUDA
// 12+; no driver API, no libcuda link). A process-wide cache keeps one loaded
// library per (architecture, source) for every layer and context, so a shape change,
// a second context or the engine after the builder's one-layer timing engines does
// not compile again.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::cuda {

class NvrtcLibrary {
 public:
  NvrtcLibrary(const NvrtcLibrary&) = delete;
  NvrtcLibrary& operator=(const NvrtcLibrary&) = delete;
  ~NvrtcLibrary();  // unloads the library

  // The kernel `name` asked for at compile time; nullptr for any other name.
  cudaKernel_t kernel(const std::string& name) const;
  const std::string& architecture() const { return m_architecture; }  // "sm_90"
  size_t cubinBytes() const { return m_cubinBytes; }
  double compileMilliseconds() const { return m_compileMs; }

 private:
  friend class NvrtcCompiler;
  NvrtcLibrary() = default;
  cudaLibrary_t m_library = nullptr;
  std::map<std::string, cudaKernel_t> m_kernels;
  std::string m_architecture;
  size_t m_cubinBytes = 0;
  double m_compileMs = 0;
};

// Compiles `source` (self-contained: no include path is given) for the current
// device, loads it and looks up `kernels` (extern "C" names), or returns the cached
// library of the same source and architecture. Options: -std=c++17, --fmad=false
// (no contraction: results match separate kernels op for op). Errors are one line:
// "NVRTC could not compile <what> for sm_XY: <first log line>", likewise for a
// missing kernel, an architecture NVRTC lacks or a failed load.
Result<std::shared_ptr<const NvrtcLibrary>> compileCudaSource(
    const std::string& source, const std::vector<std::string>& kernels, const std::string& what);

// The compile step alone, for an explicit architecture ("sm_90"): no device needed
// (tests check generated sources on machines without a GPU). Same options and errors.
Result<std::vector<char>> compileCudaToCubin(const std::string& source, const std::string& what,
                                             const std::string& architecture);

// "sm_XY" of the current device.
Result<std::string> currentDeviceArchitecture();

}  // namespace kiln::cuda
