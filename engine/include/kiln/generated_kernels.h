// Kernels Kiln generates at build time (CUDA C from pointwise_codegen, compiled by
// NVRTC to a cubin for one exact device), as a plan stores them. No CUDA types here:
// kiln_engine reads and writes them without the toolkit; the CUDA runtime's side
// (compile, preload, export) is kiln/cuda_generated_kernels.h.
#pragma once

#include <string>
#include <vector>

namespace kiln {

struct GeneratedKernelBinary {
  std::string architecture;         // "sm_90": the device the cubin was compiled for
  std::string key;                  // generatedKernelKey(architecture, source)
  std::vector<std::string> layers;  // the plan's layers that load it (for the inspector)
  std::vector<char> cubin;          // NVRTC's output, loaded as is
};

// The short key of a generated kernel: "<architecture>:<FNV-1a 64 of the source,
// 16 hex digits>:<source bytes>", e.g. "sm_90:8c1f...e2:4711". The runtime looks a
// regenerated source up by it, so a plan need not carry the source text.
std::string generatedKernelKey(const std::string& architecture, const std::string& source);

// "sm_90" for compute capability 9.0.
std::string smArchitecture(int computeMajor, int computeMinor);

}  // namespace kiln
