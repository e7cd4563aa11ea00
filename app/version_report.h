// `kiln --version` and `kiln-studio --version`: what the binary is and what it finds.
#pragma once

#include <string>

namespace kiln::app {

// "PROGRAM VERSION (git REVISION)"; the CUDA, cuDNN and cuBLASLt versions it was built
// against (or that it is a CPU-only build); in a CUDA build, the cuBLASLt, cuDNN and
// NVRTC it loaded at run time (version and path) or why each is missing; and the
// device, driver and library versions found at run time (or why no GPU is usable). Probes the
// device: no GPU is needed, and none is an answer, not an error.
std::string versionReport(const std::string& program);

}  // namespace kiln::app
