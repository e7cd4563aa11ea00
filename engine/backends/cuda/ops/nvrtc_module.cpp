#include "backends/cuda/ops/nvrtc_module.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"

namespace kiln::cuda {
namespace {

Status nvrtcError(nvrtcResult result, const std::string& what, const std::string& arch) {
  return Status(StatusCode::kInternal, "NVRTC could not compile " + what + " for " + arch + ": " +
                                           nvrtcGetErrorString(result));
}

#define KILN_NVRTC_CHECK(expr)                                   \
  do {                                                           \
    nvrtcResult kiln_nvrtc_result_ = (expr);                     \
    if (kiln_nvrtc_result_ != NVRTC_SUCCESS)                     \
      return nvrtcError(kiln_nvrtc_result_, what, architecture); \
  } while (0)

// Destroys the program on every path.
struct ProgramGuard {
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) nvrtcDestroyProgram(&program);
  }
};

// The first non-empty line of NVRTC's log, or "" when the log is empty.
std::string firstLogLine(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  size_t start = 0;
  while (start < log.size()) {
    const size_t end = std::min(log.find('\n', start), log.size());
    std::string line = log.substr(start, end - start);
    line.erase(std::remove(line.begin(), line.end(), '\0'), line.end());
    if (line.find_first_not_of(" \t\r") != std::string::npos) return line;
    start = end + 1;
  }
  return "";
}

// NVRTC must list the architecture, or it would fail with a bare "invalid option".
Status checkSupported(int major, int minor, const std::string& what,
                      const std::string& architecture) {
  int count = 0;
  KILN_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&count));
  std::vector<int> archs(static_cast<size_t>(count));
  KILN_NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
  if (std::find(archs.begin(), archs.end(), major * 10 + minor) != archs.end()) return Status::ok();
  int nvrtcMajor = 0, nvrtcMinor = 0;
  KILN_NVRTC_CHECK(nvrtcVersion(&nvrtcMajor, &nvrtcMinor));
  return unsupported("NVRTC " + std::to_string(nvrtcMajor) + "." + std::to_string(nvrtcMinor) +
                     " cannot compile " + what + " for " + architecture);
}

std::atomic<int64_t> g_compiles{0};

}  // namespace

int64_t nvrtcCompileCount() {
  return g_compiles.load();
}

Result<std::vector<char>> compileCudaToCubin(const std::string& source, const std::string& what,
                                             const std::string& architecture) {
  ++g_compiles;
  ProgramGuard guard;
  KILN_NVRTC_CHECK(
      nvrtcCreateProgram(&guard.program, source.c_str(), "kiln_generated.cu", 0, nullptr, nullptr));
  const std::string archOption = "--gpu-architecture=" + architecture;
  const char* options[] = {archOption.c_str(), "-std=c++17", "--fmad=false"};
  const nvrtcResult compiled = nvrtcCompileProgram(guard.program, 3, options);
  if (compiled != NVRTC_SUCCESS) {
    const std::string line = firstLogLine(guard.program);
    return Status(StatusCode::kInternal, "NVRTC could not compile " + what + " for " +
                                             architecture + ": " +
                                             (line.empty() ? nvrtcGetErrorString(compiled) : line));
  }
  size_t size = 0;
  KILN_NVRTC_CHECK(nvrtcGetCUBINSize(guard.program, &size));
  std::vector<char> cubin(size);
  KILN_NVRTC_CHECK(nvrtcGetCUBIN(guard.program, cubin.data()));
  return cubin;
}

namespace {

// Libraries stay loaded while their store lives: the builder times each layer in a
// one-node engine and then runs the whole engine, and a shape change clears the layer
// state; neither should compile again. Past kCacheLimit entries, the ones no layer
// holds any more are unloaded. The cubins stay remembered (a few KiB each).
constexpr size_t kCacheLimit = 256;

}  // namespace

class NvrtcCompiler {
 public:
  // Loads `cubin` and looks up `kernels`; the library unloads if one is missing.
  static Result<std::shared_ptr<NvrtcLibrary>> load(const std::vector<char>& cubin,
                                                    const std::vector<std::string>& kernels,
                                                    const std::string& what,
                                                    const std::string& key) {
    std::shared_ptr<NvrtcLibrary> library(new NvrtcLibrary());
    library->m_key = key;
    library->m_architecture = key.substr(0, key.find(':'));
    library->m_cubinBytes = cubin.size();
    KILN_CUDA_CHECK(cudaLibraryLoadData(&library->m_library, cubin.data(), nullptr, nullptr, 0,
                                        nullptr, nullptr, 0));
    for (const std::string& name : kernels) {
      cudaKernel_t kernel = nullptr;
      cudaError_t found = cudaLibraryGetKernel(&kernel, library->m_library, name.c_str());
      if (found != cudaSuccess)
        return Status(StatusCode::kInternal, "the cubin of " + what + " has no kernel '" + name +
                                                 "': " + cudaGetErrorString(found));
      library->m_kernels[name] = kernel;
    }
    return library;
  }

