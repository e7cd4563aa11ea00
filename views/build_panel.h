// BuildPanel: the dock where a build is configured and started. It edits the
// document's BuilderConfig (precision flags, constraint mode, per-layer rules,
// optimization profiles, tactic sources, optimization level, workspace, profiling
// verbosity) plus what is not in the config (backend, timing-cache file, plan
// file), shows the equivalent `kiln build` command line live, and runs the build
// through the JobRunner with per-phase progress and Cancel. Results go to the
// document: the engine on success, Issues (source "build") for warnings and errors.
// Its status line speaks of the document's last build only: another model or engine
// clears it, and a build that ends after another model opened is discarded. A label
// warns when per-layer rules exist while Constraints is "none" (they do nothing).
#pragma once

#include <QString>
#include <QPointer>
#include <QWidget>
#include <map>
#include <memory>

#include "kiln/builder_config.h"
#include "shape_proposal.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace kiln {
struct Plan;
}

namespace kiln::studio {

class ConstraintsTable;
class JobRunner;
class ProfilesEditor;
class ShapesDialog;
class StudioDocument;
class TargetList;
struct BuildOutcome;
struct BuildRequest;

class BuildPanel : public QWidget {
  Q_OBJECT
 public:
  BuildPanel(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);

  // Sets the compute-precision rule of one ONNX node (or "*"), as the table's combo
  // does; the document's config follows.
  void setLayerPrecision(const QString& node, DataType precision);
  void setConstraintMode(ConstraintMode mode);
  // Turns one graph pass (kiln build --list-passes) on or off for the next build, as
  // its box in the Passes list does; false for an unknown pass.
  bool setPassEnabled(const QString& pass, bool enabled);
  // The `kiln build` line of the current settings.
  QString commandLine() const;
  // Starts the build in the background; buildFinished() reports the end. Refused
  // (buildFinished(false, why)) without a model, with invalid profiles, or while a
  // build runs. The first build of a model with dynamic inputs whose shapes nobody
  // confirmed opens the Shapes dialog first (shapes_dialog.h, window-modal, not
  // blocking): its Build starts the build with the shapes as edited, its Cancel
  // reports buildFinished(false, "build cancelled: ...").
  void startBuild();
  // Takes the proposed shapes and values as confirmed (scripted runs: AutoRun, tests),
  // noting them as info issues; the next startBuild() opens no dialog.
  void acceptProposedShapes();
  // The values the next build freezes value inputs to (input_values.h), as confirmed
  // in the Shapes dialog or by acceptProposedShapes(); empty until then. A model with
  // value inputs opens the dialog on its first build, like one with dynamic dims.
  const std::map<std::string, Tensor>& inputValues() const { return m_inputValues; }
  // The Shapes dialog while it is open, else null.
  ShapesDialog* shapesDialog() const;
  void cancelBuild();
  bool isBuilding() const { return m_buildJob >= 0; }
  // With a remote target chosen in `targets` (null: always local), startBuild runs this
  // panel's `kiln build` line on it through `kiln --remote` (build_panel_remote.cpp):
  // the same progress bar, status-bar job and Cancel, and the fetched plan opens as a
  // local build's would. A failure is one line naming the host.
  void setTargets(TargetList* targets);

  ConstraintsTable* constraintsTable() const { return m_constraints; }
  // The status line under the Build button (progress, outcome, refusals).
  QString statusText() const;
  // Whether the "rules are ignored" warning shows (rules, and Constraints "none").
  bool rulesIgnoredWarningShown() const;
  ProfilesEditor* profilesEditor() const { return m_profiles; }

 signals:
  void buildFinished(bool ok, QString message);

 private:
  QWidget* createPrecisionPage();
  QWidget* createOptionsPage();
  QWidget* createRunBox();
  void probeCuda();
  void onModelChanged();
  void onEngineChanged();
  void updateRulesWarning();
  // Widgets -> document config, and back when another part of the studio changed it.
  void applyToConfig();
  void loadFromConfig();
  void updateCommandLine();
  void updateBuildEnabled();
  BuildRequest makeRequest() const;
  void finishBuild(const BuildRequest& request, const BuildOutcome& outcome, bool cancelled);
  void refuse(const QString& why);
  void askForShapes();
  void startRemoteBuild();
  QString browseFile(const QString& title, const QString& filter, bool save);

  StudioDocument* m_document;
  JobRunner* m_jobs;
  QCheckBox *m_tf32, *m_fp16, *m_bf16, *m_int8, *m_fp8;
  QComboBox* m_mode;
  ConstraintsTable* m_constraints;
  ProfilesEditor* m_profiles;
  QCheckBox* m_sources[4];
  QListWidget* m_passes;  // one checkable row per pass; unchecked = --disable-pass
  QSpinBox *m_level, *m_workspace;
  QComboBox *m_verbosity, *m_backend;
  QLineEdit *m_cachePath, *m_planPath, *m_command;
  QPushButton *m_build, *m_cancel;
  QProgressBar* m_progress;
  QLabel* m_status;
  QLabel* m_rulesIgnored;
  std::shared_ptr<const Plan> m_builtPlan;  // the document's engine while it is ours
  int m_buildJob = -1;
  TargetList* m_targets = nullptr;
  ShapeProposal m_proposal;        // for the open model's dynamic inputs
  bool m_shapesConfirmed = false;  // by an edit, the Shapes dialog or a script
  bool m_valuesConfirmed = false;  // by the Shapes dialog or a script
  std::map<std::string, Tensor> m_inputValues;
  QPointer<ShapesDialog> m_shapesDialog;
  bool m_loading = false;   // widgets are being set from the config
  bool m_applying = false;  // the config is being set from the widgets
};

}  // namespace kiln::studio
