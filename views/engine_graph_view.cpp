#include "engine_graph_view.h"

#include <QComboBox>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <map>
#include <set>

#include "op_category.h"

namespace kiln::studio {

namespace {

using inspector::EngineReport;
using inspector::ReportLayer;
using inspector::ReportTensor;

// Kiln plans say "Plugin"; TensorRT engines (trtexec exports) say PluginV2/PluginV3.
bool isPluginLayer(const ReportLayer& layer) {
  return layer.layerType.rfind("Plugin", 0) == 0;
}

const QString kBindingPrefix = QStringLiteral("binding:");
constexpr int kTimeLegendSteps = 5;

double maxPercentage(const EngineReport& report) {
  double most = 0;
  for (const ReportLayer& layer : report.layers) most = std::max(most, layer.percentage);
  return most;
}

QString dimsText(const std::vector<int64_t>& dims) {
  if (dims.empty()) return QString();
  QStringList parts;
  for (int64_t d : dims) parts << (d < 0 ? QStringLiteral("?") : QString::number(d));
  return parts.join(QStringLiteral("×"));
}

class EngineGraphBuilder {
 public:
  EngineGraphBuilder(const EngineReport& report, EngineColouring colouring)
      : m_report(report), m_colouring(colouring), m_maxShare(maxPercentage(report)) {}

  GraphInput build() {
    for (size_t i = 0; i < m_report.layers.size(); ++i) addLayer(static_cast<int>(i));
    m_bindings.insert(m_report.bindings.begin(), m_report.bindings.end());
    for (size_t i = 0; i < m_report.layers.size(); ++i) connectInputs(static_cast<int>(i));
    for (const std::string& binding : m_report.bindings) {
      auto producer = m_producer.find(binding);
      if (producer != m_producer.end()) {
        addEdge(producer->second, bindingBox(binding), binding, producerDims(binding));
      } else if (!m_bindingBoxes.count(binding)) {
        bindingBox(binding);  // a binding no layer touches still shows
      }
    }
    return std::move(m_input);
  }

 private:
  int addBox(const QString& id, const QStringList& lines, const NodeLook& look) {
    return m_input.addBox(id, lines, look);
  }

  void addLayer(int index) {
    const ReportLayer& layer = m_report.layers[index];
    const QString name = QString::fromStdString(layer.name);
    const QString type = QString::fromStdString(layer.layerType);
    const QString precision = normalizePrecision(QString::fromStdString(layer.precision));
    NodeLook look;
    look.fill = layerColour(layer, m_colouring, m_maxShare);
    look.toolTip = name + QLatin1Char('\n') + type + QStringLiteral(", ") +
                   QString::fromStdString(layer.precision);
    look.searchText =
        name + QLatin1Char('\n') + type + QLatin1Char('\n') + QString::fromStdString(layer.opType);
    look.plugin = isPluginLayer(layer);
    if (look.plugin) {
      auto plugin = layer.parameters.find("plugin");
      look.toolTip +=
          QStringLiteral("\nplugin layer: %1\n%2")
              .arg(plugin != layer.parameters.end() ? QString::fromStdString(plugin->second)
                                                    : QString::fromStdString(layer.opType),
                   layer.milliseconds >= 0
                       ? QStringLiteral("%1 ms").arg(layer.milliseconds, 0, 'f', 4)
                       : QStringLiteral("untimed"));
    }
    QString second = type;
    if (!layer.precision.empty())
      second += QStringLiteral(" · ") +
                (precision.isEmpty() ? QString::fromStdString(layer.precision) : precision);
    addBox(QString::number(index), {GraphStyle::elide(name, 0), GraphStyle::elide(second, 1)},
           look);
    m_input.scopes.resize(m_input.graph.nodes.size());
    m_input.scopes.back() = layerScope(layer, precision);
    for (const ReportTensor& output : layer.outputs) {
      m_producer.emplace(output.name, index);
      m_dims.emplace(output.name, output.dimensions);
    }
  }

  // A layer's scope: the one its ONNX nodes share ("A + B + C" when no provenance).
  static NodeScope layerScope(const ReportLayer& layer, const QString& precision) {
    std::vector<QString> names;
    for (const std::string& node : layer.sourceNodes) names.push_back(QString::fromStdString(node));
    if (names.empty())
      for (const QString& part : QString::fromStdString(layer.name).split(QStringLiteral(" + ")))
        names.push_back(part);
    NodeScope scope;
    scope.path = commonScope(names);
    scope.layer = true;
    scope.milliseconds = layer.milliseconds;
    scope.percentage = layer.percentage;
    scope.precision = precision.isEmpty() ? QString::fromStdString(layer.precision) : precision;
    return scope;
  }