  // The preloaded cubin of `key`, loaded; nullptr when there is none or the driver
  // refuses it (it is dropped, `note` says why, and the caller compiles).
  static std::shared_ptr<const NvrtcLibrary> fromPlan(NvrtcStore& r, const std::string& key,
                                                      const std::vector<std::string>& kernels,
                                                      const std::string& what, std::string* note) {
    auto it = r.preloaded.find(key);
    if (it == r.preloaded.end()) return nullptr;
    GeneratedKernelBinary binary = std::move(it->second);
    r.preloaded.erase(it);
    auto loaded = load(binary.cubin, kernels, what, key);
    if (!loaded.isOk()) {
      cudaGetLastError();  // a refused image must not surface at the next launch check
      *note = "the plan's cubin was not used: " + loaded.status().message();
      return nullptr;
    }
    loaded.value()->m_fromPlan = true;
    r.binaries[key] = std::move(binary);
    return loaded.value();
  }

  static Result<std::shared_ptr<const NvrtcLibrary>> compile(
      NvrtcStore& r, const std::string& key, const std::string& source,
      const std::vector<std::string>& kernels, const std::string& what,
      const std::string& architecture, const std::string& note) {
    const auto start = std::chrono::steady_clock::now();
    KILN_ASSIGN_OR_RETURN(std::vector<char> cubin, compileCudaToCubin(source, what, architecture));
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<NvrtcLibrary> library,
                          load(cubin, kernels, "the cubin compiled for " + what, key));
    library->m_note = note;
    library->m_compileMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.binaries[key] = {architecture, key, {}, std::move(cubin)};
    return std::shared_ptr<const NvrtcLibrary>(std::move(library));
  }
};

NvrtcLibrary::~NvrtcLibrary() {
  if (m_library) cudaLibraryUnload(m_library);  // a destructor reports nothing
}

cudaKernel_t NvrtcLibrary::kernel(const std::string& name) const {
  auto it = m_kernels.find(name);
  return it == m_kernels.end() ? nullptr : it->second;
}

Result<std::string> currentDeviceArchitecture() {
  int device = 0, major = 0, minor = 0;
  KILN_CUDA_CHECK(cudaGetDevice(&device));
  KILN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  KILN_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return smArchitecture(major, minor);
}

Result<std::shared_ptr<const NvrtcLibrary>> compileCudaSource(
    NvrtcStore& r, const std::string& source, const std::vector<std::string>& kernels,
    const std::string& what) {
  KILN_ASSIGN_OR_RETURN(std::string architecture, currentDeviceArchitecture());
  const std::string key = generatedKernelKey(architecture, source);
  std::lock_guard<std::mutex> lock(r.mutex);  // one compile per key, even across threads
  auto it = r.libraries.find(key);
  if (it != r.libraries.end()) return it->second;
  std::string note;
  std::shared_ptr<const NvrtcLibrary> library =
      NvrtcCompiler::fromPlan(r, key, kernels, what, &note);
  if (!library) {
    const int capability = std::stoi(architecture.substr(3));
    KILN_RETURN_IF_ERROR(checkSupported(capability / 10, capability % 10, what, architecture));
    KILN_ASSIGN_OR_RETURN(
        library, NvrtcCompiler::compile(r, key, source, kernels, what, architecture, note));
  }
  if (r.libraries.size() >= kCacheLimit)
    std::erase_if(r.libraries, [](const auto& entry) { return entry.second.use_count() == 1; });
  r.libraries[key] = library;
  return library;
}

void preloadCubins(NvrtcStore& r, const std::vector<GeneratedKernelBinary>& cubins) {
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const GeneratedKernelBinary& k : cubins)
    if (!r.binaries.count(k.key) && !r.libraries.count(k.key)) r.preloaded.emplace(k.key, k);
}

bool findGeneratedKernel(NvrtcStore& r, const std::string& key, GeneratedKernelBinary* kernel) {
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.binaries.find(key);
  if (it == r.binaries.end()) return false;
  *kernel = it->second;
  return true;
}

}  // namespace kiln::cuda
