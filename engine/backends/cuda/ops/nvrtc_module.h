// Kernels Kiln generates at build time: CUDA C compiled by NVRTC to a cubin for
// the current device's exact compute capability (--gpu-architecture=sm_XY), loaded
// with the CUDA runtime's library API (cudaLibraryLoadData / cudaLibraryGetKernel,
// CUDA 12+; no driver API, no libcuda link). An engine's NvrtcStore (its CompiledCode,
// kiln/cuda_generated_kernels.h), keyed by generatedKernelKey(architecture, source),
// keeps one loaded library per key for every layer and context of the engines that share
// it (a shape change, a second context or the engine after the builder's one-layer
// timing engines does not compile again), remembers every cubin compiled or loaded (so a
// build can store it in its plan) and holds the cubins preloaded from a plan, which are
// loaded instead of compiled.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "kiln/cuda_generated_kernels.h"
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
  const std::string& key() const { return m_key; }  // generatedKernelKey(arch, source)
  size_t cubinBytes() const { return m_cubinBytes; }
  // NVRTC's compile and the load; 0 for a cubin preloaded from a plan.
  double compileMilliseconds() const { return m_compileMs; }
  // True when the cubin came from a plan (CompiledCode::preload), not NVRTC.
  bool fromPlan() const { return m_fromPlan; }
  // Why a preloaded cubin for this key was not used ("" when none was refused).
  const std::string& note() const { return m_note; }

 private:
  friend class NvrtcCompiler;
  NvrtcLibrary() = default;
  cudaLibrary_t m_library = nullptr;
  std::map<std::string, cudaKernel_t> m_kernels;
  std::string m_architecture;
  std::string m_key;
  size_t m_cubinBytes = 0;
  double m_compileMs = 0;
  bool m_fromPlan = false;
  std::string m_note;
};

// The loaded libraries, cubins and preloaded cubins of one CompiledCode.
struct NvrtcStore {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const NvrtcLibrary>> libraries;  // by key
  std::map<std::string, GeneratedKernelBinary> binaries;   // compiled or loaded, by key
  std::map<std::string, GeneratedKernelBinary> preloaded;  // from plans, not loaded yet
};

// The library of `source` for the current device with `kernels` (extern "C" names)
// looked up: the loaded one of the same key; else the cubin preloaded from a plan
// under that key (not compiled; fromPlan()); else compiled now (self-contained
// source: no include path is given). Options: -std=c++17, --fmad=false (no
// contraction: results match separate kernels op for op). Errors are one line:
// "NVRTC could not compile <what> for sm_XY: <first log line>", likewise for a
// missing kernel, an architecture NVRTC lacks or a failed load.
Result<std::shared_ptr<const NvrtcLibrary>> compileCudaSource(
    NvrtcStore& store, const std::string& source, const std::vector<std::string>& kernels,
    const std::string& what);

// The compile step alone, for an explicit architecture ("sm_90"): no device needed
// (tests check generated sources on machines without a GPU). Same options and
// errors. Every call counts in nvrtcCompileCount().
Result<std::vector<char>> compileCudaToCubin(const std::string& source, const std::string& what,
                                             const std::string& architecture);

// "sm_XY" of the current device.
Result<std::string> currentDeviceArchitecture();

// The store's cubin for `key` (compiled or loaded through it), or false.
bool findGeneratedKernel(NvrtcStore& store, const std::string& key, GeneratedKernelBinary* kernel);

// A plan's cubin entries kept in `store` (keys already there are skipped).
void preloadCubins(NvrtcStore& store, const std::vector<GeneratedKernelBinary>& cubins);

}  // namespace kiln::cuda
