// EngineGraphView (View "engine", "Engine graph"): the engine in the document's
// EngineReport as a graph. One box per layer (name elided; type and precision on the
// second line), engine bindings as rounded boxes, one edge per (tensor, consumer)
// from the layer that writes the tensor (or the input binding), labelled with its
// dimensions. Two colourings, switched without a new layout: by precision (fixed
// colours per FP32/TF32/FP16/BF16/INT8/FP8) or by share of time (white to red,
// relative to the slowest layer; untimed layers grey); the legend follows. Clicking
// a layer selects it in the document; the document's selected layer is highlighted.
#pragma once

#include <QWidget>
#include <memory>

#include "graph_view.h"
#include "studio_document.h"
#include "view.h"

class QComboBox;

namespace kiln::studio {

enum class EngineColouring { kPrecision, kTimeShare };

// Builds the engine graph (any thread): layer boxes have id QString::number(layer index),
// bindings "binding:<name>" (NodeLook::terminal).
Result<GraphInput> buildEngineGraph(const inspector::EngineReport& report,
                                    EngineColouring colouring, const JobContext& context);
// The fill of `layer` in `colouring`; `maxPercentage` is the largest share in the report.
QColor layerColour(const inspector::ReportLayer& layer, EngineColouring colouring,
                   double maxPercentage);

// The fill of a closed scope group's block holding `layers`: by precision, the colour
// of the precision most of them compute in; by time, their summed share.
QColor blockColour(const std::vector<const inspector::ReportLayer*>& layers,
                   EngineColouring colouring, double maxPercentage);

class EngineGraphView : public QWidget, public View {
  Q_OBJECT
 public:
  EngineGraphView(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);

  QString id() const override { return QStringLiteral("engine"); }
  QString title() const override { return tr("Engine graph"); }
  QWidget* widget() override { return this; }
  QToolBar* toolBar() override { return m_toolBar; }

  GraphView* graphView() const { return m_view; }
  EngineColouring colouring() const { return m_colouring; }
  void setColouring(EngineColouring colouring);  // recolours and updates the legend
  QByteArray toSvg() const;

 private:
  void reload();
  void recolour();
  void updateLegend();
  void showSelection();
  void onUserSelection(const QList<int>& indices);

  StudioDocument* m_document;
  GraphView* m_view;
  QToolBar* m_toolBar;
  QComboBox* m_colourBox;
  EngineColouring m_colouring = EngineColouring::kPrecision;
  // The report the shown scene was built from, and the one being laid out.
  std::shared_ptr<const inspector::EngineReport> m_shown, m_pending;
};

}  // namespace kiln::studio
