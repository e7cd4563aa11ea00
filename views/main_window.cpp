#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QScrollArea>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>

#include "advisor_panel.h"
#include "build_job.h"
#include "build_panel.h"
#include "calibration_view.h"
#include "charts_view.h"
#include "compare_view.h"
#include "engine_graph_view.h"
#include "export_actions.h"
#include "file_loader.h"
#include "issues_dock.h"
#include "jobs_widget.h"
#include "kiln/file_io.h"
#include "layer_table_view.h"
#include "model_graph_view.h"
#include "plan_trust.h"
#include "plan_trust_dialog.h"
#include "plugins_panel.h"
#include "profile_panel.h"
#include "properties_panel.h"
#include "roofline_chart.h"
#include "sweep_view.h"
#include "tactics_panel.h"

namespace kiln::studio {

namespace {
constexpr int kMaxRecent = 10;
constexpr const char* kSettingsOrg = "Kiln";
constexpr const char* kSettingsApp = "kiln-studio";
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setObjectName("KilnStudioMainWindow");
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  m_sourceModelPrompt = [this](const QString& plan, const QString& model) {
    return askToOpenSourceModel(plan, model);
  };
  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  setCentralWidget(m_tabs);
  registerViews();
  createDocks();
  createMenus();
  createScaleOut();
  m_jobsWidget = new JobsWidget(&m_jobs, this);
  m_trustLabel = new QLabel(this);
  m_trustLabel->setObjectName("planTrustLabel");
  statusBar()->addPermanentWidget(m_trustLabel);
  statusBar()->addPermanentWidget(m_jobsWidget);
  statusBar()->showMessage(
      tr("Open an ONNX model, a .kiln plan or a trtexec export (Ctrl+O), "
         "or drop it here."));
  // A job whose work threw: its message in the Issues dock, once (a job's `done`
  // may have reported it already, as import, open and build do).
  connect(&m_jobs, &JobRunner::jobFailed, this,
          [this](int, const QString& title, const QString& message) {
            for (const Issue& issue : m_document.issues())
              if (issue.message.contains(message)) return;
            m_document.addIssue({IssueSeverity::kError, "job", title + ": " + message, {}});
          });
  connect(&m_document, &StudioDocument::modelChanged, this, &MainWindow::updateTitle);
  connect(&m_document, &StudioDocument::engineChanged, this, &MainWindow::updateTitle);
  connect(&m_document, &StudioDocument::engineChanged, this, &MainWindow::updateTrustLabel);
  restoreTrust();
  restoreSettings();
  updateTitle();
}

// Views, docks and the status bar hold the document and the job runner, which are
// members and so die before QWidget deletes its children: stop the jobs first,
// then delete the widgets while what they point to is still alive.
MainWindow::~MainWindow() {
  m_jobs.cancelAllAndWait();
  qDeleteAll(findChildren<QWidget*>(Qt::FindDirectChildrenOnly));
}

// Every central view, in tab order: the one place views are registered.
void MainWindow::registerViews() {
  auto* graph = new ModelGraphView(&m_document, &m_jobs, m_tabs);
  auto* engine = new EngineGraphView(&m_document, &m_jobs, m_tabs);
  auto* layers = new LayerTableView(&m_document, m_tabs);
  auto* charts = new ChartsView(&m_document, m_tabs);
  auto* compare = new CompareView(&m_document, &m_jobs, m_tabs);
  auto* calibration = new CalibrationView(&m_document, &m_jobs, m_tabs);
  auto* roofline = new RooflineChart(&m_document, m_tabs);
  auto* sweep = new SweepView(m_tabs);
  m_views = {graph, engine, layers, charts, roofline, compare, calibration, sweep};
  for (View* view : m_views) {
    QWidget* page = new QWidget(m_tabs);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    if (QToolBar* bar = view->toolBar()) layout->addWidget(bar);
    layout->addWidget(view->widget());
    m_tabs->addTab(page, view->title());
  }
}

// Docks: build configuration on the left, properties on the right, issues, tactic
// candidates, profiling, plugins and the advisor below.
void MainWindow::createDocks() {
  auto addDock = [this](const QString& id, const QString& title, QWidget* content,
                        Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName("dock_" + id);
    // In a scroll area: a dock's content scrolls rather than making the window taller
    // than a 1366 x 768 screen (the Build dock's minimum alone was ~560 px).
    auto* scroll = new QScrollArea(dock);
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    dock->setWidget(scroll);
    addDockWidget(area, dock);
    m_panels.emplace_back(id, content);
    return dock;
  };
  auto* build = new BuildPanel(&m_document, &m_jobs, this);
  addDock("build", tr("Build"), build, Qt::LeftDockWidgetArea);
  addDock("properties", tr("Properties"), new PropertiesPanel(&m_document, &m_jobs, this),
          Qt::RightDockWidgetArea);
  m_issues = new IssuesDock(&m_document, this);
  QDockWidget* issues = addDock("issues", tr("Issues"), m_issues, Qt::BottomDockWidgetArea);
  QDockWidget* tactics = addDock("tactics", tr("Tactics"), new TacticsPanel(&m_document, this),
                                 Qt::BottomDockWidgetArea);
  QDockWidget* profile =
      addDock("profile", tr("Profile"), new ProfilePanel(&m_document, &m_jobs, this),
              Qt::BottomDockWidgetArea);
  auto* plugins = new PluginsPanel(&m_document, this);
  QDockWidget* pluginsDock = addDock("plugins", tr("Plugins"), plugins, Qt::BottomDockWidgetArea);
  QDockWidget* advisor = addDock("advisor", tr("Advisor"), new AdvisorPanel(&m_document, this),
                                 Qt::BottomDockWidgetArea);
  tabifyDockWidget(issues, tactics);
  tabifyDockWidget(tactics, profile);
  tabifyDockWidget(profile, pluginsDock);
  tabifyDockWidget(pluginsDock, advisor);
  // A new library may map nodes of the open model to plugins: open it again.
  connect(plugins, &PluginsPanel::pluginsChanged, this, [this] {
    if (!m_document.modelPath().isEmpty()) openFile(m_document.modelPath());
  });
  issues->raise();
  // The centre gets the room; docks keep a working size (restoreState may override).
  resizeDocks({issues}, {220}, Qt::Vertical);
  resizeDocks({findChild<QDockWidget*>("dock_build"), findChild<QDockWidget*>("dock_properties")},
              {440, 320}, Qt::Horizontal);
  connect(m_issues, &IssuesDock::jumpToNode, this, [this] { showView("graph"); });
  connect(build, &BuildPanel::buildFinished, this, [this](bool ok, const QString& message) {
    statusBar()->showMessage(message, 10000);
    if (ok) showView("layers");
  });
  connect(&m_document, &StudioDocument::issuesChanged, this, [this, issues] {
    if (!m_document.issues().empty() &&
        m_document.issues().back().severity == IssueSeverity::kError)
      issues->raise();
  });
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open..."), this, [this] {
    QSettings settings(kSettingsOrg, kSettingsApp);
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open"), settings.value("lastDir").toString(),
        tr("Models and engines (*.onnx *.kiln *.json);;ONNX models (*.onnx);;Kiln plans (*.kiln);;"
           "trtexec exports (*.json);;All files (*)"));
    if (!path.isEmpty()) openFile(path);
  });
  open->setShortcut(QKeySequence::Open);
  m_recentMenu = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  auto* exports = new ExportActions(&m_document, &m_jobs, this, this);
  exports->setFigureProvider([this] { return reportFigures(); });
  exports->addTo(file);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* build = menuBar()->addMenu(tr("&Build"));
  QAction* buildNow = build->addAction(tr("&Build Engine"), this, [this] {
    if (auto* panel = qobject_cast<BuildPanel*>(this->panel("build"))) panel->startBuild();
  });
  buildNow->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
  QAction* profile = build->addAction(tr("&Profile Engine"), this, [this] {
    if (auto* panel = qobject_cast<ProfilePanel*>(this->panel("profile"))) panel->startProfile();
  });
  profile->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));

  QMenu* pluginsMenu = menuBar()->addMenu(tr("&Plugins"));
  pluginsMenu->addAction(tr("&Load plugin library..."), this, [this] {
    if (auto* panel = qobject_cast<PluginsPanel*>(this->panel("plugins"))) {
      findChild<QDockWidget*>("dock_plugins")->raise();
      panel->chooseAndLoad();
    }
  });

  QMenu* tools = menuBar()->addMenu(tr("&Tools"));
  tools->addAction(tr("Plan &Trust..."), this, [this] { editPlanTrust(); });

  m_viewMenu = menuBar()->addMenu(tr("&View"));
  for (size_t i = 0; i < m_views.size(); ++i) {
    QAction* show = m_viewMenu->addAction(
        m_views[i]->title(), this, [this, i] { m_tabs->setCurrentIndex(static_cast<int>(i)); });
    show->setShortcut(QKeySequence(Qt::CTRL | (Qt::Key_1 + static_cast<int>(i))));
  }
  m_viewMenu->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>())
    m_viewMenu->addAction(dock->toggleViewAction());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Kiln Studio"), this, [this] {
    QMessageBox::about(this, tr("About Kiln Studio"),
                       tr("<b>Kiln Studio</b><p>Build, inspect and profile inference engines from "
                          "ONNX models. Every action has a <code>kiln</code> command-line "
                          "equivalent; the Build panel shows it.</p>"));
  });
  updateRecentMenu();
}

