// The backend registry: one row per backend this build has ("cpu" always, "cuda"
// when built with the CUDA toolkit), mapping its name to its device probe, its
// build backend and its runtime. Code that takes a backend by name (the CLI's
// --backend, the studio's Build panel, kiln compare, Python's build()) looks it up
// here instead of comparing strings, so an unknown or absent backend is refused
// with the same one-line error everywhere. Lives in kiln_cuda (which a CPU-only
// build makes from stubs), so linking it needs no CUDA.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/build_backend.h"
#include "kiln/builder_config.h"
#include "kiln/plan.h"
#include "kiln/reference_backend.h"
#include "kiln/status.h"

namespace kiln {

// What a backend's probe found on one device: usable, or a one-line reason why not.
struct BackendDevice {
  bool available = false;
  std::string reason;  // "" when available
  std::string name;    // the device's name ("CPU", "NVIDIA H200")
};

// A built plan made runnable on one device: the plan's own per-layer tactics run.
class PlanRunner {
 public:
  virtual ~PlanRunner() = default;
  // Runs the plan on `inputs` (every graph input by name); the graph outputs come
  // back in graph order. Errors name the node they are about (Status::node()).
  virtual Status run(const std::map<std::string, Tensor>& inputs,
                     std::vector<NamedTensor>* outputs) = 0;
};

// One registry row. The functions are never null.
struct Backend {
  std::string name;     // as --backend and PlanIdentity::backend spell it
  std::string summary;  // one line for help texts
  // Whether `device` (an ordinal; the CPU has only 0) can be used in this process.
  BackendDevice (*probe)(int device) = nullptr;
  // The builder's side: times layers on `device` under `config`'s TF32 and workspace.
  Result<std::unique_ptr<BuildBackend>> (*createBuildBackend)(
      int device, const BuilderConfig& config) = nullptr;
  // The runtime's side: checks the plan was built for this backend and fits this
  // device (checkPlanCompatible), then makes its runner.
  Result<std::unique_ptr<PlanRunner>> (*createRunner)(std::shared_ptr<const Plan> plan,
                                                      int device) = nullptr;
};

// The backends of this build, "cpu" first.
const std::vector<Backend>& backends();
// "cpu, cuda": the names of backends(), for messages and help texts.
std::string backendNames();
// The row named `name`, or one line: "backend 'cuda' is not in this build (Kiln was
// built without the CUDA toolkit; it has: cpu)" for a backend Kiln knows but this
// build lacks, "unknown backend 'x' (this build has: cpu, cuda)" otherwise.
Result<const Backend*> findBackend(const std::string& name);
// findBackend(name), then its build backend on `device`: what `kiln build --backend`,
// the studio's Build panel and Python's build() do.
Result<std::unique_ptr<BuildBackend>> createBuildBackend(const std::string& name, int device,
                                                         const BuilderConfig& config);
// findBackend over `table` (tests pass a CPU-only table to see a build without CUDA).
Result<const Backend*> findBackendIn(const std::vector<Backend>& table, const std::string& name);

}  // namespace kiln
