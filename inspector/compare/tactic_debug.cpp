#include "compare/tactic_debug.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "kiln/builder.h"

namespace kiln::compare {
namespace {

// Largest |a - b| over every output of every input set (infinity where one side is
// not finite and the other differs).
double largestDifference(const std::vector<std::vector<NamedTensor>>& a,
                         const std::vector<std::vector<NamedTensor>>& b) {
  double largest = 0;
  for (size_t set = 0; set < a.size() && set < b.size(); ++set) {
    for (size_t i = 0; i < a[set].size() && i < b[set].size(); ++i) {
      const ErrorStats s =
          computeErrorStats(a[set][i].name, a[set][i].tensor, b[set][i].tensor, {0, 0});
      const bool nonFinite = s.nanActual != s.nanExpected || s.infActual != s.infExpected;
      largest = std::max(largest, nonFinite || !s.comparable ? INFINITY : s.maxAbs);
    }
  }
  return largest;
}

bool isSuspect(const LayerRecord& layer, const std::vector<std::string>& names) {
  if (names.empty()) {
    int valid = 0;
    for (const TacticCandidate& c : layer.candidates)
      valid += c.rejected.empty() && c.precision == layer.precision;
    return valid >= 2;
  }
  for (const std::string& name : names) {
    if (name == layer.name) return true;
    if (std::find(layer.sourceNodes.begin(), layer.sourceNodes.end(), name) !=
        layer.sourceNodes.end())
      return true;
  }
  return false;
}

class TacticSearch {
 public:
  TacticSearch(const PlanJudge& judge, const TacticDebugOptions& options, TacticDebugResult* result)
      : m_judge(judge), m_options(options), m_result(result) {}

  struct Build {
    std::shared_ptr<const Plan> plan;
    std::vector<std::vector<NamedTensor>> outputs;
    Verdict verdict;
  };

  Result<Build> build(const TacticReplay* replay, const std::string& what) {
    if (m_options.cancel && m_options.cancel->load())
      return Status(StatusCode::kCancelled, "tactic debugging cancelled");
    if (m_options.onBuild) m_options.onBuild(what, m_result->builds + 1);
    BuilderConfig config = m_options.config;
    config.callbacks = {};
    config.replay = replay;
    config.profilingVerbosity = ProfilingVerbosity::kDetailed;
    auto backend = cpuBuildBackend();
    ++m_result->builds;
    KILN_ASSIGN_OR_RETURN(Plan built, buildPlan(m_judge.network(), config, *backend));
    Build b;
    b.plan = std::make_shared<const Plan>(std::move(built));
    auto runner = m_options.makeRunner
                      ? m_options.makeRunner(b.plan)
                      : cpuPlanRunner(b.plan, "build " + std::to_string(m_result->builds));
    if (!runner.isOk()) return runner.status();
    KILN_ASSIGN_OR_RETURN(b.outputs, m_judge.runAll(**runner));
    KILN_ASSIGN_OR_RETURN(b.verdict, m_judge.verdictOf(b.outputs));
    return b;
  }

  Status eachTactic(const Build& baseline) {
    const TacticReplay pinned = TacticReplay::fromRecord(baseline.plan->record);
    for (const LayerRecord& layer : baseline.plan->record.layers) {
      if (!isSuspect(layer, m_options.layers)) continue;
      std::set<std::string> tried;
      for (const TacticCandidate& c : layer.candidates) {
        if (!c.rejected.empty() || c.precision != layer.precision || !tried.insert(c.tactic).second)
          continue;
        TacticTrial trial;
        trial.layer = layer.name;
        trial.sourceNodes = layer.sourceNodes;
        trial.tactic = c.tactic;
        trial.precision = precisionSpelling(c.precision);
        trial.baseline = c.tactic == layer.tactic;
        const Verdict* verdict = &baseline.verdict;
        Build forced;
        if (!trial.baseline) {
          TacticReplay replay = pinned;
          replay.layers[layer.name] = {c.tactic, c.precision};
          KILN_ASSIGN_OR_RETURN(forced, build(&replay, layer.name + " with " + c.tactic));
          verdict = &forced.verdict;
        }
        trial.pass = verdict->pass;
        trial.maxAbs = verdict->maxAbs;
        trial.worstOutput = verdict->worstOutput;
        m_result->trials.push_back(trial);
        if (!trial.pass) m_result->bad.push_back(trial);
      }
    }
    return Status::ok();
  }

  Status rebuilds(const Build& first) {
    std::map<std::string, std::string> firstTactics;
    for (const LayerRecord& l : first.plan->record.layers) firstTactics[l.name] = l.tactic;
    std::set<std::string> flaky;
    m_result->rebuilds.push_back({0, first.verdict.pass, first.verdict.maxAbs, 0, {}});
    for (int i = 1; i < m_options.rebuilds; ++i) {
      KILN_ASSIGN_OR_RETURN(Build again, build(nullptr, "rebuild " + std::to_string(i + 1)));
      RebuildOutcome outcome{i,
                             again.verdict.pass,
                             again.verdict.maxAbs,
                             largestDifference(again.outputs, first.outputs),
                             {}};
      for (const LayerRecord& l : again.plan->record.layers) {
        auto it = firstTactics.find(l.name);
        if (it == firstTactics.end() || it->second == l.tactic) continue;
        outcome.changedLayers.push_back(l.name + ": " + it->second + " -> " + l.tactic);
        flaky.insert(l.name);
      }
      m_result->rebuilds.push_back(outcome);
    }
    m_result->flakyLayers.assign(flaky.begin(), flaky.end());
    return Status::ok();
  }

 private:
  const PlanJudge& m_judge;
  const TacticDebugOptions& m_options;
  TacticDebugResult* m_result;
};

}  // namespace

Result<TacticDebugResult> debugTactics(std::shared_ptr<const Network> network,
                                       const std::vector<std::map<std::string, Tensor>>& inputSets,
                                       const TacticDebugOptions& options) {
  KILN_ASSIGN_OR_RETURN(PlanJudge judge, PlanJudge::create(network, inputSets, options.tolerance));
  TacticDebugResult result;
  TacticSearch search(judge, options, &result);
  KILN_ASSIGN_OR_RETURN(TacticSearch::Build baseline, search.build(nullptr, "baseline"));
  result.baselinePass = baseline.verdict.pass;
  result.baselineMaxAbs = baseline.verdict.maxAbs;
  for (const std::string& name : options.layers) {
    bool found = false;
    for (const LayerRecord& l : baseline.plan->record.layers) found = found || isSuspect(l, {name});
    if (!found) return invalidArgument("no layer of the build is or contains '" + name + "'");
  }
  if (options.eachTactic) KILN_RETURN_IF_ERROR(search.eachTactic(baseline));
  if (options.rebuilds > 1) KILN_RETURN_IF_ERROR(search.rebuilds(baseline));
  return result;
}

}  // namespace kiln::compare