// The HTML report's figures: the engine graph, then every chart.
std::vector<ReportFigure> MainWindow::reportFigures() {
  std::vector<ReportFigure> figures;
  if (auto* engine = dynamic_cast<EngineGraphView*>(view("engine")))
    figures.push_back({tr("Engine graph"), engine->toSvg()});
  if (auto* charts = dynamic_cast<ChartsView*>(view("charts"))) {
    const QStringList captions = {tr("Per-layer latency (top layers)"), tr("Time by layer type"),
                                  tr("Precision breakdown"), tr("Memory per layer")};
    for (int chart = 0; chart < captions.size(); ++chart)
      figures.push_back({captions[chart], charts->chartSvg(chart, QSize(960, 540))});
  }
  return figures;
}

View* MainWindow::view(const QString& id) const {
  for (View* v : m_views)
    if (v->id() == id) return v;
  return nullptr;
}

void MainWindow::showView(const QString& id) {
  for (size_t i = 0; i < m_views.size(); ++i)
    if (m_views[i]->id() == id) m_tabs->setCurrentIndex(static_cast<int>(i));
}

QWidget* MainWindow::panel(const QString& id) const {
  for (const auto& [name, widget] : m_panels)
    if (name == id) return widget;
  return nullptr;
}

void MainWindow::openFile(const QString& path, const QString& profilePath) {
  // A regular file, or an issue saying what it is instead (a FIFO is never opened).
  const Result<int64_t> size = regularFileSize(path.toStdString());
  if (!size.isOk()) {
    const QString message = size.status().code() == StatusCode::kNotFound
                                ? path + ": no such file"
                                : QString::fromStdString(size.status().message());
    m_document.addIssue({IssueSeverity::kError, "open", message, {}});
    return;
  }
  QSettings(kSettingsOrg, kSettingsApp).setValue("lastDir", QFileInfo(path).absolutePath());
  switch (detectFileKind(path)) {
    case FileKind::kOnnx:
      openModel(path);
      break;
    case FileKind::kPlan:
      openPlan(path);
      break;
    case FileKind::kTrtexecGraph:
      openTrtexec(path, profilePath.isEmpty() ? findTrtexecProfile(path) : profilePath);
      break;
    case FileKind::kTrtexecProfile:
      m_document.addIssue({IssueSeverity::kError,
                           "open",
                           path +
                               ": a trtexec profile alone has no layers; open its "
                               "--exportLayerInfo graph JSON (the profile is picked up beside it)",
                           {}});
      break;
    case FileKind::kUnknown:
      m_document.addIssue({IssueSeverity::kError,
                           "open",
                           path + ": not an ONNX model, a .kiln plan or a trtexec export",
                           {}});
      break;
  }
}

