#include "auto_run.h"

#include <QDir>
#include <QDockWidget>
#include <QPixmap>
#include <QTimer>

#include "build_panel.h"
#include "export_actions.h"
#include "main_window.h"
#include "profiles_editor.h"
#include "profile_panel.h"

namespace kiln::studio {

namespace {
constexpr int kLayoutWaitMs = 120000;
}

AutoRun::AutoRun(MainWindow* window, AutoRunOptions options, QObject* parent)
    : QObject(parent), m_window(window), m_options(std::move(options)) {}

void AutoRun::start() {
  StudioDocument* document = m_window->document();
  // The first engine or model that arrives moves the script on; an error in the
  // Issues dock while opening ends it.
  connect(document, &StudioDocument::issuesChanged, this, [this, document] {
    if (m_done || document->issues().empty()) return;
    const Issue& last = document->issues().back();
    if (last.severity == IssueSeverity::kError &&
        (last.source == "import" || last.source == "open"))
      fail(last.message);
  });
  auto onLoaded = [this] {
    if (m_done || m_loaded) return;
    m_loaded = true;
    QTimer::singleShot(0, this, &AutoRun::afterOpen);
  };
  // A model or plan announces its model first; a trtexec export only its engine.
  connect(document, &StudioDocument::modelChanged, this, onLoaded);
  connect(document, &StudioDocument::engineChanged, this, onLoaded);
  m_window->openFile(m_options.file);
}

void AutoRun::afterOpen() {
  if (m_done) return;
  StudioDocument* document = m_window->document();
  // Engine files arrive right after the model; wait for the background jobs (layout).
  m_window->jobs()->waitForIdle(kLayoutWaitMs);
  if (m_options.build && !document->plan() && document->network()) {
    auto* panel = qobject_cast<BuildPanel*>(m_window->panel("build"));
    for (const QString& binding : m_options.shapes.split(',', Qt::SkipEmptyParts)) {
      const QString input = binding.section(':', 0, 0), shape = binding.section(':', 1);
      for (auto column : {ProfilesEditor::kMin, ProfilesEditor::kOpt, ProfilesEditor::kMax})
        if (!panel->profilesEditor()->setShape(0, input, column, shape))
          return fail("--shapes: '" + input + "' is not a dynamic input of the model");
    }
    // A scripted run asks nobody: the proposed shapes (or --shapes) are taken, and
    // noted in the Issues dock.
    panel->acceptProposedShapes();
    connect(panel, &BuildPanel::buildFinished, this, &AutoRun::afterBuild,
            Qt::SingleShotConnection);
    panel->startBuild();
    return;
  }
  afterBuild(true, {});
}

void AutoRun::afterBuild(bool ok, const QString& message) {
  if (m_done) return;
  if (!ok) return fail("build failed: " + message);
  if (m_options.profile && m_window->document()->plan()) {
    auto* panel = qobject_cast<ProfilePanel*>(m_window->panel("profile"));
    connect(panel, &ProfilePanel::profileFinished, this, &AutoRun::afterProfile,
            Qt::SingleShotConnection);
    panel->startProfile();
    return;
  }
  afterProfile(true, {});
}

void AutoRun::afterProfile(bool ok, const QString& message) {
  if (m_done) return;
  if (!ok) return fail("profile failed: " + message);
  m_window->jobs()->waitForIdle(kLayoutWaitMs);  // the engine graph lays out after a build
  if (!m_options.screenshotDir.isEmpty()) takeScreenshots();
  QString reportNote;
  if (!m_options.reportPath.isEmpty()) {
    auto* exports = m_window->findChild<ExportActions*>();
    Status written = exports ? exports->exportHtmlReport(m_options.reportPath)
                             : internalError("no export actions");
    if (!written.isOk()) return fail(QString::fromStdString(written.message()));
    reportNote = ", report " + m_options.reportPath;
  }
  m_done = true;
  emit finished(true, QString("%1 screenshot(s)%2").arg(m_written.size()).arg(reportNote));
}

void AutoRun::takeScreenshots() {
  QDir().mkpath(m_options.screenshotDir);
  // Show a selection: the layer that takes the most time, its nodes, its tactics.
  if (const auto report = m_window->document()->report()) {
    int slowest = -1;
    for (size_t i = 0; i < report->layers.size(); ++i)
      if (slowest < 0 || report->layers[i].milliseconds > report->layers[slowest].milliseconds)
        slowest = static_cast<int>(i);
    m_window->document()->selectLayer(slowest);
    if (auto* tactics = m_window->findChild<QDockWidget*>("dock_tactics")) tactics->raise();
  }
  for (const QString id : {"graph", "engine", "layers", "charts", "roofline"}) {
    m_window->showView(id);
    m_window->jobs()->waitForIdle(kLayoutWaitMs);
    const QString path = QDir(m_options.screenshotDir).filePath("studio-" + id + ".png");
    if (m_window->grab().save(path)) m_written << path;
  }
}

void AutoRun::fail(const QString& message) {
  if (m_done) return;
  m_done = true;
  emit finished(false, message);
}

}  // namespace kiln::studio
