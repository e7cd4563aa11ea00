#include "layer_table_model.h"

#include <map>

namespace kiln::studio {
namespace {

QString joined(const std::vector<std::string>& items) {
  QStringList out;
  for (const std::string& item : items) out << QString::fromStdString(item);
  return out.join(", ");
}

QString q(const std::string& text) {
  return QString::fromStdString(text);
}

}  // namespace

QString formatBytes(int64_t bytes) {
  if (bytes < 0) return QString();
  if (bytes < 1024) return QStringLiteral("%1 B").arg(bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return QStringLiteral("%1 %2").arg(value, 0, 'f', value < 10 ? 2 : 1).arg(units[unit]);
}

LayerTableModel::LayerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayerTableModel::setReport(std::shared_ptr<const inspector::EngineReport> report) {
  beginResetModel();
  m_report = std::move(report);
  m_roofs.clear();
  m_peaksName.clear();
  if (m_report) {
    const std::optional<inspector::DevicePeaks> peaks = inspector::peaksForDevice(m_report->device);
    if (peaks) m_peaksName = QString::fromStdString(peaks->name);
    m_roofs = inspector::layerRooflines(*m_report, peaks ? &*peaks : nullptr);
  }
  endResetModel();
}

bool LayerTableModel::isNumeric(int column) {
  return column == kIndex || column == kTime || column == kPercent || column == kWorkspace ||
         column == kOutputBytes || column == kGflops || column == kIntensity || column == kRoof;
}

int LayerTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_report ? 0 : static_cast<int>(m_report->layers.size());
}

int LayerTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

double LayerTableModel::number(const inspector::ReportLayer& layer, int row, int column) const {
  switch (column) {
    case kIndex:
      return row;
    case kTime:
      return layer.milliseconds;
    case kPercent:
      return layer.percentage;
    case kWorkspace:
      return static_cast<double>(layer.workspaceBytes);
    case kOutputBytes:
      return static_cast<double>(layer.outputBytes);
    case kGflops:
      return row < static_cast<int>(m_roofs.size()) ? m_roofs[row].flops : -1;
    case kIntensity:
      return row < static_cast<int>(m_roofs.size()) ? m_roofs[row].intensity : -1;
    case kRoof:
      return row < static_cast<int>(m_roofs.size()) ? m_roofs[row].percentOfRoof : -1;
  }
  return -1;
}

QString LayerTableModel::displayText(const inspector::ReportLayer& layer, int row,
                                     int column) const {
  switch (column) {
    case kIndex:
      return QString::number(row);
    case kName:
      return q(layer.name);
    case kType:
      return q(layer.layerType);
    case kPrecision:
      return q(layer.precision);
    case kTactic:
      return q(layer.tactic);
    case kSource:
      return q(layer.tacticSource);
    case kTime:
      return layer.milliseconds < 0 ? QString() : QString::number(layer.milliseconds, 'f', 4);
    case kPercent:
      return layer.percentage < 0 ? QString() : QString::number(layer.percentage, 'f', 1);
    case kWorkspace:
      return formatBytes(layer.workspaceBytes);
    case kOutputBytes:
      return formatBytes(layer.outputBytes);
    case kGflops: {
      const double flops = number(layer, row, column);
      return flops < 0 ? QString() : QString::number(flops / 1e9, 'f', 4);
    }
    case kIntensity: {
      const double intensity = number(layer, row, column);
      return intensity < 0 ? QString() : QString::number(intensity, 'f', 1);
    }
    case kRoof: {
      const double percent = number(layer, row, column);
      return percent < 0 ? QString() : QString::number(percent, 'f', 1);
    }
    case kSourceNodes:
      return joined(layer.sourceNodes);
  }
  return QString();
}

QVariant LayerTableModel::data(const QModelIndex& index, int role) const {
  if (!m_report || !index.isValid() || index.row() >= rowCount()) return {};
  const inspector::ReportLayer& layer = m_report->layers[index.row()];
  switch (role) {
    case Qt::DisplayRole:
      return displayText(layer, index.row(), index.column());
    case kSortRole:
      if (isNumeric(index.column())) return number(layer, index.row(), index.column());
      return displayText(layer, index.row(), index.column());
    case Qt::TextAlignmentRole:
      if (isNumeric(index.column())) return int(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    case Qt::ToolTipRole:
      if (index.column() == kPrecision && !layer.precisionReason.empty())
        return q(layer.precisionReason);
      if (index.column() == kName && !layer.fusion.empty())
        return tr("fused by %1").arg(q(layer.fusion));
      if (index.column() == kTactic && !layer.tacticValue.empty()) return q(layer.tacticValue);
      if ((index.column() == kGflops || index.column() == kIntensity) &&
          index.row() < static_cast<int>(m_roofs.size()) && !m_roofs[index.row()].unknown.empty())
        return q(m_roofs[index.row()].unknown);
      if (index.column() == kRoof)
        return m_peaksName.isEmpty()
                   ? tr("no vendor peaks for the device '%1' (inspector/roofline.h)")
                         .arg(q(m_report->device))
                   : tr("achieved over the roof at %1's vendor peaks").arg(m_peaksName);
      return {};
  }
  return {};
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const std::map<int, const char*> kHeaders = {
      {kIndex, "#"},          {kName, "Name"},          {kPrecision, "Precision"},
      {kTime, "Time (ms)"},   {kPercent, "%"},          {kType, "Type"},
      {kTactic, "Tactic"},    {kSource, "Source"},      {kWorkspace, "Workspace"},
      {kOutputBytes, "Output"}, {kGflops, "GFLOP"},     {kIntensity, "FLOP/B"},
      {kRoof, "% roof"},      {kSourceNodes, "Source nodes"}};
  auto header = kHeaders.find(section);
  return header != kHeaders.end() ? tr(header->second) : QVariant();
}

LayerFilterProxy::LayerFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(LayerTableModel::kSortRole);
}

void LayerFilterProxy::setFilterText(const QString& text) {
  m_text = text.trimmed();
  invalidateFilter();
}

void LayerFilterProxy::setShowConstants(bool show) {
  m_showConstants = show;
  invalidateFilter();
}

bool LayerFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  const auto* layers = static_cast<const LayerTableModel*>(sourceModel());
  const inspector::EngineReport* report = layers ? layers->report() : nullptr;
  if (!m_showConstants && report && sourceRow < static_cast<int>(report->layers.size()) &&
      inspector::isConstantLayer(report->layers[sourceRow]))
    return false;
  if (m_text.isEmpty()) return true;
  for (int column :
       {LayerTableModel::kName, LayerTableModel::kType, LayerTableModel::kPrecision,
        LayerTableModel::kTactic, LayerTableModel::kSource, LayerTableModel::kSourceNodes}) {
    const QString text = sourceModel()->index(sourceRow, column, sourceParent).data().toString();
    if (text.contains(m_text, Qt::CaseInsensitive)) return true;
  }
  return false;
}

}  // namespace kiln::studio
