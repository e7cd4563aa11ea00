// ExportActions: the File menu's exports of the open engine: the plan (.kiln), the
// inspector JSON (IEngineInspector keys for plans, the report JSON for trtexec
// exports), the profile JSON (trtexec --exportProfile shape), the layer table as
// CSV, and the self-contained HTML report; and the open model as strongly typed ONNX
// for TensorRT 11 (typed_export.h: from the engine, from the Build dock's rules, INT8
// Q/DQ from the calibration cache; "Keep float32 inputs and outputs" applies to the
// first two). Each export also has a method that writes to a path, for tests and
// scripts; failures become Issues and a Status, a typed export's summary an info Issue.
#pragma once

#include <QObject>
#include <QString>
#include <functional>
#include <vector>

#include "html_report.h"
#include "kiln/status.h"

class QMenu;
class QWidget;
class QAction;

namespace kiln::studio {

class JobRunner;
class StudioDocument;

class ExportActions : public QObject {
  Q_OBJECT
 public:
  // `figures` gives the report's SVG figures (graph, charts) when a report is written.
  ExportActions(StudioDocument* document, JobRunner* jobs, QWidget* dialogParent, QObject* parent);
  void setFigureProvider(std::function<std::vector<ReportFigure>()> figures);
  void addTo(QMenu* menu);

  Status saveEngine(const QString& path);
  Status exportInspectorJson(const QString& path);
  Status exportProfileJson(const QString& path);
  // The engine's layer graph as ONNX for Netron / Model Explorer (engine_graph_onnx.h).
  Status exportEngineGraph(const QString& path);
  Status exportCsv(const QString& path);
  Status exportHtmlReport(const QString& path);
  Status exportTypedFromEngine(const QString& path);
  Status exportTypedFromRules(const QString& path);
  Status exportQdqFromCalibration(const QString& path);
  Status exportFp8FromCalibration(const QString& path);  // FP8 E4M3 for the GEMMs
  Status exportQdqWithEngine(const QString& path);  // INT8 Q/DQ + the engine's FP16 layers
  void setKeepIoTypes(bool keep);

 private:
  void updateEnabled();
  Status reportTyped(Status status, const QString& summary);
  void runExport(const QString& title, const QString& filter, const QString& suffix,
                 Status (ExportActions::*write)(const QString&));
  StudioDocument* m_document;
  JobRunner* m_jobs;
  QWidget* m_dialogParent;
  std::function<std::vector<ReportFigure>()> m_figures;
  QAction* m_engine = nullptr;
  std::vector<QAction*> m_reportActions;
  QAction* m_profile = nullptr;
  QAction* m_typedFromEngine = nullptr;
  QAction* m_qdqWithEngine = nullptr;
  QAction* m_keepIoTypes = nullptr;
  std::vector<QAction*> m_modelActions;  // need an open model file
  bool m_keepIo = false;
};

}  // namespace kiln::studio
