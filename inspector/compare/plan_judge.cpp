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
  if (outputs.size() != m_expected.size())
    return internalError("outputs of " + std::to_string(outputs.size()) + " input sets for " +
                         std::to_string(m_expected.size()));
  std::vector<ErrorAccumulator> accumulators;
  for (const NamedTensor& out : m_expected.front())
    accumulators.emplace_back(out.name, m_tolerance, 0);
  for (size_t set = 0; set < outputs.size(); ++set)
    for (size_t i = 0; i < accumulators.size() && i < outputs[set].size(); ++i)
      accumulators[i].add(outputs[set][i].tensor, m_expected[set][i].tensor);
  Verdict verdict;
  for (ErrorAccumulator& acc : accumulators) {
    ErrorStats stats = acc.finish();
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
