#include "compare/build_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

namespace kiln::compare {
namespace {

using inspector::EngineReport;
using inspector::ReportLayer;

// The ONNX nodes a layer implements: its provenance, else the parts of "A + B".
std::vector<std::string> nodesOf(const ReportLayer& layer) {
  if (!layer.sourceNodes.empty()) return layer.sourceNodes;
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t plus = layer.name.find(" + ", start);
    parts.push_back(layer.name.substr(start, plus - start));
    if (plus == std::string::npos) break;
    start = plus + 3;
  }
  return parts;
}

// Union-find over ONNX node names.
class NodeGroups {
 public:
  int id(const std::string& node) {
    auto [it, added] = m_ids.emplace(node, static_cast<int>(m_parent.size()));
    if (added) m_parent.push_back(it->second);
    return it->second;
  }
  int root(int i) {
    while (m_parent[i] != i) i = m_parent[i] = m_parent[m_parent[i]];
    return i;
  }
  void join(int a, int b) { m_parent[root(a)] = root(b); }

 private:
  std::map<std::string, int> m_ids;
  std::vector<int> m_parent;
};

std::string joinUnique(const std::vector<std::string>& items, const std::string& separator) {
  std::vector<std::string> unique;
  for (const std::string& s : items)
    if (std::find(unique.begin(), unique.end(), s) == unique.end()) unique.push_back(s);
  std::string out;
  for (const std::string& s : unique) out += (out.empty() ? "" : separator) + s;
  return out;
}

void fillCell(const EngineReport& report, DiffCell* cell) {
  std::vector<std::string> precisions, tactics;
  double ms = 0;
  for (int index : cell->layers) {
    const ReportLayer& l = report.layers[index];
    cell->names.push_back(l.name);
    precisions.push_back(l.precision.empty() ? "?" : l.precision);
    tactics.push_back(l.tactic.empty() ? "?" : l.tactic);
    ms = (ms < 0 || l.milliseconds < 0) ? -1 : ms + l.milliseconds;
  }
  cell->precision = joinUnique(precisions, "/");
  cell->tactic = joinUnique(tactics, " | ");
  cell->milliseconds = cell->layers.empty() ? -1 : ms;
}

void compareWithBaseline(DiffRow* row) {
  const DiffCell& base = row->cells[0];
  row->timeDeltas.assign(row->cells.size(), 0.0);
  for (size_t b = 0; b < row->cells.size(); ++b) {
    const DiffCell& cell = row->cells[b];
    if (cell.layers.empty()) {
      row->missing = true;
      continue;
    }
    if (b == 0) continue;
    if (cell.milliseconds >= 0 && base.milliseconds >= 0)
      row->timeDeltas[b] = cell.milliseconds - base.milliseconds;
    row->precisionChanged = row->precisionChanged || cell.precision != base.precision;
    row->tacticChanged = row->tacticChanged || cell.tactic != base.tactic;
    row->fusionChanged = row->fusionChanged || cell.names != base.names;
  }
}

BuildTotals totalsOf(const EngineReport& report) {
  BuildTotals t;
  t.title = report.title;
  t.layers = static_cast<int>(report.layers.size());
  t.totalMs = report.totalMs;
  t.activationBytes = report.activationBytes;
  t.weightBytes = report.weightBytes;
  for (const ReportLayer& l : report.layers)
    ++t.precisions[l.precision.empty() ? "?" : l.precision];
  return t;
}

}  // namespace

BuildDiff diffBuilds(const std::vector<const EngineReport*>& reports) {
  BuildDiff diff;
  NodeGroups groups;
  std::vector<std::string> nodeOrder;  // first appearance, baseline first
  std::set<std::string> seen;
  for (const EngineReport* report : reports) {
    diff.builds.push_back(totalsOf(*report));
    for (const ReportLayer& layer : report->layers) {
      const std::vector<std::string> nodes = nodesOf(layer);
      for (const std::string& n : nodes) {
        groups.join(groups.id(n), groups.id(nodes[0]));
        if (seen.insert(n).second) nodeOrder.push_back(n);
      }
    }
  }
  // One row per group; its position: the baseline's layer index, else just after the
  // row of the previous layer of the first build that has it.
  std::map<int, size_t> rowOfRoot;
  std::vector<double> position;
  for (size_t b = 0; b < reports.size(); ++b) {
    double previous = -1;
    int counter = 0;
    for (size_t i = 0; i < reports[b]->layers.size(); ++i) {
      const std::vector<std::string> nodes = nodesOf(reports[b]->layers[i]);
      const int root = groups.root(groups.id(nodes[0]));
      auto [it, added] = rowOfRoot.emplace(root, diff.rows.size());
      if (added) {
        diff.rows.emplace_back();
        diff.rows.back().cells.resize(reports.size());
        position.push_back(b == 0 ? static_cast<double>(i) : previous + 1e-3 * ++counter);
      }
      diff.rows[it->second].cells[b].layers.push_back(static_cast<int>(i));
      previous = position[it->second];
    }
  }
  for (const std::string& node : nodeOrder)
    diff.rows[rowOfRoot.at(groups.root(groups.id(node)))].onnxNodes.push_back(node);
  for (DiffRow& row : diff.rows) {
    for (size_t b = 0; b < reports.size(); ++b) fillCell(*reports[b], &row.cells[b]);
    compareWithBaseline(&row);
  }
  std::vector<size_t> order(diff.rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return position[a] < position[b]; });
  std::vector<DiffRow> sorted;
  for (size_t i : order) sorted.push_back(std::move(diff.rows[i]));
  diff.rows = std::move(sorted);
  return diff;
}

