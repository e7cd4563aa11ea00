// LayerTableModel: the layers of an EngineReport as a table (one row per layer, in
// execution order, so a source row is the report's layer index; with each layer's
// roofline figures: GFLOP, FLOPs per byte and % of the roof at the engine's device's
// vendor peaks), and
// LayerFilterProxy: numeric sorting for the numeric columns and a text filter over
// name, type, precision, tactic, source and source nodes.
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <memory>

#include "engine_report.h"
#include "roofline.h"

namespace kiln::studio {

class LayerTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kIndex,
    kName,
    kPrecision,
    kTime,  // the numbers first: long layer types and tactic names must not push them
    kPercent,  // off screen (at 1366 x 768 the table is ~610 px wide)
    kType,
    kTactic,
    kSource,
    kWorkspace,
    kOutputBytes,
    kGflops,     // roofline (inspector/roofline.h): work, intensity, share of the roof
    kIntensity,  // FLOPs per byte moved
    kRoof,       // % of the roofline at the device's vendor peaks; empty without them
    kSourceNodes,
    kColumnCount
  };
  // The role sorting reads: a double for the numeric columns (-1 when unknown), the
  // display text otherwise.
  static constexpr int kSortRole = Qt::UserRole + 1;

  explicit LayerTableModel(QObject* parent = nullptr);

  void setReport(std::shared_ptr<const inspector::EngineReport> report);
  const inspector::EngineReport* report() const { return m_report.get(); }
  static bool isNumeric(int column);

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QString displayText(const inspector::ReportLayer& layer, int row, int column) const;
  double number(const inspector::ReportLayer& layer, int row, int column) const;
  std::shared_ptr<const inspector::EngineReport> m_report;
  std::vector<inspector::LayerRoofline> m_roofs;  // one per layer, with m_report
  QString m_peaksName;                            // the device peaks used, "" without
};

class LayerFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit LayerFilterProxy(QObject* parent = nullptr);
  // Case-insensitive substring; "" shows every row.
  void setFilterText(const QString& text);
  // Constant layers (inspector::isConstantLayer) cost nothing per run: hidden unless shown.
  void setShowConstants(bool show);
  bool showConstants() const { return m_showConstants; }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  QString m_text;
  bool m_showConstants = false;
};

// "1.5 KiB", "3.2 MiB": bytes for people.
QString formatBytes(int64_t bytes);

}  // namespace kiln::studio
