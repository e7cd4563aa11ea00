// One precision per engine (the CUDA runtime stores every float tensor in one
// type): the per-layer winners are reconciled here. Among the enabled precisions
// that every pinned layer (an obeyed rule, a replayed tactic) allows, the one whose
// float layers' best times add up to the least wins; ties go to the lower
// precision. Layers that are not float (integer/shape layers, casts) keep their own.
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
