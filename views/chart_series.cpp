#include "chart_series.h"

#include <algorithm>
#include <map>

namespace kiln::studio {
namespace {

using inspector::EngineReport;
using inspector::ReportLayer;

std::string orUnknown(const std::string& text) {
  return text.empty() ? "(unknown)" : text;
}

// Categories keyed by `keyOf`, valued by summed time (or layer count when
// untimed), largest first.
ChartSeries groupedChart(const EngineReport& report, const std::vector<int>& shown, bool timed,
                         std::string (*keyOf)(const ReportLayer&)) {
  std::map<std::string, std::pair<double, int>> groups;  // time, count
  for (int i : shown) {
    const ReportLayer& layer = report.layers[i];
    auto& g = groups[keyOf(layer)];
    g.first += std::max(0.0, layer.milliseconds);
    g.second += 1;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(), [timed](const auto& a, const auto& b) {
    return timed ? a.second.first > b.second.first : a.second.second > b.second.second;
  });
  ChartSeries chart;
  ChartValues time{"time (ms)", {}, false}, count{"layers", {}, timed};
  for (const auto& [key, value] : sorted) {
    chart.categories.push_back(key);
    chart.layers.push_back(-1);
    time.values.push_back(value.first);
    count.values.push_back(value.second);
  }
  if (timed) chart.series.push_back(time);
  chart.series.push_back(count);
  chart.valueLabel = timed ? "time (ms)" : "layers";
  chart.secondValueLabel = timed ? "layers" : "";
  return chart;
}

std::string typeOf(const ReportLayer& layer) {
  return orUnknown(layer.layerType);
}
std::string precisionOf(const ReportLayer& layer) {
  return orUnknown(layer.precision);
}

ChartSeries latencyChart(const EngineReport& report, const std::vector<int>& shown, int topN) {
  std::vector<int> order;
  for (int i : shown)
    if (report.layers[i].milliseconds >= 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return report.layers[a].milliseconds > report.layers[b].milliseconds;
  });
  if (topN > 0 && static_cast<int>(order.size()) > topN) order.resize(topN);
  ChartSeries chart;
  chart.title = "Top " + std::to_string(order.size()) + " layers by time";
  chart.valueLabel = "time (ms)";
  chart.horizontal = true;
  ChartValues time{"time (ms)", {}, false};
  for (int i : order) {
    chart.categories.push_back(report.layers[i].name);
    chart.layers.push_back(i);
    time.values.push_back(report.layers[i].milliseconds);
  }
  chart.series.push_back(time);
  return chart;
}

ChartSeries memoryChart(const EngineReport& report, const std::vector<int>& shown) {
  int64_t largest = 0;
  for (int i : shown)
    largest = std::max({largest, report.layers[i].outputBytes, report.layers[i].workspaceBytes});
  const bool mib = largest >= (int64_t{10} << 20);
  const double unit = mib ? 1024.0 * 1024.0 : 1024.0;
  const std::string suffix = mib ? " (MiB)" : " (KiB)";
  ChartSeries chart;
  chart.title = "Memory per layer (execution order)";
  chart.valueLabel = "bytes" + suffix;
  ChartValues output{"output" + suffix, {}, false}, workspace{"workspace" + suffix, {}, false};
  for (int i : shown) {
    const ReportLayer& layer = report.layers[i];
    chart.categories.push_back(layer.name);
    chart.layers.push_back(i);
    output.values.push_back(layer.outputBytes / unit);
    workspace.values.push_back(std::max<int64_t>(0, layer.workspaceBytes) / unit);
  }
  chart.series = {output, workspace};
  return chart;
}

// The layers a chart plots, in execution order: Constants only when asked for.
std::vector<int> shownLayers(const EngineReport& report, bool includeConstants) {
  std::vector<int> shown;
  for (size_t i = 0; i < report.layers.size(); ++i)
    if (includeConstants || !inspector::isConstantLayer(report.layers[i]))
      shown.push_back(static_cast<int>(i));
  return shown;
}

}  // namespace

bool reportIsTimed(const EngineReport& report) {
  for (const ReportLayer& layer : report.layers)
    if (layer.milliseconds >= 0) return true;
  return false;
}

ChartSeries computeChart(const EngineReport& report, ChartKind kind, int topN,
                         bool includeConstants) {
  const std::vector<int> shown = shownLayers(report, includeConstants);
  const bool timed = reportIsTimed(report);
  const std::string untimed = " (untimed engine: layer counts, not times)";
  switch (kind) {
    case ChartKind::kLayerLatency:
      if (timed) return latencyChart(report, shown, topN);
      {  // no per-layer time to rank by: the layers counted by type instead
        ChartSeries chart = groupedChart(report, shown, false, typeOf);
        chart.title = "Layers by type" + untimed;
        chart.horizontal = true;
        return chart;
      }
    case ChartKind::kTypeTime: {
      ChartSeries chart = groupedChart(report, shown, timed, typeOf);
      chart.title = timed ? "Time by layer type" : "Layers by type" + untimed;
      return chart;
    }
    case ChartKind::kPrecision: {
      ChartSeries chart = groupedChart(report, shown, timed, precisionOf);
      chart.title = timed ? "Time and layers per precision" : "Layers per precision" + untimed;
      return chart;
    }
    case ChartKind::kMemory:
      return memoryChart(report, shown);
  }
  return {};
}

const char* chartName(ChartKind kind) {
  switch (kind) {
    case ChartKind::kLayerLatency:
      return "Layer latency (top N)";
    case ChartKind::kTypeTime:
      return "Time by layer type";
    case ChartKind::kPrecision:
      return "Precision breakdown";
    case ChartKind::kMemory:
      return "Memory per layer";
  }
  return "";
}

}  // namespace kiln::studio
