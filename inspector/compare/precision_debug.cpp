// The bisection of debugPrecision(). Invariant of the search: with `kept` and the
// first `hi` candidates in FP32 the outputs pass (verified, or at the start assumed
// and checked once when the search ends there). Each round finds the smallest prefix
// k <= hi that passes with `kept`; candidate k-1 is then needed (with it and the
// prefix in FP32 it passes, without it not), so it joins `kept` and the next round
// searches below it. A round ends the search when `kept` alone passes.
#include "compare/precision_debug.h"

#include <algorithm>
#include <set>

#include "compare/plan_judge.h"

namespace kiln::compare {
namespace {

class PrecisionSearch {
 public:
  PrecisionSearch(const PlanJudge& judge, const PrecisionDebugOptions& options,
                  PrecisionDebugResult* result)
      : m_judge(judge), m_options(options), m_result(result) {}

  // The configuration with every reducible layer in the reduced precision except
  // the candidates in `fp32` (indices), obeyed.
  BuilderConfig configFor(const std::set<int>& fp32) const {
    BuilderConfig config = m_options.config;
    config.callbacks = {};
    config.fp16 = m_options.reduced == DataType::kFloat16;
    config.bf16 = m_options.reduced == DataType::kBFloat16;
    config.precisionConstraints = ConstraintMode::kObey;
    config.profilingVerbosity = ProfilingVerbosity::kDetailed;
    config.layerPrecisions = rulesFor(fp32);
    config.layerOutputTypes.clear();
    return config;
  }

  std::vector<LayerPrecisionRule> rulesFor(const std::set<int>& fp32) const {
    std::vector<LayerPrecisionRule> rules = {{"*", m_options.reduced}};
    for (int i : fp32)
      for (const std::string& node : m_result->candidates[i].sourceNodes)
        rules.push_back({node, DataType::kFloat32});
    return rules;
  }

  // One build: passes or not. `plan` (optional) receives the built plan.
  Result<bool> test(const std::set<int>& fp32, const std::string& description,
                    std::shared_ptr<const Plan>* plan = nullptr) {
    if (m_options.cancel && m_options.cancel->load())
      return Status(StatusCode::kCancelled, "precision debugging cancelled");
    KILN_ASSIGN_OR_RETURN(Verdict verdict,
                          m_judge.buildAndJudge(configFor(fp32), plan, m_options.makeRunner));
    PrecisionDebugStep step;
    step.build = ++m_result->builds;
    step.description = description;
    for (int i : fp32) step.fp32Layers.push_back(m_result->candidates[i].name);
    step.pass = verdict.pass;
    step.maxAbs = verdict.maxAbs;
    step.worstOutput = verdict.worstOutput;
    m_result->steps.push_back(step);
    if (verdict.pass) m_passedOutputs[fp32] = verdict.outputs;
    if (m_options.onStep) m_options.onStep(step);
    return verdict.pass;
  }

  // Smallest k in [1, hi] with kept + first k passing (kept + first hi assumed to).
  Result<int> smallestPassingPrefix(const std::set<int>& kept, int hi) {
    int lo = 1;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      std::set<int> fp32 = kept;
      for (int i = 0; i < mid; ++i) fp32.insert(i);
      KILN_ASSIGN_OR_RETURN(bool pass, test(fp32, "first " + std::to_string(mid) + " of " +
                                                      std::to_string(candidateCount()) +
                                                      " layers in fp32" + keptNote(kept)));
      if (pass)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }

  Status run() {
    const int n = candidateCount();
    std::set<int> kept;
    int hi = n;
    bool upperKnown = false;  // kept + first hi in FP32 was built and passed
    while (true) {
      KILN_ASSIGN_OR_RETURN(int k, smallestPassingPrefix(kept, hi));
      const bool prefixKnown = k < hi || upperKnown;
      std::set<int> next = kept;
      next.insert(k - 1);
      bool pass = true;
      // With k == 1 the next set is the passing prefix itself; else one build says.
      if (k > 1 || !prefixKnown) {
        KILN_ASSIGN_OR_RETURN(
            pass, test(next, std::to_string(next.size()) + " layer(s) in fp32, the rest " +
                                 precisionSpelling(m_options.reduced)));
      }
      if (!pass && !prefixKnown) {  // the assumption: does keeping all of them pass?
        std::set<int> all = kept;
        for (int i = 0; i < hi; ++i) all.insert(i);
        bool allPass = false;
        if (all != next) {
          KILN_ASSIGN_OR_RETURN(
              allPass, test(all, "all " + std::to_string(n) + " candidate layers in fp32"));
        }
        if (!allPass)
          return invalidArgument("the outputs miss the tolerance even with every layer in fp32");
      }
      kept = std::move(next);
      hi = k - 1;
      upperKnown = true;
      if (pass) break;
      if (hi == 0)
        return internalError("no layer is left to keep in fp32 although the search did not end");
    }
    for (int i : kept) m_result->keep.push_back(m_result->candidates[i]);
    m_keptRules = rulesFor(kept);
    if (m_passedOutputs.count(kept)) m_result->outputs = m_passedOutputs.at(kept);
    return Status::ok();
  }

  const std::vector<LayerPrecisionRule>& keptRules() const { return m_keptRules; }
  void takeOutputsOf(const std::set<int>& fp32) {
    if (m_passedOutputs.count(fp32)) m_result->outputs = m_passedOutputs.at(fp32);
  }

 private:
  int candidateCount() const { return static_cast<int>(m_result->candidates.size()); }
  static std::string keptNote(const std::set<int>& kept) {
    return kept.empty() ? "" : " + " + std::to_string(kept.size()) + " kept";
  }

  const PlanJudge& m_judge;
  const PrecisionDebugOptions& m_options;
  PrecisionDebugResult* m_result;
  std::vector<LayerPrecisionRule> m_keptRules;
  std::map<std::set<int>, std::vector<ErrorStats>> m_passedOutputs;  // by FP32 set
};

std::string toleranceNote(const PrecisionDebugOptions& options) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "kiln debug precision: %s with atol %g, rtol %g",
                precisionSpelling(options.reduced).c_str(), options.tolerance.atol,
                options.tolerance.rtol);
  return buf;
}

}  // namespace

Result<PrecisionDebugResult> debugPrecision(
    std::shared_ptr<const Network> network,
    const std::vector<std::map<std::string, Tensor>>& inputSets,
    const PrecisionDebugOptions& options) {
  if (options.reduced != DataType::kFloat16 && options.reduced != DataType::kBFloat16)
    return invalidArgument("precision debugging searches fp16 or bf16 builds; " +
                           precisionSpelling(options.reduced) + " needs quantization");
  KILN_ASSIGN_OR_RETURN(PlanJudge judge, PlanJudge::create(network, inputSets, options.tolerance));
  PrecisionDebugResult result;
  PrecisionSearch search(judge, options, &result);
  // The all-reduced build: it says which layers the search is over.
  std::shared_ptr<const Plan> reducedPlan;
  KILN_ASSIGN_OR_RETURN(
      bool pass,
      search.test({}, "every float layer in " + precisionSpelling(options.reduced), &reducedPlan));
  for (const LayerRecord& layer : reducedPlan->record.layers)
    if (layer.precision == options.reduced)
      result.candidates.push_back({layer.name, layer.sourceNodes});
  result.constraints.mode = ConstraintMode::kObey;
  result.constraints.note = toleranceNote(options);
  if (pass || result.candidates.empty()) {
    if (pass) search.takeOutputsOf({});
    result.reducedPasses = pass;
    result.constraints.layerPrecisions = search.rulesFor({});
    if (!pass)
      return invalidArgument("the outputs miss the tolerance, and no layer ran in " +
                             precisionSpelling(options.reduced));
    return result;
  }
  KILN_RETURN_IF_ERROR(search.run());
  result.constraints.layerPrecisions = search.keptRules();
  for (const DebugLayer& layer : result.keep)
    result.onnxNodes.insert(result.onnxNodes.end(), layer.sourceNodes.begin(),
                            layer.sourceNodes.end());
  return result;
}

}  // namespace kiln::compare