void MainWindow::openModel(const QString& path) {
  auto result = std::make_shared<Result<LoadedModel>>(Status::ok());
  const std::string file = path.toStdString();
  m_jobs.start(
      tr("Import %1").arg(QFileInfo(path).fileName()),
      [result, file](JobContext& context) {
        context.progress(-1, QObject::tr("reading and inferring shapes"));
        *result = loadModel(file);
      },
      [this, result, path](const JobContext& context) {
        m_document.clearIssues("import");
        if (context.failed()) *result = internalError(context.failure().toStdString());
        if (!result->isOk()) {
          const QString message = QString::fromStdString(result->status().message());
          m_document.addIssue(
              {IssueSeverity::kError, "import", message, issueNodeName(result->status())});
          statusBar()->showMessage(tr("Could not open %1").arg(path), 10000);
          return;
        }
        m_document.setEngine({}, nullptr, nullptr);
        m_document.setModel(path, result->value().network);
        for (const Status& warning : result->value().warnings) {
          m_document.addIssue({IssueSeverity::kWarning, "import",
                               QString::fromStdString(warning.message()),
                               issueNodeName(warning, result->value().network.get())});
        }
        addRecent(path);
        showView("graph");
        statusBar()->showMessage(
            tr("Opened %1: %2 nodes").arg(path).arg(result->value().network->graph.nodes.size()),
            10000);
      });
}

