#include "properties_panel.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLocale>
#include <QTreeWidget>
#include <algorithm>
#include <functional>
#include <QVBoxLayout>

#include "plan_trust.h"

namespace kiln::studio {

namespace {

using inspector::ReportLayer;
using inspector::ReportTensor;

// Weights up to this many elements get their statistics on the GUI thread (well under
// a millisecond); bigger ones on the JobRunner.
constexpr int64_t kInlineStatsElements = 1 << 18;

// Every name and string from the model or plan goes through shownText.
QString q(const std::string& text) {
  return shownText(text);
}
QString number(double value) {
  return QString::number(value, 'g', 6);
}
QString bytesText(int64_t bytes) {
  return QLocale().formattedDataSize(bytes);
}

QString statsText(const WeightStats& s) {
  if (!s.numeric) return QStringLiteral("%1 strings").arg(QLocale().toString(qint64(s.count)));
  QString text = QStringLiteral("count %1, min %2, max %3, mean %4, std %5")
                     .arg(QLocale().toString(qint64(s.count)), number(s.min), number(s.max),
                          number(s.mean), number(s.stddev));
  if (s.nonFinite > 0) text += QStringLiteral(", %1 not finite").arg(s.nonFinite);
  return text;
}

}  // namespace

PropertiesPanel::PropertiesPanel(StudioDocument* document, JobRunner* jobs, QWidget* parent)
    : QWidget(parent), m_document(document), m_jobs(jobs), m_tree(new QTreeWidget(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_tree);
  m_tree->setColumnCount(2);
  m_tree->setHeaderLabels({tr("Property"), tr("Value")});
  m_tree->setAlternatingRowColors(true);
  m_tree->setUniformRowHeights(true);
  m_tree->header()->setSectionResizeMode(0, QHeaderView::Interactive);
  m_tree->header()->setStretchLastSection(true);
  m_tree->setTextElideMode(Qt::ElideMiddle);
  connect(document, &StudioDocument::modelChanged, this, [this] { modelChanged(); });
  connect(document, &StudioDocument::engineChanged, this, [this] { refresh(); });
  connect(document, &StudioDocument::selectionChanged, this, [this] { refresh(); });
  modelChanged();
}

void PropertiesPanel::modelChanged() {
  ++m_generation;
  m_network = m_document->network();
  m_nodeIndex.clear();
  m_values.reset();
  m_stats.clear();
  m_statsPending.clear();
  if (m_network && m_jobs) {
    const auto& nodes = m_network->graph.nodes;
    for (size_t i = 0; i < nodes.size(); ++i) m_nodeIndex.insert(q(nodes[i].displayName()), int(i));
    // Shape inference once per model, off the GUI thread; declared shapes show meanwhile.
    auto table = std::make_shared<ValueTable>();
    std::shared_ptr<const Network> network = m_network;
    QPointer<PropertiesPanel> self(this);
    const int generation = m_generation;
    m_jobs->start(
        tr("Shapes for properties"),
        [network, table](JobContext&) { *table = modelValueTable(*network); },
        [self, table, generation](const JobContext& context) {
          if (!self || context.cancelled() || generation != self->m_generation) return;
          self->m_values = table;
          self->refresh();
        });
  }
  refresh();
}

void PropertiesPanel::refresh() {
  m_tree->clear();
  const QStringList nodes = m_document->selectedNodes();
  std::shared_ptr<const inspector::EngineReport> report = m_document->report();
  if (!nodes.isEmpty() && m_network && m_nodeIndex.contains(nodes.front())) {
    showNode(m_network->graph.nodes[m_nodeIndex.value(nodes.front())], nodes.size());
    const int layer = m_document->layerOfNode(nodes.front());
    if (report && layer >= 0) showLayer(report->layers[layer], tr("Engine layer"));
  } else if (report && m_document->selectedLayer() >= 0 &&
             m_document->selectedLayer() < static_cast<int>(report->layers.size())) {
    const ReportLayer& layer = report->layers[m_document->selectedLayer()];
    showLayer(layer, tr("Layer"));
    showLayerTensors(tr("Inputs"), layer.inputs);
    showLayerTensors(tr("Outputs"), layer.outputs);
  } else if (nodes.isEmpty() && m_document->plan() && m_document->planTrust()) {
    showPlan();
  } else {
    section(nodes.isEmpty() ? tr("Nothing selected")
                            : tr("Not in the model: %1").arg(nodes.front()));
  }
  m_tree->expandAll();
  fitColumns();
}

void PropertiesPanel::fitColumns() {
  const QFontMetrics fm(m_tree->font());
  int widest = 0;
  std::function<void(QTreeWidgetItem*, int)> measure = [&](QTreeWidgetItem* item, int depth) {
    widest =
        std::max(widest, fm.horizontalAdvance(item->text(0)) + (depth + 1) * m_tree->indentation());
    for (int i = 0; i < item->childCount(); ++i) measure(item->child(i), depth + 1);
  };
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) measure(m_tree->topLevelItem(i), 0);
  widest += 16;  // the cell's margins
  // Short keys ("Name" two levels deep) stay whole even in a narrow dock: at least 120 px.
  const int cap = std::max(120, static_cast<int>(m_tree->viewport()->width() * 0.45));
  m_tree->setColumnWidth(0, std::min(widest, cap));
}

void PropertiesPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitColumns();
}

void PropertiesPanel::showNode(const Node& node, int selectedCount) {
  QTreeWidgetItem* s = section(tr("Node"));
  row(s, tr("Name"), q(node.displayName()));
  row(s, tr("Op type"), q(node.opType));
  row(s, tr("Domain"), node.domain.empty() ? QStringLiteral("ai.onnx") : q(node.domain));
  row(s, tr("Opset"), QString::number(node.opset));
  row(s, tr("Index"), QString::number(node.index));
  if (const int subgraphs = subgraphCount(node))
    row(s, tr("Subgraphs"), QString::number(subgraphs));
  if (selectedCount > 1)
    row(s, tr("Selection"), tr("%1 nodes selected; showing the first").arg(selectedCount));
  if (!node.attributes.empty()) {
    QTreeWidgetItem* a = section(tr("Attributes"));
    for (const auto& [name, attribute] : node.attributes)
      row(a, q(name), attributeText(name, attribute));
  }
  showValues(tr("Inputs"), node.inputs);
  showValues(tr("Outputs"), node.outputs);
  showWeights(node);
}

InferredValue PropertiesPanel::lookupValue(const std::string& name) const {
  if (m_values) {
    auto it = m_values->find(name);
    return it != m_values->end() ? it->second : InferredValue{};
  }
  InferredValue value;
  const Graph& graph = m_network->graph;
  auto weight = graph.initializers.find(name);
  if (weight != graph.initializers.end()) {
    value.type = weight->second.type();
    value.hasShape = true;
    value.shape.assign(weight->second.shape().begin(), weight->second.shape().end());
  } else if (const ValueInfo* info = graph.findValueInfo(name)) {
    value.type = info->type;
    value.hasShape = info->hasShape;
    value.shape = info->shape;
  }
  return value;
}

void PropertiesPanel::showValues(const QString& title, const std::vector<std::string>& names) {
  if (names.empty()) return;
  QTreeWidgetItem* s = section(title);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) {
      row(s, QStringLiteral("#%1").arg(i), tr("(omitted)"));
      continue;
    }
    QString text = valueText(lookupValue(names[i]));
    if (m_network->graph.initializers.count(names[i])) text += tr(", weight");
    row(s, q(names[i]), text);
  }
}

void PropertiesPanel::showWeights(const Node& node) {
  QTreeWidgetItem* s = nullptr;
  for (const std::string& input : node.inputs) {
    auto weight = m_network->graph.initializers.find(input);
    if (weight == m_network->graph.initializers.end()) continue;
    if (!s) s = section(tr("Weights"));
    const Tensor& tensor = weight->second;
    QTreeWidgetItem* w = row(s, q(input), tensorSummary(tensor));
    auto stats = m_stats.find(input);
    if (stats == m_stats.end() && tensor.numel() <= kInlineStatsElements)
      stats = m_stats.emplace(input, computeWeightStats(tensor)).first;
    if (stats == m_stats.end()) {
      startStats(input, tensor);
      row(w, tr("Statistics"), tr("computing…"));
      continue;
    }
    const WeightStats& st = stats->second;
    row(w, tr("count"), QLocale().toString(qint64(st.count)));
    if (!st.numeric) continue;
    row(w, tr("min"), number(st.min));
    row(w, tr("max"), number(st.max));
    row(w, tr("mean"), number(st.mean));
    row(w, tr("std"), number(st.stddev));
    if (st.nonFinite > 0) row(w, tr("not finite"), QString::number(st.nonFinite));
    w->setToolTip(1, statsText(st));
  }
}

void PropertiesPanel::startStats(const std::string& name, const Tensor& tensor) {
  if (!m_jobs || !m_statsPending.insert(name).second) return;
  auto stats = std::make_shared<WeightStats>();
  QPointer<PropertiesPanel> self(this);
  const int generation = m_generation;
  m_jobs->start(
      tr("Statistics of %1").arg(q(name)),
      [tensor, stats](JobContext&) { *stats = computeWeightStats(tensor); },
      [self, name, stats, generation](const JobContext& context) {
        if (!self || generation != self->m_generation) return;
        self->m_statsPending.erase(name);
        if (context.cancelled()) return;
        self->m_stats[name] = *stats;
        self->refresh();
      });
}