std::vector<const DiffRow*> orderedRows(const BuildDiff& diff, DiffOrder order) {
  std::vector<const DiffRow*> rows;
  for (const DiffRow& row : diff.rows) rows.push_back(&row);
  auto largestDelta = [](const DiffRow* r) {
    double m = 0;
    for (double d : r->timeDeltas) m = std::max(m, std::fabs(d));
    return m;
  };
  if (order == DiffOrder::kTimeDelta)
    std::stable_sort(rows.begin(), rows.end(), [&](const DiffRow* a, const DiffRow* b) {
      return largestDelta(a) > largestDelta(b);
    });
  return rows;
}

nlohmann::json buildDiffJson(const BuildDiff& diff) {
  nlohmann::json j = {{"builds", nlohmann::json::array()}, {"rows", nlohmann::json::array()}};
  for (const BuildTotals& t : diff.builds)
    j["builds"].push_back({{"title", t.title},
                           {"layers", t.layers},
                           {"total_ms", t.totalMs},
                           {"activation_bytes", t.activationBytes},
                           {"weight_bytes", t.weightBytes},
                           {"precisions", t.precisions}});
  for (const DiffRow& row : diff.rows) {
    nlohmann::json cells = nlohmann::json::array();
    for (const DiffCell& c : row.cells)
      cells.push_back({{"layers", c.names},
                       {"precision", c.precision},
                       {"tactic", c.tactic},
                       {"ms", c.milliseconds}});
    j["rows"].push_back({{"onnx_nodes", row.onnxNodes},
                         {"builds", cells},
                         {"time_delta_ms", row.timeDeltas},
                         {"precision_changed", row.precisionChanged},
                         {"tactic_changed", row.tacticChanged},
                         {"fusion_changed", row.fusionChanged},
                         {"missing", row.missing}});
  }
  return j;
}

std::string formatBuildDiff(const BuildDiff& diff, DiffOrder order, bool allRows) {
  std::string text;
  char buf[400];
  for (size_t b = 0; b < diff.builds.size(); ++b) {
    const BuildTotals& t = diff.builds[b];
    std::string mix;
    for (const auto& [p, n] : t.precisions)
      mix += (mix.empty() ? "" : " ") + p + " " + std::to_string(n);
    std::snprintf(
        buf, sizeof buf,
        "[%zu] %s: %d layers (%s), total %.4f ms, activations %.2f MiB, weights %.2f MiB\n", b,
        t.title.c_str(), t.layers, mix.c_str(), t.totalMs, t.activationBytes / 1048576.0,
        t.weightBytes / 1048576.0);
    text += buf;
  }
  int changed = 0;
  for (const DiffRow& r : diff.rows)
    changed += r.precisionChanged || r.tacticChanged || r.fusionChanged || r.missing;
  std::snprintf(buf, sizeof buf, "%zu aligned rows, %d differ from [0]\n", diff.rows.size(),
                changed);
  text += buf;
  for (const DiffRow* row : orderedRows(diff, order)) {
    const bool differs =
        row->precisionChanged || row->tacticChanged || row->fusionChanged || row->missing;
    if (!allRows && !differs) continue;
    std::string flags = std::string(row->precisionChanged ? "P" : "-") +
                        (row->tacticChanged ? "T" : "-") + (row->fusionChanged ? "F" : "-") +
                        (row->missing ? "M" : "-");
    text += flags + " " + joinUnique(row->onnxNodes, ", ") + "\n";
    for (size_t b = 0; b < row->cells.size(); ++b) {
      const DiffCell& c = row->cells[b];
      if (c.layers.empty()) {
        std::snprintf(buf, sizeof buf, "     [%zu] (no layer)\n", b);
      } else {
        std::snprintf(buf, sizeof buf, "     [%zu] %-6s %-40.40s %10.5f ms %+10.5f  %s\n", b,
                      c.precision.c_str(), c.tactic.c_str(), c.milliseconds, row->timeDeltas[b],
                      joinUnique(c.names, " ; ").c_str());
      }
      text += buf;
    }
  }
  return text;
}

}  // namespace kiln::compare
