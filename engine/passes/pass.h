// The pass interface and the graph queries passes share. Internal to kiln_engine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/passes.h"

namespace kiln::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  // Name, one-line algebra and the lowest optimization level the pass runs at.
  virtual PassInfo info() const = 0;
  // Rewrites every match in `network`; appends one record per rewrite.
  virtual Status apply(Network& network, std::vector<PassApplication>* applied) const = 0;
};

// Who writes and who reads each value of the main graph (node indices; graph outputs count as a
// reader with index -1), rebuilt after each rewrite.
class GraphIndex {
 public:
  explicit GraphIndex(const Graph& graph);
  const std::vector<int>& readers(const std::string& value) const;
  // The single node reading `value`, or -1 (several readers, a graph output, none).
  int soleReader(const std::string& value) const;
  // Index of the node that writes `value`, or -1 (a graph input, an initializer).
  int producer(const std::string& value) const;
  // The initializer or Constant-node tensor named `value`, or nullptr.
  const Tensor* constant(const std::string& value) const;

 private:
  const Graph& m_graph;
  std::map<std::string, std::vector<int>> m_readers;
  std::map<std::string, int> m_producers;
  std::map<std::string, const Tensor*> m_constantNodes;
};

// True when `t` is a float32 scalar (any rank, one element) within 1e-6 of `value`.
bool isScalarConstant(const Tensor* t, double value);

// Replaces the nodes at `indices` (ascending) with `fused`, placed where the last
// of them was; `fused` gets the provenance attributes.
void replaceNodes(Graph& graph, const std::vector<int>& indices, Node fused,
                  const std::string& pass);

}  // namespace kiln::passes
