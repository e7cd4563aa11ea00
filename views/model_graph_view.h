// ModelGraphView (View "graph", "Model graph"): the open ONNX model as a graph. One
// box per node (Constant nodes and initializers are not boxes: they are weights, not
// steps), graph inputs and outputs as small rounded boxes, one edge per
// (tensor, consumer) from the tensor's producer, labelled with the tensor's shape
// when shape inference or the model knows it. If/Loop/Scan nodes are single boxes.
// Boxes are coloured by op category (legend). Follows the document: a new model is
// laid out on the JobRunner; the document's selected nodes are highlighted (the
// first scrolled into view); clicking boxes selects their nodes in the document.
#pragma once

#include <QWidget>
#include <memory>

#include "graph_view.h"
#include "studio_document.h"
#include "view.h"

namespace kiln::studio {

// Builds the model graph (any thread): node ids are Node::displayName() for nodes and
// "input:<name>" / "output:<name>" for the terminal boxes (NodeLook::terminal).
Result<GraphInput> buildModelGraph(const Network& network, const JobContext& context);

class ModelGraphView : public QWidget, public View {
  Q_OBJECT
 public:
  ModelGraphView(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);

  QString id() const override { return QStringLiteral("graph"); }
  QString title() const override { return tr("Model graph"); }
  QWidget* widget() override { return this; }
  QToolBar* toolBar() override { return m_toolBar; }

  GraphView* graphView() const { return m_view; }
  // The graph as SVG (for the HTML report); empty while nothing is shown.
  QByteArray toSvg() const;

 private:
  void reload();
  void updateLegend();
  void showSelection();
  void onUserSelection(const QList<int>& indices);

  StudioDocument* m_document;
  GraphView* m_view;
  QToolBar* m_toolBar;
};

}  // namespace kiln::studio
