// The numbers behind the Charts view, computed from an EngineReport without any
// plotting: per chart, the bar categories (with the report layer each one stands
// for, where it stands for one), one or two value series and the titles. Kept
// apart from QCustomPlot so the recompute step is cheap to test and to run.
#pragma once

#include <string>
#include <vector>

#include "engine_report.h"

namespace kiln::studio {

enum class ChartKind {
  kLayerLatency,  // (a) top N layers by time, descending
  kTypeTime,      // (b) time by layer type
  kPrecision,     // (c) time and layer count per precision
  kMemory,        // (d) output bytes and workspace per layer, execution order
};
constexpr int kChartCount = 4;

struct ChartValues {
  std::string name;            // legend: "time (ms)", "layers", "output (KiB)", ...
  std::vector<double> values;  // one per category
  bool secondAxis = false;     // plotted against the right-hand axis
};

struct ChartSeries {
  std::string title;
  std::string valueLabel, secondValueLabel;  // axis titles
  std::vector<std::string> categories;       // bar labels, in plot order
  std::vector<int> layers;                   // report layer per category; -1 when none
  std::vector<ChartValues> series;
  bool horizontal = false;  // bars grow to the right, categories top to bottom
};

// True when at least one layer has a time.
bool reportIsTimed(const inspector::EngineReport& report);
// The series of `kind`. `topN` limits (a); untimed reports count layers instead of
// summing times (and say so in the title). Constant layers (inspector::isConstantLayer)
// are left out unless `includeConstants`: they cost nothing at run time.
ChartSeries computeChart(const inspector::EngineReport& report, ChartKind kind, int topN,
                         bool includeConstants = false);
const char* chartName(ChartKind kind);  // for the chooser: "Layer latency (top N)", ...

}  // namespace kiln::studio
