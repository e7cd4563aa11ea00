#include "compare/plan_judge.h"

#include <cmath>
#include <limits>

#include "kiln/build_backend.h"

namespace kiln::compare {

Result<PlanJudge> PlanJudge::create(std::shared_ptr<const Network> network,
                                    std::vector<std::map<std::string, Tensor>> inputSets,
                                    Tolerance tolerance) {
  if (inputSets.empty()) return invalidArgument("no input sets to judge on");
  PlanJudge judge;
  judge.m_network = std::move(network);
  judge.m_inputs = std::move(inputSets);
  judge.m_tolerance = tolerance;
  auto reference = referenceRunner(judge.m_network, "reference");
  for (const auto& inputs : judge.m_inputs) {
    judge.m_expected.emplace_back();
    KILN_RETURN_IF_ERROR(reference->run(inputs, {}, &judge.m_expected.back()));
  }
  return judge;
}

Result<std::vector<std::vector<NamedTensor>>> PlanJudge::runAll(ModelRunner& runner) const {
  std::vector<std::vector<NamedTensor>> outputs(m_inputs.size());
  for (size_t set = 0; set < m_inputs.size(); ++set) {
    KILN_RETURN_IF_ERROR(runner.run(m_inputs[set], {}, &outputs[set]));
    if (outputs[set].size() != m_expected[set].size())
      return internalError(runner.description() + ": " + std::to_string(outputs[set].size()) +
                           " outputs, the reference has " + std::to_string(m_expected[set].size()));
  }
  return outputs;
}

Result<Verdict> PlanJudge::verdictOf(const std::vector<std::vector<NamedTensor>>& outputs) const {
  KILN_ASSIGN_OR_RETURN(std::vector<ErrorStats> outputStats,
                        compareOutputRuns(outputs, m_expected, m_tolerance, 0));
  Verdict verdict;
  for (ErrorStats& stats : outputStats) {
    const bool nonFinite =
        stats.nanActual + stats.infActual != stats.nanExpected + stats.infExpected;
    const double error =
        nonFinite || !stats.comparable ? std::numeric_limits<double>::infinity() : stats.maxAbs;
    if (verdict.worstOutput.empty() || error > verdict.maxAbs) {
      verdict.maxAbs = error;
      verdict.worstOutput = stats.name;
    }
    verdict.pass = verdict.pass && stats.pass;
    verdict.outputs.push_back(std::move(stats));
  }
  return verdict;
}

Result<Verdict> PlanJudge::judge(ModelRunner& runner) const {
  KILN_ASSIGN_OR_RETURN(auto outputs, runAll(runner));
  return verdictOf(outputs);
}

Result<Verdict> PlanJudge::buildAndJudge(const BuilderConfig& config,
                                         std::shared_ptr<const Plan>* planOut,
                                         const PlanRunnerFactory& makeRunner) const {
  auto backend = cpuBuildBackend();
  KILN_ASSIGN_OR_RETURN(Plan built, buildPlan(m_network, config, *backend));
  auto plan = std::make_shared<const Plan>(std::move(built));
  if (planOut) *planOut = plan;
  KILN_ASSIGN_OR_RETURN(auto runner, makeRunner ? makeRunner(plan) : cpuPlanRunner(plan, "build"));
  return judge(*runner);
}

}  // namespace kiln::compare
