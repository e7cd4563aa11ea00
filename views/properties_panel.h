// PropertiesPanel: what the document's selection is, as a tree of sections. For a
// node (the first of StudioDocument::selectedNodes()): name, op type, domain, opset,
// subgraphs; attributes in words; inputs and outputs with type and shape ("batch x 3
// x 224 x 224", from shape inference run once per model on the JobRunner); statistics
// of weight inputs (count, min, max, mean, std; computed once per weight, big ones
// in the background); and the engine layer it went into when a report is loaded. For
// a selected layer without a node (a trtexec report): the layer's fields, parameters,
// inputs and outputs. With nothing selected and a plan opened from a file: the plan's
// file, backend, device, generated GPU code and signature state. Read-only.
#pragma once

#include <QHash>
#include <QPointer>
#include <QStringList>
#include <QWidget>
#include <map>
#include <memory>
#include <set>

#include "job_runner.h"
#include "node_properties.h"
#include "studio_document.h"

class QTreeWidget;
class QTreeWidgetItem;

namespace kiln::studio {

class PropertiesPanel : public QWidget {
  Q_OBJECT
 public:
  PropertiesPanel(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);

  // The value shown at `path`, given as first-column texts from the section down:
  // {"Node", "Op type"}, {"Attributes", "epsilon"}, {"Inputs", "x"},
  // {"Weights", "W", "mean"}, {"Engine layer", "Precision"}. Empty when absent.
  QString text(const QStringList& path) const;
  QStringList sections() const;  // top-level rows, in order
  QTreeWidget* tree() const { return m_tree; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  // The Property column as wide as its texts but at most 45% of the view (120 px at
  // least, for the short keys of a narrow dock), so long
  // tensor names never push the values off screen (they elide in the middle; tooltips
  // hold them whole).
  void fitColumns();
  void modelChanged();
  void refresh();
  void showNode(const Node& node, int selectedCount);
  void showValues(const QString& title, const std::vector<std::string>& names);
  void showWeights(const Node& node);
  void showLayer(const inspector::ReportLayer& layer, const QString& title);
  void showPlan();
  void showLayerTensors(const QString& title, const std::vector<inspector::ReportTensor>& tensors);
  QString weightStatsText(const std::string& name, const Tensor& tensor);
  void startStats(const std::string& name, const Tensor& tensor);
  InferredValue lookupValue(const std::string& name) const;
  QTreeWidgetItem* section(const QString& title);
  QTreeWidgetItem* row(QTreeWidgetItem* parent, const QString& key, const QString& value);

  StudioDocument* m_document;
  QPointer<JobRunner> m_jobs;
  QTreeWidget* m_tree;
  // Per model: node lookup, inferred values (null until inference finishes), weights.
  std::shared_ptr<const Network> m_network;
  QHash<QString, int> m_nodeIndex;
  std::shared_ptr<const ValueTable> m_values;
  std::map<std::string, WeightStats> m_stats;
  std::set<std::string> m_statsPending;
  int m_generation = 0;
};

}  // namespace kiln::studio
