// The CUDA runtime's entry points in a build without the CUDA toolkit: each says
// so, and callers fall back to the CPU reference backend.
#include "backends/cuda/layer_choice_hold.h"
#include "kiln/cuda_build_versions.h"
#include "kiln/cuda_runtime.h"

namespace kiln::cuda {

bool builtWithCuda() {
  return false;
}

CudaBuildVersions cudaBuildVersions() {
  return {};
}

std::vector<CudaRuntimeLibrary> cudaRuntimeLibraries() {
  return {};
}

std::vector<GpuOperator> gpuOperators() {
  return {};
}

DeviceInfo probeCudaDevice(int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  info.reason = "this Kiln was built without the CUDA toolkit (CPU-only build)";
  return info;
}

Result<std::shared_ptr<Engine>> Engine::create(std::shared_ptr<const Network>,
                                               const EngineOptions&) {
  return unsupported(
      "the CUDA backend is not available: this Kiln was built without the CUDA toolkit");
}

}  // namespace kiln::cuda

#include "kiln/cuda_benchmark.h"

namespace kiln::cuda {
Result<BenchmarkResult> runBenchmark(Engine&, const std::map<std::string, Tensor>&,
                                     const BenchmarkOptions&) {
  return unsupported(
      "the CUDA backend is not available: this Kiln was built without the CUDA toolkit");
}
}  // namespace kiln::cuda

#include "kiln/cuda_generated_kernels.h"

namespace kiln::cuda {
// Without the toolkit nothing is compiled or loaded: the object holds nothing.
struct CompiledCode::Stores {};
CompiledCode::CompiledCode() : m_stores(std::make_unique<Stores>()) {}
CompiledCode::~CompiledCode() = default;
std::vector<GeneratedKernelBinary> CompiledCode::binaries() const {
  return {};
}
void CompiledCode::preload(const std::vector<GeneratedKernelBinary>&) {}
std::vector<GeneratedKernelBinary> CompiledCode::cudnnRecordsForLayers(
    const std::vector<std::string>&) const {
  return {};
}
int64_t nvrtcCompileCount() {
  return 0;
}
Result<std::vector<GeneratedKernelBinary>> generatedKernelsForLayer(CompiledCode&, const Node&,
                                                                    const std::vector<DataType>&,
                                                                    const std::vector<Shape>&,
                                                                    DataType, int) {
  return unsupported(
      "the CUDA backend is not available: this Kiln was built without the CUDA toolkit");
}
}  // namespace kiln::cuda

#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {
// No GPU kernels without the toolkit: a CPU-only build's CUDA build backend is never
// created (createCudaBuildBackend says the device is unavailable), but the call links.
std::string builtinGpuKernelSupport(const Node& node, const std::vector<DataType>&,
                                    const std::vector<Shape>&) {
  return "no GPU kernel for " + node.opType + ": this Kiln was built without the CUDA toolkit";
}
bool holdLayerChoice(ExecutionContext&, const std::string&, const std::string&) {
  return false;
}
}  // namespace kiln::cuda
