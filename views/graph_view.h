// GraphView: the canvas both graph views (model, engine) use. It runs a graph
// builder plus the layout on the JobRunner (never on the GUI thread), shows a notice
// while that runs and which layout was used after, then shows the scene: zoom with
// the wheel around the cursor, pan by dragging the background, Fit / Zoom in / Zoom
// out actions, a search box (name or op type, case-insensitive; Enter goes to the
// next match, which is selected and centred; "3 of 17"), a colour legend, and SVG
// export. User selections are reported with selectionActivated; highlight() selects
// programmatically without reporting. Nodes whose names carry scopes are grouped into
// collapsible blocks (scope_tree.h, scope_layout.h; "Group" in the toolbar turns it
// off): a double-click on a block opens it, one on an open group's frame closes it,
// and a search hit inside a closed block opens the blocks holding it and zooms to it.
#pragma once

#include <QGraphicsView>
#include <QList>
#include <QPointer>
#include <QHash>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "graph_scene.h"
#include "job_runner.h"
#include "scope_layout.h"
#include "scope_tree.h"

class QAction;
class QLabel;
class QLineEdit;
class QToolBar;

namespace kiln::studio {

// What a builder hands to the layout: the graph and the look of its nodes.
struct GraphInput {
  LayoutGraph graph;
  std::vector<NodeLook> looks;
  std::vector<NodeScope> scopes;  // per node, for grouping; empty: nothing to group
  // Appends a box sized for its text lines; returns its index.
  int addBox(const QString& id, const QStringList& lines, const NodeLook& look);
};
// Runs on a JobRunner thread; may poll context.cancelled().
using GraphBuilder = std::function<Result<GraphInput>(JobContext& context)>;

struct LegendEntry {
  QString text;
  QColor colour;
};

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphView(JobRunner* jobs, QWidget* parent = nullptr);
  ~GraphView() override;

  // Builds and lays out a graph in the background, replacing any layout still
  // running; `nodeCount` (an estimate) goes into the notice shown meanwhile.
  void showGraph(const QString& jobTitle, int nodeCount, GraphBuilder builder);
  // Empties the view and shows `notice` ("No model open").
  void clearGraph(const QString& notice);
  bool isLayingOut() const { return m_jobId != 0; }
  GraphScene* graphScene() const { return m_scene; }
  QString notice() const;
  QString layoutSummary() const { return m_summary; }  // "Graphviz dot, 37 nodes, 0.01 s"

  void setLegend(const QString& title, const std::vector<LegendEntry>& entries);
  QString legendText() const;  // the legend as plain text, one entry per line
  // A click on the legend folds it to its title (it covered nodes) and back.
  void setLegendCollapsed(bool collapsed);
  bool legendCollapsed() const { return m_legendCollapsed; }
  QWidget* legendWidget() const;

  // Adds Fit, Zoom in, Zoom out, the search box and its match count to `bar`.
  void addToolBarItems(QToolBar* bar);
  QAction* fitAction() const { return m_fit; }
  QLineEdit* searchBox() const { return m_search; }
  QString searchStatus() const;  // "3 of 17", "no match", "" (no search)
  void search(const QString& text);
  void nextMatch();

  void fitAll();
  void zoomBy(double factor);  // around the viewport centre
  double zoom() const;         // device pixels per scene unit

  // Selects the nodes with `ids`; with `centre`, scrolls the first into view when it
  // is not visible. Does not emit selectionActivated.
  void highlight(const QStringList& ids, bool centre);

  // Grouping by name scope, on by default (the toolbar's "Group" action): a new value
  // lays the shown graph out again.
  void setGrouping(bool on);
  bool grouping() const { return m_grouping; }
  QAction* groupingAction() const { return m_group; }
  // Opens or closes the group at `path` ("/encoder/layer.6") and lays the graph out
  // again (in the background; graphShown() follows); false when there is no such group.
  bool setGroupExpanded(const QString& path, bool expanded);
  bool isGroupExpanded(const QString& path) const { return m_expanded.count(path) != 0; }
  // The groups of the shown graph (empty without grouping or scopes).
  const ScopeTree* scopeTree() const { return m_tree.get(); }
  // The ids a box of the scene stands for: its own, or a closed group's nodes' ids.
  QStringList memberIds(int sceneIndex) const;

  // The whole graph as an SVG document (for reports); `title` goes into its <title>.
  QByteArray toSvg(const QString& title = QString()) const { return m_scene->toSvg(title); }

 signals:
  // The user selected these nodes (click, ctrl+click, search, click on the background
  // = none).
  void selectionActivated(const QList<int>& nodeIndices);
  // A new scene is shown (after showGraph's layout finished).
  void graphShown();
  // The builder or the layout failed; `message` says why.
  void graphFailed(const QString& message);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Job;
  void createActions();
  void startJob(const QString& title, int nodeCount, std::shared_ptr<Job> job);
  static void runJob(Job& job, JobContext& context);
  void relayout();
  void finishJob(const std::shared_ptr<Job>& job, bool cancelled);
  void showScene(std::shared_ptr<const SceneGraph> graph, bool keepView);
  void adoptGrouping(const Job& job);
  void focusAfterLayout();
  void selectAndZoom(int box);
  void setNotice(const QString& text);
  void placeOverlays();
  void goToMatch();
  std::vector<int> searchFlat(const QString& text) const;  // node indices of the built graph
  GraphNodeItem* nodeAt(const QPoint& pos) const;
  void applyZoom(double factor);
  double minimumZoom() const;

  QPointer<JobRunner> m_jobs;  // the runner may go before this widget
  GraphScene* m_scene;
  int m_jobId = 0;
  int m_generation = 0;
  QString m_summary;
  QLabel* m_notice;
  QLabel* m_legend;
  QString m_legendText;
  QString m_legendTitle, m_legendRows;  // the legend's HTML parts
  bool m_legendCollapsed = false;
  void renderLegend();
  QAction* m_fit = nullptr;
  QAction* m_zoomIn = nullptr;
  QAction* m_zoomOut = nullptr;
  QAction* m_find = nullptr;
  QAction* m_group = nullptr;
  // Grouping: the graph as built (one box per node), its groups, which are open, and
  // which box shows each node.
  bool m_grouping = true;
  std::shared_ptr<const GraphInput> m_flat;
  std::shared_ptr<const ScopeTree> m_tree;
  std::set<QString> m_expanded;
  std::vector<int> m_visibleOf;
  std::vector<std::vector<int>> m_members;
  QHash<QString, int> m_flatIndex;
  std::vector<QString> m_flatSearch;  // lower-cased search text per node
  QString m_focus;                    // a node id or frame path to bring into view next
  QLineEdit* m_search;
  QLabel* m_matchLabel;
  std::vector<int> m_matches;
  int m_matchPos = -1;
  bool m_panning = false;
  QPoint m_panStart, m_panLast;
};

}  // namespace kiln::studio