void MainWindow::openPlan(const QString& path) {
  auto result = std::make_shared<Result<LoadedEngine>>(Status::ok());
  const std::string file = path.toStdString();
  m_jobs.start(
      tr("Open %1").arg(QFileInfo(path).fileName()),
      [result, file](JobContext& context) {
        context.progress(-1, QObject::tr("checking and loading the plan"));
        *result = loadPlan(file);
      },
      [this, result, path](const JobContext& context) {
        m_document.clearIssues("open");
        if (context.failed()) *result = internalError(context.failure().toStdString());
        if (!result->isOk()) {
          m_document.addIssue({IssueSeverity::kError,
                               "open",
                               QString::fromStdString(result->status().message()),
                               {}});
          statusBar()->showMessage(tr("Could not open %1").arg(path), 10000);
          return;
        }
        // The graph shows the network as built; the ONNX model the plan records (whose
        // nodes provenance names) only if the user says so, once asked (offerSourceModel).
        const LoadedEngine& engine = result->value();
        m_document.setModel(path, engine.plan->network);
        m_document.setEngine(path, engine.plan, engine.report, engine.trust);
        // Text from the plan file: the builder recorded its warnings as text.
        for (const std::string& warning : result->value().report->warnings)
          m_document.addIssue({IssueSeverity::kWarning, "build", QString::fromStdString(warning),
                               nodeNamedInText(warning, engine.plan->network.get())});
        addRecent(path);
        showView("layers");
        statusBar()->showMessage(
            tr("Opened %1: %2").arg(QFileInfo(path).fileName(), planTrustText(engine.trust)),
            10000);
        if (!engine.sourceModelPath.empty()) {
          const QString source = QString::fromStdString(engine.sourceModelPath);
          // Queued: the question's event loop does not run inside the job's callback.
          QMetaObject::invokeMethod(
              this, [this, path, source] { offerSourceModel(path, source); }, Qt::QueuedConnection);
        }
      });
}

void MainWindow::openTrtexec(const QString& graphPath, const QString& profilePath) {
  auto result = std::make_shared<Result<LoadedEngine>>(Status::ok());
  const std::string graph = graphPath.toStdString(), profile = profilePath.toStdString();
  m_jobs.start(
      tr("Open %1").arg(QFileInfo(graphPath).fileName()),
      [result, graph, profile](JobContext&) { *result = loadTrtexec(graph, profile); },
      [this, result, graphPath, profilePath](const JobContext& context) {
        m_document.clearIssues("open");
        if (context.failed()) *result = internalError(context.failure().toStdString());
        if (!result->isOk()) {
          m_document.addIssue({IssueSeverity::kError,
                               "open",
                               QString::fromStdString(result->status().message()),
                               {}});
          statusBar()->showMessage(tr("Could not open %1").arg(graphPath), 10000);
          return;
        }
        m_document.setEngine(graphPath, nullptr, result->value().report);
        // Replaces what the status bar said of the previous document (the permanent
        // plan-trust label follows engineChanged).
        statusBar()->showMessage(tr("Opened %1: %2 layers")
                                     .arg(QFileInfo(graphPath).fileName())
                                     .arg(result->value().report->layers.size()),
                                 10000);
        if (profilePath.isEmpty())
          m_document.addIssue({IssueSeverity::kInfo,
                               "open",
                               tr("%1: no profile JSON beside it; layer times are unknown")
                                   .arg(QFileInfo(graphPath).fileName()),
                               {}});
        addRecent(graphPath);
        showView("engine");
      });
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) openFile(url.toLocalFile());
  event->acceptProposedAction();
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings(kSettingsOrg, kSettingsApp);
  QStringList recent = settings.value("recentFiles").toStringList();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recentFiles", recent);
  updateRecentMenu();
}

