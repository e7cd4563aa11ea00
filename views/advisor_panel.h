// AdvisorPanel: the Advisor dock (issue 25). Its Findings tab lists the advisor's
// performance findings for the open engine (inspector/advisor.h; a Kiln plan or a
// trtexec export alike): severity, rule, message, cost, layer count and fix, most
// costly first, refreshed when the engine or its times change. Selecting a finding
// selects its first layer in the studio. The Memory tab shows a Kiln plan's activation
// memory over its execution (MemoryTimelineChart).
#pragma once

#include <QString>
#include <QWidget>
#include <string>
#include <vector>

#include "advisor.h"
#include "engine_report.h"

class QLabel;
class QTabWidget;
class QPushButton;
class QTableWidget;

namespace kiln::studio {

class MemoryTimelineChart;
class StudioDocument;

class AdvisorPanel : public QWidget {
  Q_OBJECT
 public:
  enum Column { kSeverity, kRule, kMessage, kCost, kLayers, kFix, kColumnCount };

  explicit AdvisorPanel(StudioDocument* document, QWidget* parent = nullptr);

  // The findings shown, in table order (empty with no engine).
  const std::vector<inspector::Finding>& findings() const { return m_findings; }
  QTableWidget* table() const { return m_table; }
  QString summaryText() const;  // the line above the table: placeholder, "No findings", counts
  // Selects the finding's first layer, as a click on its row does.
  void activateFinding(int row);
  // "Apply fix": adds the finding's layer precision rules to the Build dock's
  // configuration (a rule for the same node is replaced; constraints "none", which
  // ignores rules, becomes "prefer") and emits fixApplied with a line saying what
  // changed. False (nothing changed) when the finding has no such fix or no model is
  // open to rebuild. The button is enabled exactly when this would succeed.
  bool applyFix(int row);
  QPushButton* applyButton() const { return m_apply; }
  MemoryTimelineChart* memoryChart() const { return m_memory; }
  QTabWidget* tabs() const { return m_tabs; }

 signals:
  void fixApplied(const QString& summary);

 private:
  void refresh();
  void fillRow(int row, const inspector::Finding& finding);
  bool canApply(int row) const;

  StudioDocument* m_document;
  QTabWidget* m_tabs;
  QLabel* m_summary;
  QTableWidget* m_table;
  QPushButton* m_apply;
  MemoryTimelineChart* m_memory;
  std::vector<inspector::Finding> m_findings;
};

// Index of the layer called `name` in `report`; -1 if none.
int reportLayerNamed(const inspector::EngineReport& report, const std::string& name);

}  // namespace kiln::studio