  int bindingBox(const std::string& name) {
    auto it = m_bindingBoxes.find(name);
    if (it != m_bindingBoxes.end()) return it->second;
    const QString text = QString::fromStdString(name);
    NodeLook look;
    look.fill = terminalColor();
    look.terminal = true;
    look.toolTip = QStringLiteral("binding %1").arg(text);
    look.searchText = text;
    const int box = addBox(kBindingPrefix + text, {GraphStyle::elide(text, 0)}, look);
    m_input.scopes.resize(m_input.graph.nodes.size());
    m_bindingBoxes.emplace(name, box);
    return box;
  }

  std::vector<int64_t> producerDims(const std::string& tensor) const {
    auto it = m_dims.find(tensor);
    return it != m_dims.end() ? it->second : std::vector<int64_t>{};
  }

  void connectInputs(int index) {
    std::set<std::string> seen;
    for (const ReportTensor& input : m_report.layers[index].inputs) {
      if (!seen.insert(input.name).second) continue;
      auto producer = m_producer.find(input.name);
      if (producer != m_producer.end() && producer->second != index)
        addEdge(producer->second, index, input.name, input.dimensions);
      else if (producer == m_producer.end() && m_bindings.count(input.name))
        addEdge(bindingBox(input.name), index, input.name, input.dimensions);
    }
  }

  // A tensor read by several layers is labelled once (the labels would overlap).
  void addEdge(int from, int to, const std::string& tensor, const std::vector<int64_t>& dims) {
    LayoutEdge edge;
    edge.from = from;
    edge.to = to;
    if (m_labelled.insert(tensor).second) edge.label = dimsText(dims);
    if (!edge.label.isEmpty()) {
      const QSizeF size = GraphStyle::edgeLabelSize(edge.label);
      edge.labelWidth = size.width();
      edge.labelHeight = size.height();
    }
    m_input.graph.edges.push_back(edge);
  }

