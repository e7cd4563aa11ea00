// cuBLASLt, cuDNN and NVRTC are loaded with dlopen on first use instead of being
// linked (lazy_entry_points.cpp defines the 37 of their entry points Kiln calls, each
// forwarding to the loaded library), so a CUDA build of kiln starts, builds and runs on the
// CPU on a machine without them. Missing, each entry point returns its library's own
// failure status and the library's error-string function names the missing library,
// so every KILN_*_CHECK reports it. docs/packaging.md, "CUDA at run time".
#pragma once

#include <string>

namespace kiln::cuda {

enum class LazyLibrary { kCublasLt, kCudnn, kNvrtc };

// dlopen's handle of `library`, loaded on the first call from any thread; null when it
// cannot be loaded.
void* lazyLibraryHandle(LazyLibrary library);
// `name` in `library` (dlsym), loading the library first; null when either is missing.
void* lazySymbol(LazyLibrary library, const char* name);
// "" once `library` is loaded; otherwise one phrase: "cuDNN is not installed
// (libcudnn.so.9: cannot open shared object file: No such file or directory)".
const std::string& lazyLibraryError(LazyLibrary library);
// "" when all three load; otherwise one phrase naming the missing ones: "cuDNN and NVRTC
// are not installed (libcudnn.so.9, libnvrtc.so.13: cannot open shared object file: No
// such file or directory)" (what probeCudaDevice gives as the reason the GPU is not usable).
std::string missingCudaLibraries();

}  // namespace kiln::cuda
