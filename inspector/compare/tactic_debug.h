// Flaky and bad tactic isolation (kiln debug tactics). Two searches, both judged
// against the FP32 CPU reference on fixed inputs:
//  - each tactic: a baseline build pins every layer's tactic (a tactic replay); then,
//    per suspect layer, each of its other valid candidates is forced in turn and the
//    build rebuilt and run; tactics whose outputs miss the tolerance are reported;
//  - rebuilds: the configuration is built N times with timing as usual; builds whose
//    outputs differ from the first are reported with the layers whose tactic changed
//    (the suspects a timing-dependent choice brings in).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compare/model_runner.h"
#include "compare/plan_judge.h"
#include "kiln/builder_config.h"

namespace kiln::compare {

struct TacticDebugOptions {
  BuilderConfig config;  // the user's build; callbacks and replay are the debugger's
  Tolerance tolerance = {1e-5, 1e-3};
  // Suspect layers by layer or ONNX node name; empty: every layer with two or more
  // valid candidates at its precision.
  std::vector<std::string> layers;
  bool eachTactic = true;  // force each candidate of each suspect layer
  int rebuilds = 0;        // > 1: also rebuild this many times and compare
  std::function<void(const std::string& what, int build)> onBuild;  // before each build
  const std::atomic<bool>* cancel = nullptr;
  PlanRunnerFactory makeRunner;  // empty: cpuPlanRunner
};

// One forced tactic and how its build fared.
struct TacticTrial {
  std::string layer;
  std::vector<std::string> sourceNodes;
  std::string tactic;
  std::string precision;  // "fp32", "fp16", ...
  bool baseline = false;  // the tactic the baseline build chose
  bool pass = false;
  double maxAbs = 0;
  std::string worstOutput;
};

// One rebuild and how it differs from the first.
struct RebuildOutcome {
  int index = 0;  // 0-based; 0 is the first build
  bool pass = false;
  double maxAbs = 0;                       // against the reference
  double maxAbsFromFirst = 0;              // outputs against the first build's
  std::vector<std::string> changedLayers;  // "layer: tacticA -> tacticB" vs the first build
};

struct TacticDebugResult {
  bool baselinePass = false;
  double baselineMaxAbs = 0;
  std::vector<TacticTrial> trials;  // per suspect layer, its candidates in the record's order
  std::vector<TacticTrial> bad;     // trials outside the tolerance
  std::vector<RebuildOutcome> rebuilds;
  std::vector<std::string> flakyLayers;  // layers whose tactic changed between rebuilds
  int builds = 0;
};

Result<TacticDebugResult> debugTactics(std::shared_ptr<const Network> network,
                                       const std::vector<std::map<std::string, Tensor>>& inputSets,
                                       const TacticDebugOptions& options);

}  // namespace kiln::compare
