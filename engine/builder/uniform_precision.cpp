// One precision per engine (the CUDA runtime stores every float tensor in one
// type): the per-layer winners are reconciled here. The fastest total wins; a
// layer that cannot run in it (integer layers, casts) keeps its own types.
#include <limits>

#include "builder/build_steps.h"

namespace kiln::build {
namespace {

// The fastest valid candidate of `layer` in `precision`, or -1.
int fastestAt(const LayerRecord& layer, DataType precision) {
  int best = -1;
  for (size_t i = 0; i < layer.candidates.size(); ++i) {
    const TacticCandidate& c = layer.candidates[i];
    if (c.precision != precision || !c.rejected.empty() || c.milliseconds < 0) continue;
    if (best < 0 || c.milliseconds < layer.candidates[best].milliseconds)
      best = static_cast<int>(i);
  }
  return best;
}

// Layers with only integer/shape values, casts and control flow run in their own types.
bool computesInFloat(const LayerRecord& layer) {
  return layer.precisionReason.rfind("runs in its own types", 0) != 0;
}

bool offers(const LayerRecord& layer, DataType precision) {
  for (const TacticCandidate& c : layer.candidates)
    if (c.precision == precision) return true;
  return false;
}

}  // namespace

Status unifyPrecision(const BuilderConfig& config, BuildRecord* record,
                      std::vector<LayerImplementation>* layers) {
  std::vector<DataType> options;
  for (DataType p : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32}) {
    bool enabled = p == DataType::kFloat32 || (p == DataType::kFloat16 && config.fp16) ||
                   (p == DataType::kBFloat16 && config.bf16);
    for (const LayerRecord& l : record->layers) enabled = enabled || offers(l, p);
    if (enabled) options.push_back(p);
  }
  DataType chosen = DataType::kFloat32;
  double bestTotal = std::numeric_limits<double>::infinity();
  std::string totals;
  for (DataType p : options) {
    double total = 0;
    bool possible = true;
    for (const LayerRecord& l : record->layers) {
      // A float layer without candidates in `p` was pinned to another one by a rule.
      if (computesInFloat(l) && !offers(l, p)) possible = false;
      const int i = fastestAt(l, offers(l, p) ? p : l.precision);
      total += i >= 0 ? l.candidates[i].milliseconds : l.milliseconds;
    }
    totals += std::string(totals.empty() ? "" : ", ") + dataTypeName(p) + " " +
              (possible ? std::to_string(total).substr(0, 7) + " ms" : "impossible");
    if (possible && total < bestTotal) {
      bestTotal = total;
      chosen = p;
    }
  }
  if (bestTotal == std::numeric_limits<double>::infinity()) {
    return invalidArgument(
        "the CUDA backend runs one precision per engine, and the per-layer precision rules ask "
        "for several (" +
        totals + "); use one precision for every layer");
  }
  for (size_t i = 0; i < record->layers.size(); ++i) {
    LayerRecord& l = record->layers[i];
    if (!computesInFloat(l) || !offers(l, chosen)) continue;
    const int best = fastestAt(l, chosen);
    if (best < 0) {
      return unsupported("layer '" + l.name + "': no tactic runs in " + dataTypeName(chosen) +
                         ", the engine's precision");
    }
    const TacticCandidate& c = l.candidates[best];
    l.precision = c.precision;
    l.outputType = c.precision;  // the engine stores every float tensor in its precision
    l.tactic = c.tactic;
    l.tacticValue = c.tacticValue;
    l.tacticSource = c.source;
    l.milliseconds = c.milliseconds;
    l.precisionReason = std::string("engine-wide ") + dataTypeName(chosen) +
                        ": the fastest total of the enabled precisions (" + totals + ")";
    (*layers)[i] = {l.tactic, l.precision, l.outputType};
  }
  return Status::ok();
}

}  // namespace kiln::build
