#include "model_graph_view.h"

#include <QToolBar>
#include <QVBoxLayout>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kiln/plugin_registry.h"
#include "node_properties.h"
#include "op_category.h"

namespace kiln::studio {

namespace {

const QString kInputPrefix = QStringLiteral("input:");
const QString kOutputPrefix = QStringLiteral("output:");

bool isBox(const Node& node) {
  return !(node.opType == "Constant" && node.domain.empty());
}

// Accumulates boxes and edges; remembers which box produces each tensor.
class ModelGraphBuilder {
 public:
  explicit ModelGraphBuilder(ValueTable values) : m_values(std::move(values)) {}

  void addNode(const Node& node) {
    const QString name = QString::fromStdString(node.displayName());
    const QString op = QString::fromStdString(node.opType);
    NodeLook look;
    look.fill = opCategoryColor(opCategory(node.opType));
    look.toolTip =
        name + QLatin1Char('\n') + op +
        (node.domain.empty() ? QString()
                             : QStringLiteral(" (%1)").arg(QString::fromStdString(node.domain)));
    look.searchText = name + QLatin1Char('\n') + op;
    look.plugin = isPluginNode(node);
    if (look.plugin) {
      auto resolved = resolvePlugin(node);
      look.toolTip +=
          QStringLiteral("\nplugin layer: ") +
          (resolved.isOk()
               ? QString::fromStdString(
                     resolved->info.displayName() +
                     (resolved->info.library.empty() ? "" : " from " + resolved->info.library))
               : QString::fromStdString(resolved.status().message()));
      look.searchText += QStringLiteral("\nplugin");
    }
    const int box = addBox(name, {op, GraphStyle::elide(name, 1)}, look);
    for (const std::string& output : node.outputs)
      if (!output.empty()) m_producer.emplace(output, box);
  }

  void addInput(const ValueInfo& input) {
    const int box = addTerminal(kInputPrefix, input.name);
    m_producer.emplace(input.name, box);
  }

  // Edges into `node`'s box: one per distinct tensor it reads (subgraph reads included).
  void connectNode(const Node& node, int box) {
    std::vector<std::string> inputs = node.inputs;
    for (const std::string& implicit : node.implicitInputs()) inputs.push_back(implicit);
    std::unordered_set<std::string> seen;
    for (const std::string& tensor : inputs)
      if (!tensor.empty() && seen.insert(tensor).second) connect(tensor, box);
  }

  void addOutput(const ValueInfo& output) {
    const int box = addTerminal(kOutputPrefix, output.name);
    connect(output.name, box);
  }

  GraphInput take() { return std::move(m_input); }

 private:
  int addBox(const QString& id, const QStringList& lines, const NodeLook& look) {
    return m_input.addBox(id, lines, look);
  }

  int addTerminal(const QString& prefix, const std::string& tensor) {
    const QString name = QString::fromStdString(tensor);
    auto it = m_values.find(tensor);
    const QString detail = it != m_values.end() ? valueText(it->second) : QStringLiteral("unknown");
    NodeLook look;
    look.fill = terminalColor();
    look.terminal = true;
    look.toolTip = QStringLiteral("%1 %2\n%3").arg(prefix.chopped(1), name, detail);
    look.searchText = name;
    return addBox(prefix + name, {GraphStyle::elide(name, 0), detail}, look);
  }

  void connect(const std::string& tensor, int to) {
    auto producer = m_producer.find(tensor);
    if (producer == m_producer.end() || producer->second == to) return;
    LayoutEdge edge;
    edge.from = producer->second;
    edge.to = to;
    // A tensor read by several boxes is labelled once: the labels would sit on top of
    // each other just below the producer.
    auto value = m_values.find(tensor);
    if (value != m_values.end() && value->second.hasShape && m_labelled.insert(tensor).second) {
      edge.label = shortShapeText(value->second.shape, QStringLiteral("×"));
      edge.toolTip = QString::fromStdString(tensor) + QLatin1Char('\n') + valueText(value->second);
      const QSizeF size = GraphStyle::edgeLabelSize(edge.label);
      edge.labelWidth = size.width();
      edge.labelHeight = size.height();
    }
    m_input.graph.edges.push_back(edge);
  }

