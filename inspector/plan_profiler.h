// The plan profiler: per-layer times of a built plan over repeated runs, written as
// trtexec's --exportProfile JSON ([{"count": N}, {"name", "timeMs", "averageMs",
// "medianMs", "percentage"}...]). Layer names are the network nodes' display names,
// the names reportFromPlan gives its layers, so applyProfile puts the times on the
// plan's report. No Qt; the studio runs it on its job runner, the CLI directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/cuda_runtime.h"
#include "kiln/graph.h"
#include "kiln/plan.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::inspector {

// Per-layer samples of repeated runs, in execution order: the one place Kiln writes
// the --exportProfile shape from (the profiler and `kiln run --export-profile` on
// the CPU both fill one). Beside trtexec's keys a layer may carry "implementation":
// what the engine that was timed ran for it (the profiler sets it), so a profile says
// whether a plan's runtime reproduced the build's choices.
class LayerTimes {
 public:
  // One layer per top-level node of `network`, named by its display name. The
  // network must outlive this object (nodes are matched by address in record()).
  explicit LayerTimes(const Network& network);

  // Appends one sample to the layer of `node`; nodes not at the top level are ignored.
  void record(const Node& node, double milliseconds);
  // Appends samples to the layer called `name` (a new layer at the end when unknown).
  void append(const std::string& name, const std::vector<double>& milliseconds);
  // What ran for the layer called `name` (ignored for a name without a layer).
  void describe(const std::string& name, const std::string& implementation);

  // The profile: count = the most samples any layer has; per layer with samples,
  // timeMs = their sum, averageMs, medianMs, and percentage = its share of the summed
  // timeMs of all layers (as trtexec computes it). Layers without samples are left out.
  nlohmann::json profileJson() const;

 private:
  std::vector<std::string> m_names;
  std::vector<std::vector<double>> m_samples;
  std::vector<std::string> m_implementations;
  std::map<const Node*, size_t> m_byNode;
  std::map<std::string, size_t> m_byName;
};

// The --exportProfile document of a profiled CUDA engine running `network`: its layers'
// timings in network order, each with what it ran (cuda::layerDescription). The profiler
// and `kiln run --backend cuda --export-profile` both write it from here.
nlohmann::json cudaProfileJson(const Network& network,
                               const std::vector<cuda::LayerTiming>& timings,
                               const std::vector<cuda::LayerInfo>& layers);

// Seeded random non-zero inputs, one per graph input of the plan's network, at its
// first optimization profile's opt shapes, or the declared shapes when the plan has
// no profile. A dynamic dimension no profile covers is an error naming the input.
Result<std::map<std::string, Tensor>> planInputs(const Plan& plan, uint64_t seed);

// Called after each measured run with the runs done and the runs asked for.
using ProfileProgress = std::function<void(int done, int total)>;

// Runs the plan once to warm up, then `iterations` (>= 1) measured times on
// planInputs(plan, seed), and returns the per-layer profile. A CPU plan runs on the
// reference backend with its tactics and precisions (wall clock per layer; each layer's
// "implementation" is its tactic); a CUDA plan on the CUDA runtime at its precision and
// with its layers' recorded choices (CUDA events per layer; "implementation" is the
// runtime's own text, placement first as the BuildRecord's detail has it), and without a
// usable CUDA device that is an error saying so: the caller decides whether to fall
// back to profilePlanOnCpu. `cancel` (may be null) is polled between runs and
// layers and gives kCancelled; `progress` may be empty.
Result<nlohmann::json> profilePlan(const Plan& plan, int iterations, uint64_t seed,
                                   const std::atomic<bool>* cancel, ProfileProgress progress);

// As profilePlan, always on the CPU reference backend. A CPU plan keeps its tactics
// and precisions; a CUDA plan's layers run their reference kernels (its tactics are
// GPU kernels), so the times show where the work is, not how the GPU spends it.
Result<nlohmann::json> profilePlanOnCpu(const Plan& plan, int iterations, uint64_t seed,
                                        const std::atomic<bool>* cancel, ProfileProgress progress);

}  // namespace kiln::inspector
