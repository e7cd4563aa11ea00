// Precision debugging (kiln debug precision): which layers must stay in FP32 for a
// reduced-precision build (every float layer in fp16 or bf16, obeyed) to meet the
// tolerance against the FP32 CPU reference. Bisection over the layers in execution
// order: the smallest prefix kept in FP32 that passes ends in a layer that must stay;
// it is kept, the search repeats below it, and the set is verified by a final build.
// One bad layer among n costs about log2(n) + 2 builds. The result names the ONNX
// nodes and comes as precision constraints ("*:fp16", "Node:fp32", obeyed) that
// `kiln build --constraints` and the studio apply in one step.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compare/error_stats.h"
#include "compare/plan_judge.h"
#include "kiln/builder_config.h"
#include "kiln/constraints_file.h"
#include "kiln/graph.h"

namespace kiln::compare {

struct PrecisionDebugOptions {
  // The user's build (profiles, passes, level, tactic sources); its precision flags,
  // rules and mode are replaced by the debugger's. Callbacks are not used.
  BuilderConfig config;
  DataType reduced = DataType::kFloat16;  // or kBFloat16
  Tolerance tolerance = {1e-2, 1e-2};
  // After each build is judged, on the calling thread.
  std::function<void(const struct PrecisionDebugStep&)> onStep;
  const std::atomic<bool>* cancel = nullptr;  // polled between builds
  PlanRunnerFactory makeRunner;               // how builds run; empty: cpuPlanRunner
};

struct DebugLayer {
  std::string name;
  std::vector<std::string> sourceNodes;
};

// One build the search made and how it fared.
struct PrecisionDebugStep {
  int build = 0;            // 1-based
  std::string description;  // "all 12 float layers in fp16", "layers 1..6 in fp32 + 1 kept"
  std::vector<std::string> fp32Layers;
  bool pass = false;
  double maxAbs = 0;        // largest output error against the reference
  std::string worstOutput;  // the output with the largest error
};

struct PrecisionDebugResult {
  std::vector<DebugLayer> candidates;  // layers that ran reduced when all could, in order
  std::vector<DebugLayer> keep;        // must stay in FP32, in execution order
  std::vector<std::string> onnxNodes;  // the ONNX nodes of `keep`
  std::vector<PrecisionDebugStep> steps;
  int builds = 0;
  bool reducedPasses = false;  // the all-reduced build already meets the tolerance
  PrecisionConstraints constraints;
  std::vector<ErrorStats> outputs;  // of the last passing build
};

// Runs the search on the CPU backend (per-layer precision; fp16/bf16 round values to
// that type around each layer). `inputSets` are the graph inputs to judge on.
// Errors: a build or run fails (named), kCancelled, or the outputs miss the
// tolerance even with every candidate layer in FP32.
Result<PrecisionDebugResult> debugPrecision(
    std::shared_ptr<const Network> network,
    const std::vector<std::map<std::string, Tensor>>& inputSets,
    const PrecisionDebugOptions& options);

}  // namespace kiln::compare
