#include "tactics_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "kiln/data_type.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

// Reports spell precisions "FP16", "fp16" or "float16": compare as data types.
bool samePrecision(const std::string& a, const std::string& b) {
  const QString la = QString::fromStdString(a).toLower(), lb = QString::fromStdString(b).toLower();
  DataType ta, tb;
  if (parseDataType(la.toStdString(), &ta) && parseDataType(lb.toStdString(), &tb)) return ta == tb;
  return la == lb;
}

bool isTimed(const inspector::ReportCandidate& c) {
  return c.rejected.empty() && c.milliseconds >= 0;
}

QTableWidgetItem* item(const QString& text) {
  auto* cell = new QTableWidgetItem(text);
  cell->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
  return cell;
}

}  // namespace

std::vector<int> candidateOrder(const std::vector<inspector::ReportCandidate>& candidates) {
  std::vector<int> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto group = [&](int i) {
    const auto& c = candidates[i];
    return !c.rejected.empty() ? 2 : c.milliseconds < 0 ? 1 : 0;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (group(a) != group(b)) return group(a) < group(b);
    return group(a) == 0 && candidates[a].milliseconds < candidates[b].milliseconds;
  });
  return order;
}

int winnerOf(const inspector::ReportLayer& layer) {
  int byName = -1;
  for (size_t i = 0; i < layer.candidates.size(); ++i) {
    const auto& c = layer.candidates[i];
    if (c.tactic != layer.tactic || !c.rejected.empty()) continue;
    if (!layer.choice.empty() && c.choice != layer.choice) continue;
    if (samePrecision(c.precision, layer.precision)) return static_cast<int>(i);
    if (byName < 0) byName = static_cast<int>(i);
  }
  return byName;
}

TacticsPanel::TacticsPanel(StudioDocument* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_header(new QLabel(this)),
      m_table(new QTableWidget(0, kColumnCount, this)) {
  m_header->setWordWrap(true);
  m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_table->setHorizontalHeaderLabels({QString(), tr("Tactic"), tr("Source"), tr("Precision"),
                                      tr("Time (ms)"), tr("Cached"), tr("Rejected because"),
                                      tr("Choice (replayed)"), tr("Detail")});
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->horizontalHeader()->setStretchLastSection(true);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_header);
  layout->addWidget(m_table, 1);
  connect(m_document, &StudioDocument::selectionChanged, this, &TacticsPanel::refresh);
  connect(m_document, &StudioDocument::engineChanged, this, &TacticsPanel::refresh);
  refresh();
}

QString TacticsPanel::header() const {
  return m_header->text();
}

void TacticsPanel::refresh() {
  m_table->setRowCount(0);
  m_winnerRow = -1;
  const auto report = m_document->report();
  const int index = m_document->selectedLayer();
  if (!report || index < 0 || index >= static_cast<int>(report->layers.size())) {
    m_header->setText(report ? tr("Select a layer to see its tactics.")
                             : tr("No engine: build or open one to see its tactics."));
    return;
  }
  showLayer(report->layers[index], isTrtexecExport(*report));
}

bool isTrtexecExport(const inspector::EngineReport& report) {
  return report.origin == "trtexec export" || report.backend == "tensorrt";
}

void TacticsPanel::showLayer(const inspector::ReportLayer& layer, bool trtexecExport) {
  const auto& candidates = layer.candidates;
  const int winner = winnerOf(layer);
  const std::vector<int> order = candidateOrder(candidates);
  m_table->setRowCount(static_cast<int>(order.size()));
  int runnerUp = -1;
  for (int row = 0; row < static_cast<int>(order.size()); ++row) {
    const int i = order[row];
    const inspector::ReportCandidate& c = candidates[i];
    if (i == winner) m_winnerRow = row;
    if (i != winner && runnerUp < 0 && isTimed(c)) runnerUp = i;
    m_table->setItem(row, kWinner, item(i == winner ? QStringLiteral("★") : QString()));
    m_table->setItem(row, kTactic, item(QString::fromStdString(c.tactic)));
    m_table->setItem(row, kSource, item(QString::fromStdString(c.source)));
    m_table->setItem(row, kPrecision, item(QString::fromStdString(c.precision)));
    m_table->setItem(
        row, kTime, item(c.milliseconds < 0 ? QString() : QString::number(c.milliseconds, 'f', 4)));
    m_table->setItem(row, kFromCache, item(c.fromCache ? tr("yes") : QString()));
    m_table->setItem(row, kRejected, item(QString::fromStdString(c.rejected)));
    m_table->setItem(row, kChoice, item(QString::fromStdString(c.choice)));
    m_table->setItem(row, kDetail, item(QString::fromStdString(c.detail)));
    if (i == winner) {
      for (int col = 0; col < kColumnCount; ++col) {
        QFont font = m_table->item(row, col)->font();
        font.setBold(true);
        m_table->item(row, col)->setFont(font);
      }
    }
  }
  m_table->resizeColumnsToContents();

  const QString name = QString::fromStdString(layer.name);
  if (candidates.empty() && trtexecExport) {
    // trtexec writes what TensorRT chose, never the candidates it timed.
    const std::string& chosen = layer.tactic.empty() ? layer.tacticValue : layer.tactic;
    m_header->setText(
        chosen.empty() ? tr("%1: no tactic recorded; trtexec exports carry only the chosen tactic, "
                            "not the candidates TensorRT timed")
                             .arg(name)
                       : tr("%1: tactic %2; trtexec exports carry only the chosen tactic, not the "
                            "candidates TensorRT timed")
                             .arg(name, QString::fromStdString(chosen)));
    return;
  }
  if (candidates.empty()) {
    m_header->setText(tr("%1: no candidates recorded (the plan keeps them only at detailed "
                         "profiling verbosity)")
                          .arg(name));
    return;
  }
  const QString count =
      candidates.size() == 1 ? tr("1 candidate") : tr("%1 candidates").arg(candidates.size());
  QString text = tr("%1: %2, winner %3").arg(name, count, QString::fromStdString(layer.tactic));
  if (winner >= 0 && runnerUp >= 0 && isTimed(candidates[winner]) &&
      candidates[winner].milliseconds > 0) {
    const double ratio = candidates[runnerUp].milliseconds / candidates[winner].milliseconds;
    text += ratio >= 1 ? tr(", %1× faster than the runner-up (%2)")
                             .arg(ratio, 0, 'f', 2)
                             .arg(QString::fromStdString(candidates[runnerUp].tactic))
                       : tr(", %1× slower than the runner-up (%2): %3")
                             .arg(1 / ratio, 0, 'f', 2)
                             .arg(QString::fromStdString(candidates[runnerUp].tactic),
                                  QString::fromStdString(layer.precisionReason));
  } else if (runnerUp < 0) {
    text += tr(", no timed runner-up");
  }
  if (winner >= 0 && !candidates[winner].choice.empty())
    text += tr("; inside it: %1 (an engine made from the plan runs this without timing)")
                .arg(QString::fromStdString(candidates[winner].choice));
  m_header->setText(text);
}

}  // namespace kiln::studio
