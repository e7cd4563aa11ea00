// StudioDocument: what the studio has open and what the user has selected. One per
// main window; every view reads from it and reports selections to it, so selecting
// an engine layer highlights its ONNX nodes in the graph and the reverse. Results of
// background jobs arrive here as immutable snapshots (shared_ptr<const ...>).
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

#include "engine_report.h"
#include "kiln/builder_config.h"
#include "kiln/graph.h"
#include "kiln/plan.h"
#include "kiln/plan_signature.h"

namespace kiln::studio {

enum class IssueSeverity { kInfo, kWarning, kError };

// One entry of the Issues dock; `nodeName` (may be empty) is the ONNX node to jump to.
struct Issue {
  IssueSeverity severity = IssueSeverity::kError;
  QString source;  // "import", "build", "profile", "export", ...
  QString message;
  QString nodeName;
};

// The node an Issue about `status` jumps to, read from its node fields (never from the
// message): the node's display name, checked against `network` when one is given (the
// node with that name and index, else that name); empty when the status names no node
// or `network` lacks it.
QString issueNodeName(const Status& status, const Network* network = nullptr);

class StudioDocument : public QObject {
  Q_OBJECT
 public:
  explicit StudioDocument(QObject* parent = nullptr);

  // The ONNX model (empty path and null network when none is open). A model at
  // another path drops the per-layer rules of the build configuration and the
  // selection.
  QString modelPath() const { return m_modelPath; }
  std::shared_ptr<const Network> network() const { return m_network; }
  void setModel(const QString& path, std::shared_ptr<const Network> network);

  // The engine shown: a built or loaded plan (may be null for trtexec exports), its
  // report and, for a plan loaded from a file, how it stood with the signature policy
  // (none for a plan built here or a trtexec export).
  QString enginePath() const { return m_enginePath; }
  std::shared_ptr<const Plan> plan() const { return m_plan; }
  std::shared_ptr<const inspector::EngineReport> report() const { return m_report; }
  const std::optional<PlanTrust>& planTrust() const { return m_planTrust; }
  void setEngine(const QString& path, std::shared_ptr<const Plan> plan,
                 std::shared_ptr<const inspector::EngineReport> report,
                 std::optional<PlanTrust> trust = std::nullopt);
  // (setEngine keeps a selection of the open model's nodes and clears any other.)
  // Replaces the report only (a profile run adds measured times).
  void setReport(std::shared_ptr<const inspector::EngineReport> report);

  // The build configuration the Build panel edits and the builder reads.
  const BuilderConfig& buildConfig() const { return m_config; }
  void setBuildConfig(const BuilderConfig& config);

  // Selection. Selecting a layer selects its source nodes; selecting nodes selects
  // the layer that contains the first of them (or none).
  QStringList selectedNodes() const { return m_selectedNodes; }
  int selectedLayer() const { return m_selectedLayer; }
  void selectNodes(const QStringList& nodeNames);
  void selectLayer(int layerIndex);
  // Index of the report layer whose source nodes include `nodeName`; -1 if none.
  int layerOfNode(const QString& nodeName) const;
  // Whether the open model has a node of that (display) name.
  bool modelHasNode(const QString& nodeName) const;

  const std::vector<Issue>& issues() const { return m_issues; }
  void addIssue(const Issue& issue);
  void clearIssues(const QString& source);  // removes the entries of one source

 signals:
  void modelChanged();
  void engineChanged();
  void buildConfigChanged();
  void selectionChanged();
  void issuesChanged();

 private:
  QString m_modelPath, m_enginePath;
  std::shared_ptr<const Network> m_network;
  std::shared_ptr<const Plan> m_plan;
  std::shared_ptr<const inspector::EngineReport> m_report;
  std::optional<PlanTrust> m_planTrust;
  BuilderConfig m_config;
  QStringList m_selectedNodes;
  int m_selectedLayer = -1;
  std::vector<Issue> m_issues;
};

}  // namespace kiln::studio
