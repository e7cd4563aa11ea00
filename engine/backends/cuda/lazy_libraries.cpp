// Loading cuBLASLt, cuDNN and NVRTC with dlopen (lazy_libraries.h), and what
// kiln --version reports of them. The sonames are the ones this build was compiled
// against (the headers' major versions).
#include "backends/cuda/lazy_libraries.h"

#include <dlfcn.h>
#include <link.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nvrtc.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kiln/cuda_build_versions.h"

namespace kiln::cuda {
namespace {

struct LibrarySpec {
  const char* name;  // as messages and kiln --version say it
  std::string soname;
};

const LibrarySpec& specOf(LazyLibrary library) {
  static const LibrarySpec kSpecs[] = {
      {"cuBLASLt", "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR)},
      {"cuDNN", "libcudnn.so." + std::to_string(CUDNN_MAJOR)},
      {"NVRTC", "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000)},
  };
  return kSpecs[static_cast<int>(library)];
}

struct Loaded {
  void* handle = nullptr;
  std::string error;   // "" when loaded
  std::string reason;  // dlerror's text after "SONAME: "
  std::string path;    // where the dynamic loader found it
};

Loaded open(LazyLibrary library) {
  const LibrarySpec& spec = specOf(library);
  Loaded loaded;
  // RTLD_LOCAL: the library's symbols stay out of the global scope, as they would for
  // a library linked by a module that Python loads.
  loaded.handle = dlopen(spec.soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!loaded.handle) {
    const char* why = dlerror();
    const std::string text = why ? why : spec.soname + ": unknown error";
    loaded.error = std::string(spec.name) + " could not be loaded (" + text + ")";
    loaded.reason =
        text.rfind(spec.soname + ": ", 0) == 0 ? text.substr(spec.soname.size() + 2) : text;
    return loaded;
  }
  link_map* map = nullptr;
  if (dlinfo(loaded.handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
    loaded.path = map->l_name;
  return loaded;
}

const Loaded& loaded(LazyLibrary library) {
  // One static per library: each loads on its first use, once, from any thread.
  switch (library) {
    case LazyLibrary::kCublasLt: {
      static const Loaded cublasLt = open(library);
      return cublasLt;
    }
    case LazyLibrary::kCudnn: {
      static const Loaded cudnn = open(library);
      return cudnn;
    }
    case LazyLibrary::kNvrtc:
      break;
  }
  static const Loaded nvrtc = open(LazyLibrary::kNvrtc);
  return nvrtc;
}

}  // namespace

void* lazyLibraryHandle(LazyLibrary library) {
  return loaded(library).handle;
}

void* lazySymbol(LazyLibrary library, const char* name) {
  void* handle = lazyLibraryHandle(library);
  return handle ? dlsym(handle, name) : nullptr;
}

const std::string& lazyLibraryError(LazyLibrary library) {
  return loaded(library).error;
}

std::string missingCudaLibraries() {
  // "cuDNN and NVRTC are not installed (libcudnn.so.9, libnvrtc.so.13: cannot open
  // shared object file: No such file or directory)": dlerror's text without the soname
  // it starts with, once per distinct text.
  std::vector<std::string> names, sonames, reasons;
  for (LazyLibrary library : {LazyLibrary::kCublasLt, LazyLibrary::kCudnn, LazyLibrary::kNvrtc}) {
    const Loaded& load = loaded(library);
    if (load.handle) continue;
    names.push_back(specOf(library).name);
    sonames.push_back(specOf(library).soname);
    if (std::find(reasons.begin(), reasons.end(), load.reason) == reasons.end())
      reasons.push_back(load.reason);
  }
  if (names.empty()) return "";
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  text += names.size() == 1 ? " is not installed (" : " are not installed (";
  for (size_t i = 0; i < sonames.size(); ++i) text += (i == 0 ? "" : ", ") + sonames[i];
  for (size_t i = 0; i < reasons.size(); ++i) text += (i == 0 ? ": " : "; ") + reasons[i];
  return text + ")";
}

std::vector<CudaRuntimeLibrary> cudaRuntimeLibraries() {
  std::vector<CudaRuntimeLibrary> libraries;
  for (LazyLibrary library : {LazyLibrary::kCublasLt, LazyLibrary::kCudnn, LazyLibrary::kNvrtc}) {
    const Loaded& load = loaded(library);
    CudaRuntimeLibrary entry{specOf(library).name,
                             specOf(library).soname,
                             load.handle != nullptr,
                             load.path,
                             load.error,
                             0};
    // cuBLASLt and cuDNN answer major * 10000 + minor * 100 + patch already.
    if (library == LazyLibrary::kCublasLt && entry.found) {
      entry.version = static_cast<int>(cublasLtGetVersion());
    } else if (library == LazyLibrary::kCudnn && entry.found) {
      entry.version = static_cast<int>(cudnnGetVersion());
    } else if (entry.found) {
      int major = 0, minor = 0;
      if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
        entry.version = major * 10000 + minor * 100;
    }
    libraries.push_back(std::move(entry));
  }
  return libraries;
}

}  // namespace kiln::cuda
