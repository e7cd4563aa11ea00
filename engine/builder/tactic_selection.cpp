// Tactic selection for one layer: enumerate the backend's tactics at each
// allowed precision, reject what a disabled source offers, time the rest (or
// take the time from the cache), and keep the fastest. A --load-tactics entry
// wins untimed when its tactic is still a valid candidate.
#include <algorithm>
#include <sstream>

#include "builder/build_steps.h"
#include "kiln/plugin_registry.h"
#include "kiln/timing_cache.h"

namespace kiln::build {
namespace {

// Everything about a layer that decides its timing, but not its name or weights.
std::string layerSignature(const Node& node, const ValueMetas& values) {
  std::ostringstream s;
  s << (node.domain.empty() ? "ai.onnx" : node.domain) << "::" << node.opType << "-" << node.opset;
  // A plugin layer's time belongs to the plugin build that measured it.
  if (isPluginNode(node)) {
    auto plugin = resolvePlugin(node);
    if (plugin.isOk()) s << "|plugin=" << plugin->info.displayName() << "@" << plugin->info.library;
  }
  for (const auto& [key, attr] : node.attributes)
    if (key != kSourceNodesAttribute && key != kFusionPassAttribute)
      s << "|" << key << "=" << attributeText(attr, std::string::npos);
  for (const std::string& name : node.inputs) {
    s << "|in:";
    auto it = values.find(name);
    if (!name.empty() && it != values.end())
      s << dataTypeName(it->second.type) << "[" << shapeToString(it->second.shape) << "]";
  }
  return s.str();
}

}  // namespace

Result<TacticSelection> selectTactic(TimingSession& session, const Node& node,
                                     const PrecisionChoice& precisions, const ValueMetas& values,
                                     const InputsOnDemand& inputsOnDemand) {
  const BuilderConfig& config = session.config;
  TacticSelection selection;
  for (const TacticDescriptor& tactic : session.backend.tactics(node)) {
    for (DataType precision : precisions.precisions) {
      TacticCandidate c;
      c.tactic = tactic.name;
      c.tacticValue = tacticValueOf(tactic.name);
      c.source = tacticSourceName(tactic.source);
      c.precision = precision;
      if (std::find(tactic.precisions.begin(), tactic.precisions.end(), precision) ==
          tactic.precisions.end()) {
        c.rejected = "does not run in " + precisionSpelling(precision);
      } else if (!(config.tacticSources & tactic.source)) {
        c.rejected = std::string("tactic source '") + c.source + "' is disabled";
      }
      selection.candidates.push_back(c);
    }
  }
  if (selection.candidates.empty())
    return unsupported(node.describe() + ": the backend has no implementation for this layer");

  // A replayed choice: valid when it is a candidate here that is not rejected.
  if (config.replay) {
    auto it = config.replay->layers.find(node.displayName());
    if (it != config.replay->layers.end()) {
      for (size_t i = 0; i < selection.candidates.size(); ++i) {
        const TacticCandidate& c = selection.candidates[i];
        if (c.tactic == it->second.tactic && c.precision == it->second.precision &&
            c.rejected.empty()) {
          selection.winner = static_cast<int>(i);
          selection.replayed = true;
        }
      }
      // A record names what a layer computes in: float16 for a layer of an FP16 model,
      // whose only candidates run float32 ("as typed", no rounding). That is the same
      // choice when its tactic is one of them.
      const bool ownTypes =
          std::all_of(selection.candidates.begin(), selection.candidates.end(),
                      [](const TacticCandidate& c) { return c.precision == DataType::kFloat32; });
      for (size_t i = 0; !selection.replayed && ownTypes && i < selection.candidates.size(); ++i) {
        const TacticCandidate& c = selection.candidates[i];
        if (c.tactic == it->second.tactic && c.rejected.empty() &&
            (it->second.precision == DataType::kFloat16 ||
             it->second.precision == DataType::kBFloat16)) {
          selection.winner = static_cast<int>(i);
          selection.replayed = true;
        }
      }
      if (!selection.replayed)
        selection.replayNote = "tactic '" + it->second.tactic + "' in " +
                               precisionSpelling(it->second.precision) +
                               " is not a valid candidate here";
    }
  }

  const std::string signature = layerSignature(node, values);
  const int iterations = config.optimizationLevel == 0
                             ? 1
                             : std::max(1, tacticTimingIterations(config.optimizationLevel));
  const LayerInputs* synthetic = nullptr;
  // The choices each candidate's tactic offered inside (BuildBackend::lastTimingChoices),
  // by candidate index.
  std::vector<std::vector<std::string>> offered(selection.candidates.size());
  auto keyOf = [&](const TacticCandidate& c) {
    return session.deviceKey + "|" + signature + "|" + precisionSpelling(c.precision) + "|" +
           c.tactic + (c.choice.empty() ? "" : "|choice=" + c.choice);
  };
  // Times `c` (the tactic, or the choice it names when `holdChoice`) on synthetic inputs,
  // or on the reference run's values when `exact`; a rejection on synthetic inputs is
  // not cached (real values may run), so the caller can retry with exact ones.
  auto time = [&](TacticCandidate& c, const std::string& key, bool exact, bool holdChoice,
                  std::vector<std::string>* offers) -> Status {
    const LayerInputs* inputs = synthetic;
    if (exact || !inputs) {
      KILN_ASSIGN_OR_RETURN(inputs, inputsOnDemand(exact));
      if (!exact) synthetic = inputs;
    }
    Result<double> ms =
        holdChoice
            ? session.backend.timeChoice(node, c.tactic, c.precision, *inputs, iterations, c.choice)
            : session.backend.timeTactic(node, c.tactic, c.precision, *inputs, iterations);
    ++session.timed;
    c.rejected.clear();
    if (ms.isOk()) {
      c.milliseconds = *ms;
      c.detail = session.backend.lastTimingDetail();
      if (!holdChoice) c.choice = session.backend.lastTimingChoice();
      if (offers && !holdChoice) *offers = session.backend.lastTimingChoices();
    } else {
      c.rejected = ms.status().message();
    }
    if (ms.isOk() || exact || holdChoice) {
      TimingCacheEntry entry{c.milliseconds, c.rejected, node.displayName(), c.detail, c.choice};
      if (offers) entry.choices = *offers;
      if (config.timingCache) config.timingCache->insert(key, entry);
      session.sameBuild.insert(key, entry);
    }
    return Status::ok();
  };
  // Takes `key`'s entry from the timing cache, else from this build's times (a layer
  // identical to one timed already, as TensorRT's builder does: the detail names the layer
  // timed); false when neither has it.
  auto lookUp = [&](TacticCandidate& c, const std::string& key,
                    std::vector<std::string>* offers) -> bool {
    ++session.stats.lookups;
    std::optional<TimingCacheEntry> found;
    if (config.timingCache) found = config.timingCache->lookup(key);
    const bool fromFile = found.has_value();
    if (fromFile) ++session.stats.hits;
    if (!found) found = session.sameBuild.lookup(key);
    if (!found) return false;
    c.fromCache = fromFile;
    c.milliseconds = found->rejected.empty() ? found->milliseconds : -1;
    c.rejected = found->rejected;
    c.detail = found->detail;
    if (!fromFile)
      c.detail += (c.detail.empty() ? "" : "; ") + std::string("timed on layer '") + found->layer +
                  "' (same signature)";
    if (c.choice.empty()) c.choice = found->choice;
    if (offers) *offers = found->choices;
    return true;
  };
  std::vector<std::pair<size_t, std::string>> retry;  // rejected on synthetic inputs
  // Looks up or times candidate i; false when it is rejected.
  auto measure = [&](size_t i) -> Result<bool> {
    TacticCandidate& c = selection.candidates[i];
    const std::string key = keyOf(c);
    if (!lookUp(c, key, &offered[i])) {
      KILN_RETURN_IF_ERROR(time(c, key, false, false, &offered[i]));
      if (!c.rejected.empty()) retry.push_back({i, key});
    }
    return c.rejected.empty();
  };
  // A replayed pick is measured alone; if it no longer runs, the layer is timed as usual.
  if (selection.replayed) {
    KILN_ASSIGN_OR_RETURN(bool runs, measure(selection.winner));
    if (!runs) {
      selection.replayNote = "replayed tactic '" + selection.candidates[selection.winner].tactic +
                             "' no longer runs: " + selection.candidates[selection.winner].rejected;
      selection.replayed = false;
      selection.winner = -1;
    }
  }
  for (size_t i = 0; i < selection.candidates.size() && !selection.replayed; ++i) {
    TacticCandidate& c = selection.candidates[i];
    if (!c.rejected.empty() || c.milliseconds >= 0) continue;
    KILN_ASSIGN_OR_RETURN(bool runs, measure(i));
    if (config.optimizationLevel == 0 && runs) {
      selection.winner = static_cast<int>(i);  // the heuristic's first runnable pick
      break;
    }
  }
  bool anyValid = false;
  for (const TacticCandidate& c : selection.candidates)
    anyValid = anyValid || (c.rejected.empty() && c.milliseconds >= 0);
  if (!anyValid) {
    for (auto& [i, key] : retry)
      KILN_RETURN_IF_ERROR(time(selection.candidates[i], key, true, false, &offered[i]));
    if (config.optimizationLevel == 0)
      for (size_t i = 0; i < selection.candidates.size() && selection.winner < 0; ++i)
        if (selection.candidates[i].rejected.empty() && selection.candidates[i].milliseconds >= 0)
          selection.winner = static_cast<int>(i);
  }
  // Tactics as data (issue 23): a tactic whose kernel raced several complete choices
  // inside (cuBLASLt's algorithms, Kiln's kernel against cuDNN's engines, ...) becomes one
  // candidate per choice, each timed here with the layer held to it; the fastest of all
  // wins. A choice the layer cannot take is a rejected candidate; a tactic none of whose
  // choices runs keeps its own candidate (the kernel then chooses at its first run).
  if (selection.winner < 0 && config.optimizationLevel > 0) {
    std::vector<TacticCandidate> expanded;
    for (size_t i = 0; i < selection.candidates.size(); ++i) {
      const TacticCandidate& base = selection.candidates[i];
      if (offered[i].size() < 2 || !base.rejected.empty() || base.milliseconds < 0) {
        expanded.push_back(base);
        continue;
      }
      bool anyRuns = false;
      for (const std::string& choice : offered[i]) {
        TacticCandidate c;
        c.tactic = base.tactic;
        c.tacticValue = base.tacticValue;
        c.source = base.source;
        c.precision = base.precision;
        c.choice = choice;
        const std::string key = keyOf(c);
        if (!lookUp(c, key, nullptr)) KILN_RETURN_IF_ERROR(time(c, key, false, true, nullptr));
        anyRuns = anyRuns || (c.rejected.empty() && c.milliseconds >= 0);
        expanded.push_back(std::move(c));
      }
      if (!anyRuns) expanded.push_back(base);
    }
    selection.candidates = std::move(expanded);
  }
  if (selection.winner < 0) {
    for (size_t i = 0; i < selection.candidates.size(); ++i) {
      const TacticCandidate& c = selection.candidates[i];
      if (!c.rejected.empty() || c.milliseconds < 0) continue;
      if (selection.winner < 0 ||
          c.milliseconds < selection.candidates[selection.winner].milliseconds)
        selection.winner = static_cast<int>(i);
    }
  }
  if (selection.winner < 0 || !selection.candidates[selection.winner].rejected.empty()) {
    std::string reasons;
    for (const TacticCandidate& c : selection.candidates)
      reasons += "; " + c.tactic + " " + precisionSpelling(c.precision) + ": " + c.rejected;
    return unsupported("layer '" + node.displayName() + "': no tactic can run it" + reasons);
  }
  return selection;
}

}  // namespace kiln::build
