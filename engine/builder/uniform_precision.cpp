// One precision per engine (the CUDA runtime stores every float tensor in one
// type): the per-layer winners are reconciled here. Among the enabled precisions
// that every pinned layer (an obeyed rule, a replayed tactic) allows, the one whose
// float layers' best times add up to the least wins; ties go to the lower
// precision. Layers that are not float (integer/shape layers, casts) keep their own.
// When the build asked for a reduced precision and another one wins, a warning says so and
// names the layers that decided it (those whose asked-for time exceeds the winner's most):
// one slow layer can keep a whole engine float32 (wav2vec2's grouped positional convolution
// did, until the CUDA Conv raced float32 engines on cast copies).
#include <algorithm>
#include <cstdio>
#include <limits>

#include "builder/build_steps.h"

namespace kiln::build {
namespace {

// The fastest timed valid candidate of `layer` in `precision`; else its first valid
// untimed one (level 0 and replays time only what they pick); else -1.
int bestAt(const LayerRecord& layer, DataType precision) {
  int best = -1, untimed = -1;
  for (size_t i = 0; i < layer.candidates.size(); ++i) {
    const TacticCandidate& c = layer.candidates[i];
    if (c.precision != precision || !c.rejected.empty()) continue;
    if (c.milliseconds < 0) {
      if (untimed < 0) untimed = static_cast<int>(i);
    } else if (best < 0 || c.milliseconds < layer.candidates[best].milliseconds) {
      best = static_cast<int>(i);
    }
  }
  return best >= 0 ? best : untimed;
}

std::string describeTotal(DataType p, bool possible, bool timed, double total) {
  return std::string(dataTypeName(p)) + " " +
         (!possible ? "not allowed"
          : !timed  ? "not timed"
                    : std::to_string(total).substr(0, 7) + " ms");
}

std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f ms", ms);
  return text;
}

// The warning when `chosen` is not the reduced precision `asked` the build enabled: the
// totals, and up to three layers whose best `asked` time exceeds their best `chosen` time
// the most.
std::string precisionWarning(const BuildRecord& record, const std::vector<UniformLayer>& info,
                             DataType asked, DataType chosen, const std::string& totals) {
  std::vector<std::pair<double, std::string>> excess;
  for (size_t i = 0; i < record.layers.size(); ++i) {
    if (!info[i].computesInFloat) continue;
    const LayerRecord& l = record.layers[i];
    const int a = bestAt(l, asked), c = bestAt(l, chosen);
    if (a < 0 || c < 0) continue;
    const double ta = l.candidates[a].milliseconds, tc = l.candidates[c].milliseconds;
    if (ta < 0 || tc < 0 || ta <= tc) continue;
    excess.push_back({ta - tc, "'" + l.name + "' (" + dataTypeName(asked) + " " + milliseconds(ta) +
                                   ", " + dataTypeName(chosen) + " " + milliseconds(tc) + ")"});
  }
  std::sort(excess.begin(), excess.end(),
            [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string text = std::string(dataTypeName(asked)) + " was enabled, but the engine runs " +
                     dataTypeName(chosen) + ": one precision per engine, and " +
                     dataTypeName(chosen) + "'s layers add up to less (" + totals + ")";
  for (size_t k = 0; k < excess.size() && k < 3; ++k)
    text += (k == 0 ? "; slowest in " + std::string(dataTypeName(asked)) + ": " : ", ") +
            excess[k].second;
  return text;
}

}  // namespace

Status unifyPrecision(const BuilderConfig& config, const std::vector<UniformLayer>& info,
                      BuildRecord* record, std::vector<LayerImplementation>* layers) {
  std::vector<DataType> options;
  if (config.fp16) options.push_back(DataType::kFloat16);
  if (config.bf16) options.push_back(DataType::kBFloat16);
  options.push_back(DataType::kFloat32);
  // A precision whose every float layer has a timed candidate competes on its total;
  // one with untimed layers (level 0, replays) only when no precision is fully timed,
  // and then the heuristic's order (lowest precision first) decides.
  DataType chosen = DataType::kUndefined, firstUntimed = DataType::kUndefined;
  double bestTotal = std::numeric_limits<double>::infinity();
  std::string totals;
  for (DataType p : options) {
    double total = 0;
    bool possible = true, timed = true;
    for (size_t i = 0; i < record->layers.size() && possible; ++i) {
      if (!info[i].computesInFloat) continue;
      const int best = bestAt(record->layers[i], p);
      possible = (info[i].pinned == DataType::kUndefined || info[i].pinned == p) && best >= 0;
      if (!possible) break;
      const double ms = record->layers[i].candidates[best].milliseconds;
      timed = timed && ms >= 0;
      total += std::max(0.0, ms);
    }
    totals += (totals.empty() ? "" : ", ") + describeTotal(p, possible, timed, total);
    if (possible && timed && total < bestTotal) {
      bestTotal = total;
      chosen = p;
    }
    if (possible && !timed && firstUntimed == DataType::kUndefined) firstUntimed = p;
  }
  if (chosen == DataType::kUndefined) chosen = firstUntimed;
  if (chosen == DataType::kUndefined) {
    return invalidArgument(
        "the CUDA backend runs one precision per engine, and the layers' constraints or "
        "replayed tactics ask for several (" +
        totals + ")");
  }
  const DataType asked = options.front();
  if (asked != DataType::kFloat32 && chosen == DataType::kFloat32)
    record->warnings.push_back(precisionWarning(*record, info, asked, chosen, totals));
  for (size_t i = 0; i < record->layers.size(); ++i) {
    if (!info[i].computesInFloat) continue;
    LayerRecord& l = record->layers[i];
    const TacticCandidate& c = l.candidates[bestAt(l, chosen)];
    l.precision = c.precision;
    // The engine stores every float tensor in its precision; an INT8 output (a
    // FusedConvMaxPool's) stays INT8.
    if (isFloatingPoint(l.outputType)) l.outputType = c.precision;
    l.tactic = c.tactic;
    l.tacticValue = c.tacticValue;
    l.tacticSource = c.source;
    l.milliseconds = c.milliseconds;
    l.choice = c.choice;
    l.precisionReason = std::string("engine-wide ") + dataTypeName(chosen) +
                        ": the fastest total of the allowed precisions (" + totals + ")";
    for (auto* tensors : {&l.inputs, &l.outputs}) {
      for (TensorRecord& t : *tensors)
        if (isFloatingPoint(t.type)) t.type = chosen;
    }
    (*layers)[i] = {l.tactic, l.precision, l.outputType};
  }
  return Status::ok();
}

}  // namespace kiln::build