void MainWindow::updateRecentMenu() {
  m_recentMenu->clear();
  const QStringList recent =
      QSettings(kSettingsOrg, kSettingsApp).value("recentFiles").toStringList();
  for (int i = 0; i < recent.size(); ++i) {
    QAction* action = m_recentMenu->addAction(QString("&%1 %2").arg(i + 1).arg(recent[i]));
    connect(action, &QAction::triggered, this, [this, path = recent[i]] { openFile(path); });
  }
  m_recentMenu->setEnabled(!recent.isEmpty());
}

// The model-independent build settings carry over between sessions; per-layer
// rules and profiles belong to a model and do not.
void MainWindow::saveBuildSettings() const {
  QSettings settings(kSettingsOrg, kSettingsApp);
  const BuilderConfig& config = m_document.buildConfig();
  settings.beginGroup("build");
  settings.setValue("tf32", config.tf32);
  settings.setValue("fp16", config.fp16);
  settings.setValue("bf16", config.bf16);
  settings.setValue("constraints", constraintModeName(config.precisionConstraints));
  settings.setValue("optimizationLevel", config.optimizationLevel);
  settings.setValue("workspaceBytes", QVariant::fromValue<qlonglong>(config.workspaceLimitBytes));
  settings.setValue("tacticSources", config.tacticSources);
  settings.setValue("verbosity", profilingVerbosityName(config.profilingVerbosity));
  settings.endGroup();
}

void MainWindow::restoreBuildSettings() {
  QSettings settings(kSettingsOrg, kSettingsApp);
  if (!settings.childGroups().contains("build")) return;
  BuilderConfig config = m_document.buildConfig();
  settings.beginGroup("build");
  config.tf32 = settings.value("tf32", config.tf32).toBool();
  config.fp16 = settings.value("fp16", config.fp16).toBool();
  config.bf16 = settings.value("bf16", config.bf16).toBool();
  parseConstraintMode(settings.value("constraints").toString().toStdString(),
                      &config.precisionConstraints);
  config.optimizationLevel = std::clamp(settings.value("optimizationLevel", 3).toInt(), 0, 5);
  config.workspaceLimitBytes =
      settings.value("workspaceBytes", qlonglong(config.workspaceLimitBytes)).toLongLong();
  config.tacticSources = settings.value("tacticSources", config.tacticSources).toUInt();
  parseProfilingVerbosity(settings.value("verbosity").toString().toStdString(),
                          &config.profilingVerbosity);
  settings.endGroup();
  m_document.setBuildConfig(config);
}

void MainWindow::restoreSettings() {
  restoreBuildSettings();
  QSettings settings(kSettingsOrg, kSettingsApp);
  if (!restoreGeometry(settings.value("geometry").toByteArray())) resize(1500, 950);
  restoreState(settings.value("windowState").toByteArray());
  m_tabs->setCurrentIndex(settings.value("currentView", 0).toInt());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings(kSettingsOrg, kSettingsApp);
  settings.setValue("geometry", saveGeometry());
  settings.setValue("windowState", saveState());
  settings.setValue("currentView", m_tabs->currentIndex());
  saveBuildSettings();
  QMainWindow::closeEvent(event);
}

void MainWindow::updateTitle() {
  QString title = "Kiln Studio";
  if (!m_document.modelPath().isEmpty())
    title = QFileInfo(m_document.modelPath()).fileName() + " - " + title;
  if (!m_document.enginePath().isEmpty() && m_document.enginePath() != m_document.modelPath())
    title = QFileInfo(m_document.enginePath()).fileName() + " | " + title;
  setWindowTitle(title);
}

}  // namespace kiln::studio
