#include "advisor_panel.h"

#include <algorithm>

#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QTabWidget>
#include <QTableWidget>
#include <QHBoxLayout>
#include <QVBoxLayout>

#include "memory_timeline_chart.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

constexpr int kMessageWidth = 420;
constexpr size_t kLayersInTooltip = 24;

QStyle::StandardPixmap severityIcon(inspector::AdviceSeverity severity) {
  switch (severity) {
    case inspector::AdviceSeverity::kInfo:
      return QStyle::SP_MessageBoxInformation;
    case inspector::AdviceSeverity::kWarning:
      return QStyle::SP_MessageBoxWarning;
    case inspector::AdviceSeverity::kError:
      return QStyle::SP_MessageBoxCritical;
  }
  return QStyle::SP_MessageBoxWarning;
}

QColor severityColor(inspector::AdviceSeverity severity) {
  switch (severity) {
    case inspector::AdviceSeverity::kInfo:
      return QColor(70, 110, 170);
    case inspector::AdviceSeverity::kWarning:
      return QColor(190, 110, 0);
    case inspector::AdviceSeverity::kError:
      return QColor(200, 40, 40);
  }
  return QColor(190, 110, 0);
}

// Long messages and fixes are elided in the cell; the tooltip has the full text.
QTableWidgetItem* cell(const QString& text, const QString& tooltip = QString()) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
  item->setToolTip(tooltip.isEmpty() ? text : tooltip);
  return item;
}

QString layerList(const std::vector<std::string>& layers) {
  QStringList names;
  for (size_t i = 0; i < layers.size() && i < kLayersInTooltip; ++i)
    names << QString::fromStdString(layers[i]);
  if (layers.size() > kLayersInTooltip)
    names << QObject::tr("and %1 more").arg(layers.size() - kLayersInTooltip);
  return names.join('\n');
}

}  // namespace

int reportLayerNamed(const inspector::EngineReport& report, const std::string& name) {
  for (size_t i = 0; i < report.layers.size(); ++i)
    if (report.layers[i].name == name) return static_cast<int>(i);
  return -1;
}

