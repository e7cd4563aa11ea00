// ScopeTree: the name scopes of a graph's nodes as a tree of groups, for the graph
// views' collapsible blocks (issue 26 item 9, as Google's Model Explorer groups them).
// Exporters write module scopes into node names: torch "/encoder/layer.6/attention/
// MatMul", torchvision "/features/features.1/conv/Conv", jax2tf "jax2tf_f_/pjit_g_/Mul".
// A node's scope is its name without the last component; every prefix of a scope is
// a group. Groups of fewer than two nodes are not kept (a block of one says nothing).
// Engine layers carry a time and a precision, which each group sums. Qt Core only:
// built and used on JobRunner threads.
#pragma once

#include <QString>
#include <map>
#include <set>
#include <vector>

namespace kiln::studio {

// What the grouping knows of one node of a graph view.
struct NodeScope {
  QString path;              // "/encoder/layer.6/attention"; "" for none (top level)
  double milliseconds = -1;  // engine layers: time per run; -1 untimed or not a layer
  double percentage = -1;    // engine layers: share of the total time, 0..100
  QString precision;         // engine layers: "FP16", ... ("" unknown or not a layer)
  bool layer = false;        // counted as a layer (engine graph) rather than a node
};

// The scope of a node or layer name: "/encoder/layer.6/attention/MatMul" ->
// "/encoder/layer.6/attention"; "Conv_3" -> "".
QString nameScope(const QString& name);
// The scope shared by several names ("A + B + C" of a fused layer): their longest
// common scope, component by component; "" when they share none.
QString commonScope(const std::vector<QString>& names);

class ScopeTree {
 public:
  struct Group {
    QString path;               // "/encoder/layer.6"
    QString title;              // its last component: "layer.6"
    int parent = -1;            // enclosing group, -1 at the top
    int depth = 0;              // 0 at the top
    std::vector<int> children;  // groups directly inside
    std::vector<int> nodes;     // every node inside, at any depth, in node order
    int directNodes = 0;        // nodes whose innermost group this is
    int layers = 0;             // nodes that are layers
    double milliseconds = -1;   // summed over timed layers; -1 when none is timed
    double percentage = -1;
    std::map<QString, int> precisions;  // layers per precision
  };

  ScopeTree() = default;
  explicit ScopeTree(const std::vector<NodeScope>& scopes);

  bool empty() const { return m_groups.empty(); }
  int size() const { return static_cast<int>(m_groups.size()); }
  const Group& group(int index) const { return m_groups[index]; }
  int find(const QString& path) const;  // -1 when no such group
  // The groups holding `node`, outermost first (empty for a top-level node).
  const std::vector<int>& chainOf(int node) const { return m_chains[node]; }
  int nodeCount() const { return static_cast<int>(m_chains.size()); }

  // The groups to open first: whole levels from the top, while at most `budget`
  // boxes show (a model under one root scope opens past it).
  std::set<QString> initialExpansion(int budget) const;
  // One line of words for a group's box: "24 nodes", or for layers "12 layers · 0.83 ms
  // · 14.2 %"; the precision mix, "FP16 10 · FP32 2" ("" without precisions).
  QString sizeText(int index) const;
  QString precisionText(int index) const;

 private:
  std::vector<Group> m_groups;
  std::vector<std::vector<int>> m_chains;
  int m_topNodes = 0;  // nodes in no group
};

}  // namespace kiln::studio
