// LayeredLayout: Kiln's own fast Sugiyama-style layout, used for graphs too big for
// Graphviz dot (see graph_layout.h). Steps: longest-path ranking (cycles broken by
// reversing back edges), one virtual node per rank an edge skips, barycentre
// ordering sweeps, x placement by isotonic regression per rank (each box as close
// to its neighbours' mean as the rank's order and spacing allow), polyline edges
// through the virtual nodes. Linear in nodes + virtual nodes per sweep.
#pragma once

#include <vector>

#include "graph_layout.h"

namespace kiln::studio {

struct LayerRanking {
  std::vector<int> rank;       // per node, 0 = top
  std::vector<bool> reversed;  // per edge: drawn against the ranking (a back edge)
  long long virtualNodes = 0;  // ranks skipped by edges, summed
};

// Ranks `graph` (edge indices must be valid). Also what kAuto uses to estimate dot's work.
LayerRanking rankLayers(const LayoutGraph& graph);

// Where an edge's label goes: just below its start, beside its first segment (both
// algorithms leave room for it in the rank gap).
QPointF labelCentreBeside(const std::vector<QPointF>& points, double width, double height);

// Lays out `graph` with the layered algorithm. Errors: kCancelled.
Result<LayoutResult> layeredLayout(const LayoutGraph& graph, const LayoutOptions& options);

}  // namespace kiln::studio
