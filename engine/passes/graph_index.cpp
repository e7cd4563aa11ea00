#include <cmath>

#include "passes/pass.h"

namespace kiln::passes {

GraphIndex::GraphIndex(const Graph& graph) : m_graph(graph) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    for (const std::string& in : node.inputs)
      if (!in.empty()) m_readers[in].push_back(static_cast<int>(i));
    for (const std::string& in : node.implicitInputs())
      m_readers[in].push_back(static_cast<int>(i));
    for (const std::string& out : node.outputs)
      if (!out.empty()) m_producers[out] = static_cast<int>(i);
    // Exporters often write scalars as Constant nodes rather than initializers.
    if (node.opType == "Constant" && node.outputs.size() == 1 && node.attrTensor("value"))
      m_constantNodes[node.outputs[0]] = node.attrTensor("value");
  }
  for (const ValueInfo& out : graph.outputs) m_readers[out.name].push_back(-1);
}

const std::vector<int>& GraphIndex::readers(const std::string& value) const {
  static const std::vector<int> kNone;
  auto it = m_readers.find(value);
  return it == m_readers.end() ? kNone : it->second;
}

int GraphIndex::soleReader(const std::string& value) const {
  const std::vector<int>& r = readers(value);
  return r.size() == 1 ? r[0] : -1;
}

int GraphIndex::producer(const std::string& value) const {
  auto it = m_producers.find(value);
  return it == m_producers.end() ? -1 : it->second;
}

const Tensor* GraphIndex::constant(const std::string& value) const {
  auto it = m_graph.initializers.find(value);
  if (it != m_graph.initializers.end()) return &it->second;
  auto node = m_constantNodes.find(value);
  return node == m_constantNodes.end() ? nullptr : node->second;
}

bool isScalarConstant(const Tensor* t, double value) {
  if (!t || t->type() != DataType::kFloat32 || t->numel() != 1) return false;
  return std::fabs(t->data<float>()[0] - value) <= 1e-6 * std::max(1.0, std::fabs(value));
}

void replaceNodes(Graph& graph, const std::vector<int>& indices, Node fused,
                  const std::string& pass) {
  Attribute sources;
  sources.kind = Attribute::Kind::kStrings;
  for (int i : indices) sources.strings.push_back(graph.nodes[i].displayName());
  fused.attributes[kSourceNodesAttribute] = sources;
  Attribute passName;
  passName.kind = Attribute::Kind::kString;
  passName.s = pass;
  fused.attributes[kFusionPassAttribute] = passName;
  // The last matched node's place: every input of the chain (a bias made by a Constant
  // node between the MatMul and the Add, say) exists by then, and every reader of
  // the chain's output comes after it.
  fused.index = graph.nodes[indices.front()].index;
  graph.nodes[indices.back()] = std::move(fused);
  for (auto it = indices.rbegin() + 1; it != indices.rend(); ++it)
    graph.nodes.erase(graph.nodes.begin() + *it);
}

}  // namespace kiln::passes
