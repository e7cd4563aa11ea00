// MainWindow: kiln-studio's window. Views (model graph, engine graph, layer table,
// charts) are tabs in the centre, registered in one block; panels (build, properties,
// tactics, profile, issues, plugins, advisor) are docks. Opens .onnx models, .kiln plans and
// trtexec exports (menu, command line, drag and drop); remembers recent files, window state, the
// last build configuration and the trusted plan keys. Slow work goes through the JobRunner.
#pragma once

#include <QMainWindow>
#include <QStringList>
#include <memory>
#include <vector>

#include "html_report.h"
#include "job_runner.h"
#include "studio_document.h"
#include "view.h"

class QComboBox;
class QTabWidget;
class QLabel;
class QMenu;

namespace kiln::studio {

class IssuesDock;
class JobsWidget;
class TargetList;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  StudioDocument* document() { return &m_document; }
  JobRunner* jobs() { return &m_jobs; }

  // Opens a file by its kind: .onnx model, .kiln plan, trtexec graph JSON (with the
  // profile JSON beside it when one is found). Runs in the background; failures go
  // to the Issues dock. `profilePath` overrides the profile lookup for trtexec files.
  void openFile(const QString& path, const QString& profilePath = QString());
  // The view registered under `id` ("graph", "engine", "layers", "charts").
  View* view(const QString& id) const;
  void showView(const QString& id);
  QWidget* panel(const QString& id) const;  // dock contents: "build", "properties", ...

  // Asked, on the GUI thread, before the ONNX model a plan records is opened: true
  // opens it. `modelPath` is shown to the user as is (already escaped). The default
  // asks with a dialog; null never opens it (scripts, tests).
  using SourceModelPrompt = std::function<bool(const QString& planPath, const QString& modelPath)>;
  void setSourceModelPrompt(SourceModelPrompt prompt);

  // Trusted plan keys (Tools > Plan Trust..., docs/security.md). The window applies the
  // saved list when it is made, before any plan opens; a saved key file that no longer
  // loads becomes an error issue and the others stay in force. setTrustedKeys replaces
  // the process-wide policy (requirePlanSignatures) and, with `save`, the saved list;
  // on error nothing changes. kiln-studio --trust calls it without saving.
  Status setTrustedKeys(const QStringList& keyFiles, bool save);
  QStringList trustedKeys() const { return m_trustedKeys; }
  // The Plan Trust dialog; once accepted its list is applied and saved, or the error
  // is shown and the policy in force kept.
  void editPlanTrust();
  // Where Build, Profile and Calibration run: Local (the default) or a saved SSH
  // target (remote_targets.h), chosen in the Target toolbar; Tools > Remote Targets...
  // edits the list (editTargets). main_window_targets.cpp.
  TargetList* targets() const { return m_targets; }
  void editTargets();

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  void registerViews();
  std::vector<ReportFigure> reportFigures();
  void createDocks();
  void createMenus();
  // The Target toolbar, Tools > Remote Targets..., Build > New Sweep... / Open Sweep Log...,
  // and the Sweep view's "open this plan" (main_window_targets.cpp).
  void createScaleOut();
  void updateTargetBox();
  void updateRecentMenu();
  void addRecent(const QString& path);
  void restoreSettings();
  void saveBuildSettings() const;
  void restoreBuildSettings();
  void updateTitle();
  void openModel(const QString& path);
  void openPlan(const QString& path);
  void openTrtexec(const QString& graphPath, const QString& profilePath);
  void restoreTrust();
  void updateTrustLabel();
  void offerSourceModel(const QString& planPath, const QString& modelPath);
  bool askToOpenSourceModel(const QString& planPath, const QString& modelPath);

  StudioDocument m_document;
  JobRunner m_jobs;
  SourceModelPrompt m_sourceModelPrompt;
  QTabWidget* m_tabs = nullptr;
  std::vector<View*> m_views;
  std::vector<std::pair<QString, QWidget*>> m_panels;
  QMenu* m_recentMenu = nullptr;
  QMenu* m_viewMenu = nullptr;
  IssuesDock* m_issues = nullptr;
  JobsWidget* m_jobsWidget = nullptr;
  QLabel* m_trustLabel = nullptr;
  TargetList* m_targets = nullptr;
  QComboBox* m_targetBox = nullptr;
  QStringList m_trustedKeys;  // in force
  QStringList m_sessionKeys;  // from --trust, not saved; empty otherwise
};

}  // namespace kiln::studio