void PropertiesPanel::showLayer(const ReportLayer& layer, const QString& title) {
  QTreeWidgetItem* s = section(title);
  auto add = [&](const QString& key, const std::string& value) {
    if (!value.empty()) row(s, key, q(value));
  };
  add(tr("Name"), layer.name);
  add(tr("Type"), layer.layerType);
  add(tr("ONNX op"), layer.opType);
  add(tr("Precision"), layer.precision);
  add(tr("Precision reason"), layer.precisionReason);
  add(tr("Tactic"), layer.tactic);
  add(tr("Tactic value"), layer.tacticValue);
  add(tr("Tactic source"), layer.tacticSource);
  if (layer.milliseconds >= 0) row(s, tr("Time (ms)"), number(layer.milliseconds));
  if (layer.averageMs >= 0) row(s, tr("Average (ms)"), number(layer.averageMs));
  // What the profiled engine ran, beside the build's choice above (tactics as data: a
  // plan's runtime takes back the choices its build recorded).
  add(tr("Ran as (profile)"), layer.profiledImplementation);
  if (layer.percentage >= 0)
    row(s, tr("Share of time"), QStringLiteral("%1 %").arg(layer.percentage, 0, 'f', 2));
  if (layer.workspaceBytes >= 0) row(s, tr("Workspace"), bytesText(layer.workspaceBytes));
  row(s, tr("Output bytes"), bytesText(layer.outputBytes));
  add(tr("Fusion"), layer.fusion);
  QStringList sources;
  for (const std::string& node : layer.sourceNodes) sources << q(node);
  if (!sources.isEmpty()) row(s, tr("Source nodes"), sources.join(QStringLiteral(", ")));
  if (!layer.candidates.empty()) {
    int rejected = 0;
    for (const auto& c : layer.candidates) rejected += c.rejected.empty() ? 0 : 1;
    row(s, tr("Tactic candidates"),
        tr("%1 (%2 rejected)").arg(layer.candidates.size()).arg(rejected));
  }
  if (!layer.parameters.empty()) {
    QTreeWidgetItem* p = row(s, tr("Parameters"), QString::number(layer.parameters.size()));
    for (const auto& [key, value] : layer.parameters) row(p, q(key), q(value));
  }
}

void PropertiesPanel::showLayerTensors(const QString& title,
                                       const std::vector<ReportTensor>& tensors) {
  if (tensors.empty()) return;
  QTreeWidgetItem* s = section(title);
  for (const ReportTensor& t : tensors) {
    QStringList dims;
    for (int64_t d : t.dimensions) dims << (d < 0 ? QStringLiteral("?") : QString::number(d));
    QString text = dims.isEmpty() ? tr("scalar") : dims.join(QStringLiteral(" x "));
    if (!t.formatDatatype.empty()) text += QStringLiteral(", ") + q(t.formatDatatype);
    row(s, q(t.name), text);
  }
}

// A plan opened from a file, while nothing is selected: what it is and whether its
// signature was verified (kiln/plan_signature.h).
void PropertiesPanel::showPlan() {
  const Plan& plan = *m_document->plan();
  const PlanTrust& trust = *m_document->planTrust();
  QTreeWidgetItem* s = section(tr("Plan"));
  row(s, tr("File"), QFileInfo(m_document->enginePath()).fileName())
      ->setToolTip(1, m_document->enginePath());
  row(s, tr("Backend"), q(plan.identity.backend));
  row(s, tr("Device"), q(plan.identity.deviceName));
  const size_t kernels = plan.generatedKernels.size();
  row(s, tr("GPU code"), kernels ? tr("%1 generated kernel(s)").arg(kernels) : tr("none"));
  // Short values: the dock is narrow (the status bar has the sentence).
  row(s, tr("Signature"), trust.isSigned ? tr("signed") : planTrustText(trust));
  if (trust.isSigned)
    row(s, tr("Verified against"), QFileInfo(QString::fromStdString(trust.keyFile)).fileName())
        ->setToolTip(1, QString::fromStdString(trust.keyFile));
}

QTreeWidgetItem* PropertiesPanel::section(const QString& title) {
  auto* item = new QTreeWidgetItem(m_tree, {title});
  QFont font = item->font(0);
  font.setBold(true);
  item->setFont(0, font);
  item->setFirstColumnSpanned(false);
  return item;
}

QTreeWidgetItem* PropertiesPanel::row(QTreeWidgetItem* parent, const QString& key,
                                      const QString& value) {
  auto* item = new QTreeWidgetItem(parent, {key, value});
  item->setToolTip(0, key);
  item->setToolTip(1, value);
  return item;
}

QStringList PropertiesPanel::sections() const {
  QStringList titles;
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) titles << m_tree->topLevelItem(i)->text(0);
  return titles;
}

QString PropertiesPanel::text(const QStringList& path) const {
  QTreeWidgetItem* item = nullptr;
  for (int level = 0; level < path.size(); ++level) {
    const int count = item ? item->childCount() : m_tree->topLevelItemCount();
    QTreeWidgetItem* next = nullptr;
    for (int i = 0; i < count && !next; ++i) {
      QTreeWidgetItem* child = item ? item->child(i) : m_tree->topLevelItem(i);
      if (child->text(0) == path[level]) next = child;
    }
    if (!next) return QString();
    item = next;
  }
  return item ? item->text(1) : QString();
}

}  // namespace kiln::studio
