#include "export_actions.h"

#include <QAction>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QSaveFile>
#include <nlohmann/json.hpp>

#include "engine_graph_onnx.h"
#include "engine_inspector.h"
#include "engine_report.h"
#include "kiln/file_io.h"
#include "kiln/plan.h"
#include "studio_document.h"
#include "typed_export.h"

namespace kiln::studio {

namespace {

// Written whole or not at all (a failed export leaves the old file), through a fresh
// temporary that never follows a link planted beside the target.
Status writeText(const QString& path, const QByteArray& bytes) {
  return writeFileAtomically(path.toStdString(), bytes.toStdString(), "the export");
}

// trtexec's --exportProfile shape from the profiled report.
nlohmann::json profileJson(const inspector::EngineReport& report) {
  nlohmann::json doc = nlohmann::json::array();
  doc.push_back({{"count", report.profileIterations}});
  for (const auto& layer : report.layers) {
    const double average = layer.averageMs >= 0 ? layer.averageMs : layer.milliseconds;
    nlohmann::json entry = {{"name", layer.name},
                            {"timeMs", average * report.profileIterations},
                            {"averageMs", average},
                            {"medianMs", layer.milliseconds},
                            {"percentage", layer.percentage}};
    if (!layer.profiledImplementation.empty())
      entry["implementation"] = layer.profiledImplementation;
    doc.push_back(std::move(entry));
  }
  return doc;
}

Status noEngine() {
  return Status(StatusCode::kInvalidArgument, "no engine is open: build or open one first");
}

}  // namespace

ExportActions::ExportActions(StudioDocument* document, JobRunner* jobs, QWidget* dialogParent,
                             QObject* parent)
    : QObject(parent), m_document(document), m_jobs(jobs), m_dialogParent(dialogParent) {
  connect(m_document, &StudioDocument::engineChanged, this, &ExportActions::updateEnabled);
}

void ExportActions::setFigureProvider(std::function<std::vector<ReportFigure>()> figures) {
  m_figures = std::move(figures);
}

void ExportActions::addTo(QMenu* menu) {
  m_engine = menu->addAction(tr("&Save Engine As..."), this, [this] {
    runExport(tr("Save engine"), tr("Kiln plans (*.kiln)"), ".kiln", &ExportActions::saveEngine);
  });
  m_engine->setShortcut(QKeySequence::Save);
  QMenu* exports = menu->addMenu(tr("&Export"));
  m_reportActions.push_back(exports->addAction(tr("&Report (HTML)..."), this, [this] {
    runExport(tr("Export report"), tr("HTML (*.html)"), ".html", &ExportActions::exportHtmlReport);
  }));
  m_reportActions.back()->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  m_reportActions.push_back(exports->addAction(tr("&Inspector JSON..."), this, [this] {
    runExport(tr("Export inspector JSON"), tr("JSON (*.json)"), ".json",
              &ExportActions::exportInspectorJson);
  }));
  m_reportActions.push_back(exports->addAction(tr("Layer table &CSV..."), this, [this] {
    runExport(tr("Export CSV"), tr("CSV (*.csv)"), ".csv", &ExportActions::exportCsv);
  }));
  m_reportActions.push_back(exports->addAction(tr("Engine graph as &ONNX..."), this, [this] {
    runExport(tr("Export engine graph"), tr("ONNX (*.onnx)"), ".engine.onnx",
              &ExportActions::exportEngineGraph);
  }));
  m_profile = exports->addAction(tr("&Profile JSON (trtexec)..."), this, [this] {
    runExport(tr("Export profile"), tr("JSON (*.json)"), ".json",
              &ExportActions::exportProfileJson);
  });
  QMenu* typed = exports->addMenu(tr("ONNX with &precisions (TensorRT 11)"));
  m_typedFromEngine = typed->addAction(tr("From the &engine..."), this, [this] {
    runExport(tr("Export strongly typed ONNX"), tr("ONNX (*.onnx)"), ".strongly_typed.onnx",
              &ExportActions::exportTypedFromEngine);
  });
  m_modelActions.push_back(typed->addAction(tr("From the Build dock's &rules..."), this, [this] {
    runExport(tr("Export strongly typed ONNX"), tr("ONNX (*.onnx)"), ".strongly_typed.onnx",
              &ExportActions::exportTypedFromRules);
  }));
  m_modelActions.push_back(
      typed->addAction(tr("INT8 &Q/DQ from the calibration cache..."), this, [this] {
        runExport(tr("Export Q/DQ ONNX"), tr("ONNX (*.onnx)"), ".qdq.onnx",
                  &ExportActions::exportQdqFromCalibration);
      }));
  m_qdqWithEngine = typed->addAction(
      tr("INT8 Q/DQ with the engine's &FP16 layers (calibration cache + engine)..."), this, [this] {
        runExport(tr("Export INT8 + FP16 ONNX"), tr("ONNX (*.onnx)"), ".int8_fp16.onnx",
                  &ExportActions::exportQdqWithEngine);
      });
  m_modelActions.push_back(
      typed->addAction(tr("FP8 Q/DQ for &GEMMs from the calibration cache..."), this, [this] {
        runExport(tr("Export FP8 Q/DQ ONNX"), tr("ONNX (*.onnx)"), ".fp8.onnx",
                  &ExportActions::exportFp8FromCalibration);
      }));
  typed->addSeparator();
  m_keepIoTypes = typed->addAction(tr("Keep float32 &inputs and outputs"));
  m_keepIoTypes->setCheckable(true);
  connect(m_keepIoTypes, &QAction::toggled, this, [this](bool on) { m_keepIo = on; });
  connect(m_document, &StudioDocument::modelChanged, this, &ExportActions::updateEnabled);
  updateEnabled();
}

void ExportActions::updateEnabled() {
  const auto report = m_document->report();
  if (m_engine) m_engine->setEnabled(m_document->plan() != nullptr);
  for (QAction* action : m_reportActions) action->setEnabled(report != nullptr);
  if (m_profile) m_profile->setEnabled(report && report->profileIterations > 0);
  const bool model = m_document->network() && !m_document->modelPath().isEmpty();
  for (QAction* action : m_modelActions) action->setEnabled(model);
  if (m_typedFromEngine) m_typedFromEngine->setEnabled(model && m_document->plan());
  if (m_qdqWithEngine) m_qdqWithEngine->setEnabled(model && m_document->plan());
}

void ExportActions::setKeepIoTypes(bool keep) {
  m_keepIo = keep;
  if (m_keepIoTypes) m_keepIoTypes->setChecked(keep);
}

void ExportActions::runExport(const QString& title, const QString& filter, const QString& suffix,
                              Status (ExportActions::*write)(const QString&)) {
  QString base =
      m_document->modelPath().isEmpty() ? m_document->enginePath() : m_document->modelPath();
  base = QFileInfo(base).path() + "/" + QFileInfo(base).completeBaseName() + suffix;
  QString path = QFileDialog::getSaveFileName(m_dialogParent, title, base, filter);
  if (path.isEmpty()) return;
  if (!path.endsWith(suffix)) path += suffix;
  m_document->clearIssues("export");
  Status status = (this->*write)(path);
  if (!status.isOk())
    m_document->addIssue(
        {IssueSeverity::kError, "export", QString::fromStdString(status.message()), {}});
}

Status ExportActions::saveEngine(const QString& path) {
  if (!m_document->plan()) return noEngine();
  return savePlan(*m_document->plan(), path.toStdString());
}

Status ExportActions::exportInspectorJson(const QString& path) {
  const auto report = m_document->report();
  if (!report) return noEngine();
  nlohmann::json doc = m_document->plan() ? inspector::engineInspectorJson(*m_document->plan())
                                          : inspector::reportJson(*report);
  return writeText(path, QByteArray::fromStdString(
                             doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

Status ExportActions::exportProfileJson(const QString& path) {
  const auto report = m_document->report();
  if (!report) return noEngine();
  if (report->profileIterations <= 0)
    return Status(StatusCode::kInvalidArgument,
                  "the engine has not been profiled: run Profile first");
  return writeText(path, QByteArray::fromStdString(profileJson(*report).dump(1)));
}

Status ExportActions::exportEngineGraph(const QString& path) {
  const auto report = m_document->report();
  if (!report) return noEngine();
  return inspector::exportEngineGraphOnnx(*report, path.toStdString());
}

// A typed export's summary (what was reduced, the trtexec line) as an info Issue.
Status ExportActions::reportTyped(Status status, const QString& summary) {
  if (status.isOk()) m_document->addIssue({IssueSeverity::kInfo, "export", summary, {}});
  return status;
}

Status ExportActions::exportTypedFromEngine(const QString& path) {
  QString summary;
  return reportTyped(exportTypedOnnxFromEngine(*m_document, path, m_keepIo, &summary), summary);
}

Status ExportActions::exportTypedFromRules(const QString& path) {
  QString summary;
  return reportTyped(exportTypedOnnxFromRules(*m_document, path, m_keepIo, &summary), summary);
}

Status ExportActions::exportQdqFromCalibration(const QString& path) {
  QString summary;
  return reportTyped(exportQdqOnnxFromCalibration(*m_document, path, &summary), summary);
}

Status ExportActions::exportQdqWithEngine(const QString& path) {
  QString summary;
  return reportTyped(exportQdqOnnxWithEngine(*m_document, path, m_keepIo, &summary), summary);
}

Status ExportActions::exportFp8FromCalibration(const QString& path) {
  QString summary;
  return reportTyped(exportQdqOnnxFromCalibration(*m_document, path, &summary, QdqFormat::kFp8),
                     summary);
}

Status ExportActions::exportCsv(const QString& path) {
  const auto report = m_document->report();
  if (!report) return noEngine();
  return writeText(path, QByteArray::fromStdString(inspector::reportCsv(*report)));
}

Status ExportActions::exportHtmlReport(const QString& path) {
  const auto report = m_document->report();
  if (!report) return noEngine();
  std::vector<ReportFigure> figures = m_figures ? m_figures() : std::vector<ReportFigure>{};
  const QString name = QFileInfo(m_document->modelPath().isEmpty() ? m_document->enginePath()
                                                                   : m_document->modelPath())
                           .fileName();
  return writeText(path, htmlReport(*report, name, figures).toUtf8());
}

}  // namespace kiln::studio
