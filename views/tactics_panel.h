// TacticsPanel: the dock that shows why the selected layer runs the way it does:
// every tactic candidate the builder considered (tactic, source, precision, time,
// from cache, why rejected, what the backend said), fastest first, the winner
// marked, under a header "N candidates, winner X, Y× faster than the runner-up".
// A trtexec export has no candidates: the header then names the chosen tactic.
#pragma once

#include <QString>
#include <QWidget>
#include <vector>

#include "engine_report.h"

class QLabel;
class QTableWidget;

namespace kiln::studio {

class StudioDocument;

class TacticsPanel : public QWidget {
  Q_OBJECT
 public:
  enum Column {
    kWinner,
    kTactic,
    kSource,
    kPrecision,
    kTime,
    kFromCache,
    kRejected,
    kChoice,  // the choice inside the tactic that the plan's engine runs untimed
    kDetail,
    kColumnCount
  };

  explicit TacticsPanel(StudioDocument* document, QWidget* parent = nullptr);

  QString header() const;
  QTableWidget* table() const { return m_table; }
  // The row of the winner in the table; -1 when the layer has no winning candidate.
  int winnerRow() const { return m_winnerRow; }

 private:
  void refresh();
  // trtexecExport: the report is a trtexec export, whose layers carry no candidates.
  void showLayer(const inspector::ReportLayer& layer, bool trtexecExport);

  StudioDocument* m_document;
  QLabel* m_header;
  QTableWidget* m_table;
  int m_winnerRow = -1;
};

// The order the panel lists candidates in: valid and timed by time, then valid
// untimed, then rejected, each group in the builder's order.
std::vector<int> candidateOrder(const std::vector<inspector::ReportCandidate>& candidates);
// Index of the candidate that is the layer's tactic at its precision (-1 if none).
int winnerOf(const inspector::ReportLayer& layer);
// Whether the report was read from a trtexec export (a TensorRT engine's), which
// records only the tactic TensorRT chose for each layer.
bool isTrtexecExport(const inspector::EngineReport& report);

}  // namespace kiln::studio
