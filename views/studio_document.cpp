#include "studio_document.h"

#include <algorithm>

namespace kiln::studio {

QString issueNodeName(const Status& status, const Network* network) {
  const StatusNode* node = status.node();
  if (!node) return {};
  // Node::displayName() of the node the fields describe.
  const std::string display = !node->name.empty() || node->index < 0
                                  ? node->name
                                  : node->opType + "_" + std::to_string(node->index);
  if (display.empty()) return {};
  if (!network) return QString::fromStdString(display);
  bool named = false;
  for (const Node& candidate : network->graph.nodes) {
    if (candidate.displayName() != display) continue;
    if (candidate.index == node->index) return QString::fromStdString(display);
    named = true;
  }
  return named ? QString::fromStdString(display) : QString();
}

StudioDocument::StudioDocument(QObject* parent) : QObject(parent) {}

void StudioDocument::setModel(const QString& path, std::shared_ptr<const Network> network) {
  // Per-layer rules name one model's nodes: another model starts without them (the
  // same path opened again, as after loading a plugin, keeps them).
  const bool dropRules = path != m_modelPath &&
                         (!m_config.layerPrecisions.empty() || !m_config.layerOutputTypes.empty());
  if (dropRules) {
    m_config.layerPrecisions.clear();
    m_config.layerOutputTypes.clear();
  }
  m_modelPath = path;
  m_network = std::move(network);
  m_selectedNodes.clear();
  m_selectedLayer = -1;
  emit modelChanged();
  emit selectionChanged();
  if (dropRules) emit buildConfigChanged();
}

void StudioDocument::setEngine(const QString& path, std::shared_ptr<const Plan> plan,
                               std::shared_ptr<const inspector::EngineReport> report,
                               std::optional<PlanTrust> trust) {
  m_enginePath = path;
  m_plan = std::move(plan);
  m_report = std::move(report);
  m_planTrust = std::move(trust);
  // Nodes of the open model stay selected (a rebuild of it); nodes that came from the
  // previous engine's layers do not, or panels would name what is no longer open.
  if (!m_selectedNodes.isEmpty() && !modelHasNode(m_selectedNodes.front())) m_selectedNodes.clear();
  m_selectedLayer = m_selectedNodes.isEmpty() ? -1 : layerOfNode(m_selectedNodes.front());
  emit engineChanged();
  emit selectionChanged();
}

void StudioDocument::setReport(std::shared_ptr<const inspector::EngineReport> report) {
  m_report = std::move(report);
  if (m_report && m_selectedLayer >= static_cast<int>(m_report->layers.size()))
    m_selectedLayer = -1;
  emit engineChanged();
}

void StudioDocument::setBuildConfig(const BuilderConfig& config) {
  m_config = config;
  emit buildConfigChanged();
}

void StudioDocument::selectNodes(const QStringList& nodeNames) {
  if (nodeNames == m_selectedNodes) return;
  m_selectedNodes = nodeNames;
  m_selectedLayer = nodeNames.isEmpty() ? -1 : layerOfNode(nodeNames.front());
  emit selectionChanged();
}

void StudioDocument::selectLayer(int layerIndex) {
  if (!m_report || layerIndex < 0 || layerIndex >= static_cast<int>(m_report->layers.size()))
    layerIndex = -1;
  if (layerIndex == m_selectedLayer) return;
  m_selectedLayer = layerIndex;
  m_selectedNodes.clear();
  if (layerIndex >= 0)
    for (const auto& node : m_report->layers[layerIndex].sourceNodes)
      m_selectedNodes << QString::fromStdString(node);
  emit selectionChanged();
}

int StudioDocument::layerOfNode(const QString& nodeName) const {
  if (!m_report) return -1;
  const std::string name = nodeName.toStdString();
  for (size_t i = 0; i < m_report->layers.size(); ++i) {
    const auto& nodes = m_report->layers[i].sourceNodes;
    if (std::find(nodes.begin(), nodes.end(), name) != nodes.end()) return static_cast<int>(i);
  }
  return -1;
}

bool StudioDocument::modelHasNode(const QString& nodeName) const {
  if (!m_network) return false;
  const std::string name = nodeName.toStdString();
  const auto& nodes = m_network->graph.nodes;
  return std::any_of(nodes.begin(), nodes.end(),
                     [&](const Node& node) { return node.displayName() == name; });
}

void StudioDocument::addIssue(const Issue& issue) {
  m_issues.push_back(issue);
  emit issuesChanged();
}

void StudioDocument::clearIssues(const QString& source) {
  auto from = std::remove_if(m_issues.begin(), m_issues.end(),
                             [&](const Issue& i) { return i.source == source; });
  if (from == m_issues.end()) return;
  m_issues.erase(from, m_issues.end());
  emit issuesChanged();
}

}  // namespace kiln::studio
