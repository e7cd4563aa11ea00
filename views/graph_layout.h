// GraphLayout: places the boxes and routes the edges of a directed graph, top to
// bottom, for the studio's graph views. Qt Core only (no widgets): it runs on a
// JobRunner thread. Two algorithms:
//  - Graphviz `dot` through libgvc (best drawings; cost grows with the number of
//    ranks that long edges cross, see kDotWorkBudget);
//  - Kiln's own layered layout (longest-path ranks, barycentre ordering, isotonic
//    x placement), linear in nodes plus edge-rank crossings, for big graphs.
// Coordinates are points with y growing downwards (Qt's convention).
#pragma once

#include <QPointF>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <atomic>
#include <functional>
#include <vector>

#include "kiln/status.h"

namespace kiln::studio {

// Graphs with this many nodes or more always use the layered layout. Measured here
// (Graphviz 2.43, one core) on transformer-like graphs: dot with the speed attributes
// set in graph_layout.cpp takes 0.2-0.9 s at 1,000 nodes, but 6.6 s at 1,400 nodes and
// 104 s at 3,000 once some edges skip many ranks (an attention mask read by every
// block); without those attributes it took 207 s at 1,000 nodes and crashed at 3,000.
// The layered layout does the same 3,000-node graph in 0.1-0.15 s (test_graph_view
// prints it), so the switch sits at 1,000 rather than 1,500 nodes.
constexpr int kLargeGraphNodes = 1000;
// dot's network simplex grows with nodes + virtual nodes (one per rank an edge skips);
// past this many (counted with the layered ranking) the layered layout is used even
// below kLargeGraphNodes. At the budget dot took 1-2 s on the graphs above.
constexpr int kDotWorkBudget = 12000;

struct LayoutNode {
  QString id;         // unique key
  QStringList lines;  // label lines (drawn by the scene; the layout only reads the size)
  double width = 80;  // points
  double height = 30;
};

struct LayoutEdge {
  int from = 0;  // node indices
  int to = 0;
  QString label;          // may be empty
  double labelWidth = 0;  // points, measured by the caller
  double labelHeight = 0;
  QString toolTip;  // may be empty; the whole shape a short label stands for
};

struct LayoutGraph {
  std::vector<LayoutNode> nodes;
  std::vector<LayoutEdge> edges;
};

enum class LayoutAlgorithm { kAuto, kDot, kLayered };
const char* layoutAlgorithmName(LayoutAlgorithm algorithm);  // "Graphviz dot", "fast layered"

struct EdgeRoute {
  // Bezier: 3n+1 points (start, then control, control, end per segment); else a polyline.
  std::vector<QPointF> points;
  bool bezier = false;
  QPointF arrowTip;  // where the arrowhead points (the target's border)
  QPointF labelCentre;
};

struct LayoutResult {
  LayoutAlgorithm algorithm = LayoutAlgorithm::kLayered;
  std::vector<QPointF> centres;  // per node
  std::vector<EdgeRoute> edges;  // per edge, in input order
  QRectF bounds;
  double seconds = 0;
};

struct LayoutOptions {
  LayoutAlgorithm algorithm = LayoutAlgorithm::kAuto;
  double rankGap = 36;  // vertical space between ranks, before room for edge labels
  double nodeGap = 24;  // horizontal space between boxes of one rank
  const std::atomic<bool>* cancel = nullptr;  // polled between phases
};

// Lays out `graph`. kAuto picks dot below kLargeGraphNodes and kDotWorkBudget, else
// the layered layout. Errors: an edge naming a node that does not exist (names the
// edge), Graphviz failing, or kCancelled.
Result<LayoutResult> layoutGraph(const LayoutGraph& graph, const LayoutOptions& options = {});

// The algorithm kAuto would pick for `graph`.
LayoutAlgorithm chooseLayoutAlgorithm(const LayoutGraph& graph);

}  // namespace kiln::studio