  const EngineReport& m_report;
  EngineColouring m_colouring;
  double m_maxShare;
  GraphInput m_input;
  std::map<std::string, int> m_producer, m_bindingBoxes;
  std::map<std::string, std::vector<int64_t>> m_dims;
  std::set<std::string> m_bindings, m_labelled;
};

}  // namespace

QColor layerColour(const ReportLayer& layer, EngineColouring colouring, double maxPercentage) {
  if (colouring == EngineColouring::kPrecision)
    return precisionColor(normalizePrecision(QString::fromStdString(layer.precision)));
  if (layer.percentage < 0 || maxPercentage <= 0) return untimedColor();
  return timeShareColor(layer.percentage / maxPercentage);
}

QColor blockColour(const std::vector<const ReportLayer*>& layers, EngineColouring colouring,
                   double maxPercentage) {
  if (colouring == EngineColouring::kPrecision) {
    std::map<QString, int> mix;
    for (const ReportLayer* layer : layers)
      ++mix[normalizePrecision(QString::fromStdString(layer->precision))];
    auto most = std::max_element(mix.begin(), mix.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    return most == mix.end() ? untimedColor() : precisionColor(most->first).lighter(112);
  }
  double share = -1;
  for (const ReportLayer* layer : layers)
    if (layer->percentage >= 0) share = std::max(0.0, share) + layer->percentage;
  if (share < 0 || maxPercentage <= 0) return untimedColor();
  return timeShareColor(std::min(1.0, share / maxPercentage));
}

Result<GraphInput> buildEngineGraph(const EngineReport& report, EngineColouring colouring,
                                    const JobContext& context) {
  if (context.cancelled()) return Status(StatusCode::kCancelled, "cancelled");
  return EngineGraphBuilder(report, colouring).build();
}

EngineGraphView::EngineGraphView(StudioDocument* document, JobRunner* jobs, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_view(new GraphView(jobs, this)),
      m_toolBar(new QToolBar(tr("Engine graph"), this)),
      m_colourBox(new QComboBox(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(m_toolBar);  // until the main window places it
  layout->addWidget(m_view);
  m_view->addToolBarItems(m_toolBar);
  m_toolBar->addSeparator();
  m_colourBox->addItem(tr("Colour by precision"));
  m_colourBox->addItem(tr("Colour by share of time"));
  m_toolBar->addWidget(m_colourBox);
  connect(m_colourBox, &QComboBox::currentIndexChanged, this, [this](int index) {
    setColouring(index == 1 ? EngineColouring::kTimeShare : EngineColouring::kPrecision);
  });
  connect(document, &StudioDocument::engineChanged, this, [this] { reload(); });
  connect(document, &StudioDocument::selectionChanged, this, [this] { showSelection(); });
  connect(m_view, &GraphView::graphShown, this, [this] {
    m_shown = m_pending;
    recolour();  // the colouring may have changed while the layout ran
    showSelection();
  });
  connect(m_view, &GraphView::selectionActivated, this,
          [this](const QList<int>& indices) { onUserSelection(indices); });
  connect(m_view, &GraphView::graphFailed, this, [this](const QString& message) {
    m_document->addIssue({IssueSeverity::kError, QStringLiteral("layout"),
                          tr("Engine graph: %1").arg(message), QString()});
  });
  reload();
}

void EngineGraphView::reload() {
  m_pending = m_document->report();
  updateLegend();
  if (!m_pending || m_pending->layers.empty()) {
    m_shown.reset();
    m_view->clearGraph(m_pending ? tr("The engine has no layers") : tr("No engine loaded"));
    return;
  }
  const int boxes = static_cast<int>(m_pending->layers.size() + m_pending->bindings.size());
  std::shared_ptr<const EngineReport> report = m_pending;
  const EngineColouring colouring = m_colouring;
  m_view->showGraph(tr("Engine graph layout"), boxes, [report, colouring](JobContext& context) {
    return buildEngineGraph(*report, colouring, context);
  });
}

void EngineGraphView::setColouring(EngineColouring colouring) {
  if (colouring == m_colouring) return;
  m_colouring = colouring;
  const QSignalBlocker block(m_colourBox);
  m_colourBox->setCurrentIndex(colouring == EngineColouring::kTimeShare ? 1 : 0);
  recolour();
  updateLegend();
}

void EngineGraphView::recolour() {
  GraphScene* scene = m_view->graphScene();
  if (!m_shown || !scene->graph()) return;
  const double most = maxPercentage(*m_shown);
  const int layers = static_cast<int>(m_shown->layers.size());
  for (int i = 0; i < scene->nodeCount(); ++i) {
    if (scene->graph()->looks[i].terminal) continue;
    std::vector<const ReportLayer*> members;
    for (const QString& id : m_view->memberIds(i)) {
      const int layer = id.toInt();
      if (layer >= 0 && layer < layers) members.push_back(&m_shown->layers[layer]);
    }
    if (scene->nodeItem(i)->id().startsWith(kGroupIdPrefix))
      scene->setNodeFill(i, blockColour(members, m_colouring, most));
    else if (!members.empty())
      scene->setNodeFill(i, layerColour(*members.front(), m_colouring, most));
  }
}

void EngineGraphView::updateLegend() {
  std::vector<LegendEntry> entries;
  std::shared_ptr<const EngineReport> report = m_pending;
  if (!report || report->layers.empty()) {
    m_view->setLegend(QString(), entries);
    return;
  }
  bool unknown = false;
  if (m_colouring == EngineColouring::kPrecision) {
    std::set<QString> present;
    for (const ReportLayer& layer : report->layers) {
      const QString p = normalizePrecision(QString::fromStdString(layer.precision));
      if (p.isEmpty())
        unknown = true;
      else
        present.insert(p);
    }
    for (const QString& p : knownPrecisions())
      if (present.count(p)) entries.push_back({p, precisionColor(p)});
    if (unknown) entries.push_back({tr("unknown"), untimedColor()});
    m_view->setLegend(tr("Precision"), entries);
    return;
  }
  const double most = maxPercentage(*report);
  for (const ReportLayer& layer : report->layers) unknown |= layer.percentage < 0;
  if (most > 0)
    for (int step = 0; step < kTimeLegendSteps; ++step) {
      const double f = static_cast<double>(step) / (kTimeLegendSteps - 1);
      entries.push_back({QStringLiteral("%1 %").arg(f * most, 0, 'f', 1), timeShareColor(f)});
    }
  if (unknown || most <= 0) entries.push_back({tr("untimed"), untimedColor()});
  if (std::any_of(report->layers.begin(), report->layers.end(), isPluginLayer))
    entries.push_back({tr("Plugin layer (dashed border)"), GraphStyle::pluginMarker()});
  m_view->setLegend(tr("Share of time"), entries);
}

void EngineGraphView::showSelection() {
  const int layer = m_document->selectedLayer();
  m_view->highlight(layer >= 0 ? QStringList{QString::number(layer)} : QStringList{}, true);
}

void EngineGraphView::onUserSelection(const QList<int>& indices) {
  const SceneGraph* graph = m_view->graphScene()->graph();
  if (!graph) return;
  for (int i : indices)
    if (!graph->looks[i].terminal) {  // a block selects its first layer
      const QStringList ids = m_view->memberIds(i);
      if (!ids.isEmpty()) m_document->selectLayer(ids.front().toInt());
      return;
    }
  if (indices.isEmpty()) m_document->selectLayer(-1);
}

QByteArray EngineGraphView::toSvg() const {
  if (m_view->graphScene()->nodeCount() == 0) return QByteArray();
  return m_view->toSvg(tr("Engine graph: %1").arg(m_document->enginePath()));
}

}  // namespace kiln::studio
