// Nested layout of a graph grouped by name scope (scope_tree.h), as Model Explorer
// draws it: a collapsed group is one box (its title, size, time and precision mix); an
// expanded group is a frame whose contents are laid out on their own and then placed,
// as one box of the frame's size, in the layout of the group around it. Edges between
// boxes of one level are routed by that level's layout; an edge that enters or leaves
// an expanded group is drawn as a curve from box to box. Qt Core and GraphStyle only:
// runs on a JobRunner thread.
#pragma once

#include <QRectF>
#include <QString>
#include <memory>
#include <set>
#include <vector>

#include "graph_layout.h"
#include "graph_scene.h"
#include "scope_tree.h"

namespace kiln::studio {

// The id prefix of a collapsed group's box: "group:/encoder/layer.6".
inline const QString kGroupIdPrefix = QStringLiteral("group:");

// What grouping adds to a scene: which flat nodes each box stands for.
struct GroupedScene {
  std::shared_ptr<SceneGraph> scene;
  std::vector<int> visibleOf;             // per flat node: the box showing it
  std::vector<std::vector<int>> members;  // per box: the flat nodes it shows
};

// Lays out `graph` (one box per flat node, `looks` beside it) with the groups of `tree`
// in `expanded` open and the others collapsed. `options.cancel` is polled between the
// levels. Errors: those of layoutGraph.
Result<GroupedScene> layoutGrouped(const LayoutGraph& graph, const std::vector<NodeLook>& looks,
                                   const ScopeTree& tree, const std::set<QString>& expanded,
                                   const LayoutOptions& options);

// The flat layout, as a GroupedScene of one box per node.
Result<GroupedScene> layoutFlat(const LayoutGraph& graph, const std::vector<NodeLook>& looks,
                                const LayoutOptions& options);

}  // namespace kiln::studio
