// Side-by-side builds (kiln compare --builds a.kiln b.kiln ...): two or more engine
// reports of one model aligned layer by layer through ONNX provenance. Layers of any
// build that share an ONNX node fall into one row, so a "Conv_3 + Relu_4" layer of
// one build lines up with separate "Conv_3" and "Relu_4" layers of another. Per row
// and build: layers, precision, tactic, time; per row the deltas against the first
// build (the baseline); per build the totals (time, memory, precisions).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine_report.h"

namespace kiln::compare {

// One build's part of a row.
struct DiffCell {
  std::vector<int> layers;  // indices into that build's report layers; empty: absent
  std::vector<std::string> names;
  std::string precision;     // "FP16", or "FP16/FP32" when its layers differ
  std::string tactic;        // the layers' tactics joined with " | "
  double milliseconds = -1;  // sum of the layers' times; -1 when one is untimed
};

struct DiffRow {
  std::vector<std::string> onnxNodes;  // in execution order
  std::vector<DiffCell> cells;         // one per build
  std::vector<double> timeDeltas;      // per build: ms minus the baseline's (0 when untimed)
  bool precisionChanged = false;       // some build differs from the baseline
  bool tacticChanged = false;
  bool fusionChanged = false;  // the nodes are split into different layers
  bool missing = false;        // some build has no layer for these nodes
};

struct BuildTotals {
  std::string title;
  int layers = 0;
  double totalMs = -1;
  int64_t activationBytes = -1;
  int64_t weightBytes = -1;
  std::map<std::string, int> precisions;  // layer count per precision
};

struct BuildDiff {
  std::vector<BuildTotals> builds;
  std::vector<DiffRow> rows;  // execution order of the baseline
};

// Aligns `reports` (the first is the baseline). Layers without provenance are
// matched by the names in "A + B" layer names.
BuildDiff diffBuilds(const std::vector<const inspector::EngineReport*>& reports);

enum class DiffOrder { kExecution, kTimeDelta };  // kTimeDelta: largest |delta| first
std::vector<const DiffRow*> orderedRows(const BuildDiff& diff, DiffOrder order);

// {"builds": [{"title","layers","total_ms","activation_bytes","weight_bytes",
// "precisions"}], "rows": [{"onnx_nodes", "builds": [{"layers","precision","tactic",
// "ms"}], "time_delta_ms": [...], "precision_changed", "tactic_changed",
// "fusion_changed", "missing"}]}
nlohmann::json buildDiffJson(const BuildDiff& diff);
// Totals, then one line per row (only changed rows unless `allRows`).
std::string formatBuildDiff(const BuildDiff& diff, DiffOrder order, bool allRows);

}  // namespace kiln::compare
