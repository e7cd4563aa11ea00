// The backend registry (kiln/backends.h): the "cpu" and "cuda" rows. Compiled into
// kiln_cuda, whose CPU-only form answers the cuda entry points with stubs; the table
// then leaves the cuda row out.
#include "kiln/backends.h"

#include "kiln/cuda_build_backend.h"
#include "kiln/cuda_generated_kernels.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/cuda_runtime.h"
#include "kiln/plan_identity.h"

namespace kiln {
namespace {

// Backends Kiln has, built here or not: a name in this list that the build lacks is
// refused as absent, not as unknown.
constexpr const char* kKnownBackends[] = {"cpu", "cuda"};

BackendDevice probeCpu(int device) {
  if (device != 0) return {false, "the CPU backend has device 0 only", ""};
  return {true, "", "CPU"};
}

Result<std::unique_ptr<BuildBackend>> createCpuBuildBackend(int, const BuilderConfig&) {
  return cpuBuildBackend();
}

// The reference backend running the plan's own per-layer tactics.
class CpuPlanRunner final : public PlanRunner {
 public:
  explicit CpuPlanRunner(std::shared_ptr<const Plan> plan)
      : m_plan(std::move(plan)), m_backend(*m_plan->network) {}

  Status run(const std::map<std::string, Tensor>& inputs,
             std::vector<NamedTensor>* outputs) override {
    ReferenceRunOptions options;
    options.layerImplementations = m_plan->layers;
    return m_backend.run(inputs, outputs, options);
  }

 private:
  std::shared_ptr<const Plan> m_plan;
  ReferenceBackend m_backend;
};

Result<std::unique_ptr<PlanRunner>> createCpuRunner(std::shared_ptr<const Plan> plan, int device) {
  if (device != 0) return invalidArgument("the CPU backend has device 0 only");
  KILN_RETURN_IF_ERROR(checkPlanCompatible(plan->identity, cpuPlanIdentity()));
  return std::unique_ptr<PlanRunner>(std::make_unique<CpuPlanRunner>(std::move(plan)));
}

BackendDevice probeCuda(int device) {
  const cuda::DeviceInfo info = cuda::probeCudaDevice(device);
  return {info.available, info.available ? "" : info.reason, info.name};
}

// One engine and one context on the device; inputs copied in, outputs copied back.
class CudaPlanRunner final : public PlanRunner {
 public:
  CudaPlanRunner(std::shared_ptr<const Plan> plan, std::shared_ptr<cuda::Engine> engine,
                 std::unique_ptr<cuda::ExecutionContext> context)
      : m_plan(std::move(plan)), m_engine(std::move(engine)), m_context(std::move(context)) {}

  Status run(const std::map<std::string, Tensor>& inputs,
             std::vector<NamedTensor>* outputs) override {
    for (const auto& [name, tensor] : inputs) {
      KILN_RETURN_IF_ERROR(m_context->setInputShape(name, tensor.shape()));
      KILN_RETURN_IF_ERROR(m_context->setInput(name, tensor));
    }
    KILN_RETURN_IF_ERROR(m_context->execute());
    outputs->clear();
    for (const ValueInfo& out : m_plan->network->graph.outputs) {
      KILN_ASSIGN_OR_RETURN(Tensor tensor, m_context->getOutput(out.name));
      outputs->push_back({out.name, std::move(tensor)});
    }
    return Status::ok();
  }

 private:
  std::shared_ptr<const Plan> m_plan;
  std::shared_ptr<cuda::Engine> m_engine;
  std::unique_ptr<cuda::ExecutionContext> m_context;
};

Result<std::unique_ptr<PlanRunner>> createCudaRunner(std::shared_ptr<const Plan> plan, int device) {
  const cuda::DeviceInfo info = cuda::probeCudaDevice(device);
  if (!info.available) return unsupported("CUDA unavailable: " + info.reason);
  KILN_RETURN_IF_ERROR(checkPlanCompatible(plan->identity, cuda::cudaPlanIdentity(info)));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<cuda::Engine> engine,
                        cuda::createEngineForPlan(*plan, device));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::ExecutionContext> context, engine->createContext());
  return std::unique_ptr<PlanRunner>(
      std::make_unique<CudaPlanRunner>(std::move(plan), std::move(engine), std::move(context)));
}

std::vector<Backend> makeTable() {
  std::vector<Backend> table;
  table.push_back({"cpu", "the CPU reference backend (runs everywhere, checks the GPU)", probeCpu,
                   createCpuBuildBackend, createCpuRunner});
  if (cuda::builtWithCuda()) {
    table.push_back({"cuda", "NVIDIA GPUs through CUDA, cuDNN, cuBLASLt and NVRTC", probeCuda,
                     cuda::createCudaBuildBackend, createCudaRunner});
  }
  return table;
}

std::string namesOf(const std::vector<Backend>& table) {
  std::string names;
  for (const Backend& b : table) names += (names.empty() ? "" : ", ") + b.name;
  return names;
}

}  // namespace

const std::vector<Backend>& backends() {
  static const std::vector<Backend> table = makeTable();
  return table;
}

std::string backendNames() {
  return namesOf(backends());
}

Result<const Backend*> findBackendIn(const std::vector<Backend>& table, const std::string& name) {
  for (const Backend& b : table)
    if (b.name == name) return &b;
  for (const char* known : kKnownBackends) {
    if (name == known) {
      return unsupported("backend '" + name + "' is not in this build (Kiln was built without " +
                         (name == "cuda" ? std::string("the CUDA toolkit") : name) +
                         "; it has: " + namesOf(table) + ")");
    }
  }
  return invalidArgument("unknown backend '" + name + "' (this build has: " + namesOf(table) + ")");
}

Result<const Backend*> findBackend(const std::string& name) {
  return findBackendIn(backends(), name);
}

Result<std::unique_ptr<BuildBackend>> createBuildBackend(const std::string& name, int device,
                                                         const BuilderConfig& config) {
  KILN_ASSIGN_OR_RETURN(const Backend* backend, findBackend(name));
  return backend->createBuildBackend(device, config);
}

}  // namespace kiln