  ValueTable m_values;
  GraphInput m_input;
  std::unordered_map<std::string, int> m_producer;
  std::unordered_set<std::string> m_labelled;
};

}  // namespace

Result<GraphInput> buildModelGraph(const Network& network, const JobContext& context) {
  const Graph& graph = network.graph;
  ModelGraphBuilder builder(modelValueTable(network));
  if (context.cancelled()) return Status(StatusCode::kCancelled, "cancelled");
  for (const ValueInfo& input : graph.inputs) builder.addInput(input);
  std::vector<std::pair<const Node*, int>> boxes;
  int box = static_cast<int>(graph.inputs.size());
  for (const Node& node : graph.nodes) {
    if (!isBox(node)) continue;
    builder.addNode(node);
    boxes.push_back({&node, box++});
  }
  for (const auto& [node, index] : boxes) builder.connectNode(*node, index);
  for (const ValueInfo& output : graph.outputs) builder.addOutput(output);
  GraphInput input = builder.take();
  // Name scopes ("/encoder/layer.6/attention/MatMul") group the nodes into blocks.
  input.scopes.resize(input.graph.nodes.size());
  for (const auto& [node, index] : boxes)
    input.scopes[index].path = nameScope(QString::fromStdString(node->name));
  return input;
}

ModelGraphView::ModelGraphView(StudioDocument* document, JobRunner* jobs, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_view(new GraphView(jobs, this)),
      m_toolBar(new QToolBar(tr("Model graph"), this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(m_toolBar);  // until the main window places it
  layout->addWidget(m_view);
  m_view->addToolBarItems(m_toolBar);
  connect(document, &StudioDocument::modelChanged, this, [this] { reload(); });
  connect(document, &StudioDocument::selectionChanged, this, [this] { showSelection(); });
  connect(m_view, &GraphView::graphShown, this, [this] { showSelection(); });
  connect(m_view, &GraphView::selectionActivated, this,
          [this](const QList<int>& indices) { onUserSelection(indices); });
  connect(m_view, &GraphView::graphFailed, this, [this](const QString& message) {
    m_document->addIssue({IssueSeverity::kError, QStringLiteral("layout"),
                          tr("Model graph: %1").arg(message), QString()});
  });
  reload();
}

void ModelGraphView::reload() {
  std::shared_ptr<const Network> network = m_document->network();
  updateLegend();
  if (!network) {
    m_view->clearGraph(tr("No model open"));
    return;
  }
  int boxes = static_cast<int>(network->graph.inputs.size() + network->graph.outputs.size());
  for (const Node& node : network->graph.nodes) boxes += isBox(node) ? 1 : 0;
  m_view->showGraph(tr("Model graph layout"), boxes,
                    [network](JobContext& context) { return buildModelGraph(*network, context); });
}

void ModelGraphView::updateLegend() {
  std::set<OpCategory> present;
  bool plugins = false;
  if (std::shared_ptr<const Network> network = m_document->network())
    for (const Node& node : network->graph.nodes) {
      if (isBox(node)) present.insert(opCategory(node.opType));
      plugins = plugins || isPluginNode(node);
    }
  std::vector<LegendEntry> entries;
  for (OpCategory category : present)
    entries.push_back({opCategoryName(category), opCategoryColor(category)});
  if (!entries.empty()) entries.push_back({tr("Input / output"), terminalColor()});
  if (plugins) entries.push_back({tr("Plugin layer (dashed border)"), GraphStyle::pluginMarker()});
  m_view->setLegend(tr("Op category"), entries);
}

void ModelGraphView::showSelection() {
  m_view->highlight(m_document->selectedNodes(), true);
}

void ModelGraphView::onUserSelection(const QList<int>& indices) {
  const SceneGraph* graph = m_view->graphScene()->graph();
  if (!graph) return;
  QStringList names;
  for (int i : indices)
    if (!graph->looks[i].terminal) names << m_view->memberIds(i);  // a block: its nodes
  // Only input/output boxes picked: they are not nodes, so the document keeps its selection.
  if (names.isEmpty() && !indices.isEmpty()) return;
  m_document->selectNodes(names);
}

QByteArray ModelGraphView::toSvg() const {
  if (m_view->graphScene()->nodeCount() == 0) return QByteArray();
  return m_view->toSvg(tr("Model graph: %1").arg(m_document->modelPath()));
}

}  // namespace kiln::studio