AdvisorPanel::AdvisorPanel(StudioDocument* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_tabs(new QTabWidget(this)),
      m_summary(new QLabel(this)),
      m_table(new QTableWidget(0, kColumnCount, this)),
      m_apply(new QPushButton(tr("Apply fix"), this)),
      m_memory(new MemoryTimelineChart(document, this)) {
  m_apply->setObjectName("advisorApplyFix");
  m_apply->setToolTip(
      tr("Add the finding's precision rules to the Build dock (then Build again); "
         "for Kiln engines of an open model, where the fix is a rule"));
  m_summary->setObjectName("advisorSummary");
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_table->setObjectName("advisorFindings");
  m_table->setHorizontalHeaderLabels(
      {tr("Severity"), tr("Rule"), tr("Finding"), tr("Cost (ms)"), tr("Layers"), tr("Fix")});
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setWordWrap(false);
  m_table->setTextElideMode(Qt::ElideRight);
  QHeaderView* header = m_table->horizontalHeader();
  for (int column : {kSeverity, kRule, kCost, kLayers})
    header->setSectionResizeMode(column, QHeaderView::ResizeToContents);
  header->setSectionResizeMode(kMessage, QHeaderView::Interactive);
  header->setStretchLastSection(true);
  m_table->setColumnWidth(kMessage, kMessageWidth);

  auto* findingsPage = new QWidget(m_tabs);
  auto* findingsLayout = new QVBoxLayout(findingsPage);
  findingsLayout->setContentsMargins(2, 2, 2, 2);
  findingsLayout->addWidget(m_summary);
  findingsLayout->addWidget(m_table, 1);
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(m_apply);
  findingsLayout->addLayout(buttons);
  m_tabs->addTab(findingsPage, tr("Findings"));
  m_tabs->addTab(m_memory, tr("Memory"));
  m_tabs->setDocumentMode(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_tabs);

  // A click on the row already selected selects its layer again (the user may have
  // selected another layer elsewhere since); the keyboard moves the current cell.
  connect(m_table, &QTableWidget::cellClicked, this,
          [this](int row, int) { activateFinding(row); });
  connect(m_table, &QTableWidget::currentCellChanged, this,
          [this](int row, int, int, int) { activateFinding(row); });
  connect(m_apply, &QPushButton::clicked, this, [this] { applyFix(m_table->currentRow()); });
  // engineChanged also comes when a profile adds times to the report.
  connect(m_document, &StudioDocument::engineChanged, this, &AdvisorPanel::refresh);
  refresh();
}

QString AdvisorPanel::summaryText() const {
  return m_summary->text();
}

void AdvisorPanel::refresh() {
  const auto report = m_document->report();
  m_findings = report ? inspector::adviseEngine(*report) : std::vector<inspector::Finding>{};
  {
    const QSignalBlocker blocker(m_table);  // refilling is not the user picking a finding
    m_table->setRowCount(static_cast<int>(m_findings.size()));
    for (size_t i = 0; i < m_findings.size(); ++i) fillRow(static_cast<int>(i), m_findings[i]);
  }
  m_apply->setEnabled(canApply(m_table->currentRow()));
  m_memory->showPlan(m_document->plan(),
                     report ? tr("A trtexec export records no memory plan: the memory timeline "
                                 "needs a Kiln plan (build the model, or open a .kiln file).")
                            : tr("No engine: build a model or open a .kiln plan to see its "
                                 "activation memory per layer."));
  if (!report) {
    m_summary->setText(
        tr("No engine: build a model, or open a .kiln plan or a trtexec export, "
           "to see the advisor's findings."));
    return;
  }
  if (m_findings.empty()) {
    m_summary->setText(tr("No findings: no rule fires on this engine."));
    return;
  }
  int counts[3] = {0, 0, 0};
  bool timed = false;
  for (const inspector::Finding& f : m_findings) {
    ++counts[static_cast<int>(f.severity)];
    timed = timed || f.costMs >= 0;
  }
  QStringList parts;
  if (counts[2]) parts << tr("%1 error(s)").arg(counts[2]);
  if (counts[1]) parts << tr("%1 warning(s)").arg(counts[1]);
  if (counts[0]) parts << tr("%1 info").arg(counts[0]);
  QString text = tr("%1 finding(s) (%2), most costly first. Click a finding to select its first "
                    "layer; hover over a cell for its full text.")
                     .arg(m_findings.size())
                     .arg(parts.join(", "));
  if (!timed) text += " " + tr("No layer times: profile the engine to see what each one costs.");
  m_summary->setText(text);
}

void AdvisorPanel::fillRow(int row, const inspector::Finding& f) {
  auto* severity = cell(inspector::adviceSeverityName(f.severity));
  severity->setIcon(style()->standardIcon(severityIcon(f.severity)));
  severity->setForeground(severityColor(f.severity));
  m_table->setItem(row, kSeverity, severity);
  m_table->setItem(row, kRule, cell(QString::fromStdString(f.rule)));
  m_table->setItem(row, kMessage, cell(QString::fromStdString(f.message)));
  auto* cost = cell(f.costMs >= 0 ? QString::number(f.costMs, 'f', 4) : QString(),
                    f.costMs >= 0 ? tr("the layers' summed time") : tr("untimed"));
  cost->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  m_table->setItem(row, kCost, cost);
  auto* layers = cell(QString::number(f.layers.size()), layerList(f.layers));
  layers->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  m_table->setItem(row, kLayers, layers);
  m_table->setItem(row, kFix, cell(QString::fromStdString(f.fix)));
}

// The document selects one layer at a time (StudioDocument::selectLayer): a finding
// selects its first layer, which the layer table scrolls to and the engine graph
// centres on; the layers column's tooltip lists the others.
bool AdvisorPanel::canApply(int row) const {
  return row >= 0 && row < static_cast<int>(m_findings.size()) &&
         !m_findings[row].applyLayerPrecisions.empty() && m_document->network() &&
         !m_document->modelPath().isEmpty();
}

bool AdvisorPanel::applyFix(int row) {
  if (!canApply(row)) return false;
  BuilderConfig config = m_document->buildConfig();
  QStringList added;
  for (const auto& [node, precision] : m_findings[row].applyLayerPrecisions) {
    auto rules = parseLayerPrecisionSpec(node + ":" + precision);
    if (!rules.isOk() || rules->size() != 1) continue;
    auto same = std::find_if(config.layerPrecisions.begin(), config.layerPrecisions.end(),
                             [&](const LayerPrecisionRule& r) { return r.pattern == node; });
    if (same != config.layerPrecisions.end())
      *same = rules->front();
    else
      config.layerPrecisions.push_back(rules->front());
    added << QString::fromStdString(node + ":" + precision);
  }
  if (added.isEmpty()) return false;
  QString summary = tr("Applied %1: rule %2").arg(QString::fromStdString(m_findings[row].rule),
                                                  added.join(", "));
  if (config.precisionConstraints == ConstraintMode::kNone) {
    config.precisionConstraints = ConstraintMode::kPrefer;
    summary += tr("; constraints none -> prefer (rules apply)");
  }
  m_document->setBuildConfig(config);
  summary += tr(". Build again to see its effect.");
  m_summary->setText(summary);
  emit fixApplied(summary);
  return true;
}

void AdvisorPanel::activateFinding(int row) {
  m_apply->setEnabled(canApply(row));
  const auto report = m_document->report();
  if (!report || row < 0 || row >= static_cast<int>(m_findings.size())) return;
  for (const std::string& name : m_findings[row].layers) {
    const int layer = reportLayerNamed(*report, name);
    if (layer >= 0) return m_document->selectLayer(layer);
  }
}

}  // namespace kiln::studio
