// Judges builds of one network against its FP32 CPU reference on fixed input sets:
// the reference outputs are computed once, then each plan runs on the same inputs
// and every output must be within the tolerance. The precision and tactic
// debuggers build many plans and ask this the same question each time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compare/error_stats.h"
#include "compare/model_runner.h"
#include "kiln/builder.h"

namespace kiln::compare {

// How a built plan runs. The default is cpuPlanRunner(); tests inject faults here.
using PlanRunnerFactory =
    std::function<Result<std::unique_ptr<ModelRunner>>(std::shared_ptr<const Plan> plan)>;

struct Verdict {
  bool pass = true;
  double maxAbs = 0;        // largest finite output error (infinity when a NaN/Inf differs)
  std::string worstOutput;  // the output with the largest error, or the first failing one
  std::vector<ErrorStats> outputs;
};

class PlanJudge {
 public:
  // Runs the reference once per input set. Errors name the input or the node.
  static Result<PlanJudge> create(std::shared_ptr<const Network> network,
                                  std::vector<std::map<std::string, Tensor>> inputSets,
                                  Tolerance tolerance);
  // Runs `runner` on every input set and compares its outputs with the reference's.
  Result<Verdict> judge(ModelRunner& runner) const;
  // The two halves of judge(): the outputs per input set, and their verdict.
  Result<std::vector<std::vector<NamedTensor>>> runAll(ModelRunner& runner) const;
  Result<Verdict> verdictOf(const std::vector<std::vector<NamedTensor>>& outputs) const;
  // Builds `config` on the CPU backend, then judges the plan (run through
  // `makeRunner` when set); `planOut` keeps it.
  Result<Verdict> buildAndJudge(const BuilderConfig& config,
                                std::shared_ptr<const Plan>* planOut = nullptr,
                                const PlanRunnerFactory& makeRunner = nullptr) const;
  const std::shared_ptr<const Network>& network() const { return m_network; }
  const Tolerance& tolerance() const { return m_tolerance; }

 private:
  std::shared_ptr<const Network> m_network;
  std::vector<std::map<std::string, Tensor>> m_inputs;
  std::vector<std::vector<NamedTensor>> m_expected;
  Tolerance m_tolerance;
};

}  // namespace kiln::compare
