#include <algorithm>
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

InferredShapes inferredShapesOrNone(const Network& network) {
  auto inferred = inferShapes(network);
  return inferred.isOk() ? std::move(inferred.value().values) : InferredShapes();
}

const SymbolicShape* shapeOf(const InferredShapes& shapes, const std::string& value) {
  auto it = shapes.find(value);
  return it == shapes.end() || !it->second.hasShape ? nullptr : &it->second.shape;
}

DataType typeOf(const InferredShapes& shapes, const std::string& value) {
  auto it = shapes.find(value);
  return it == shapes.end() ? DataType::kUndefined : it->second.type;
}

bool isDefaultDomain(const Node& node) {
  return node.domain.empty() || node.domain == "ai.onnx";
}

bool isOnnxOp(const Node& node, const char* op, size_t inputs) {
  return node.opType == op && isDefaultDomain(node) && node.inputs.size() == inputs &&
         node.outputs.size() == 1 && !node.outputs[0].empty();
}

const std::string* otherInput(const Node& node, const std::string& one) {
  if (node.inputs.size() != 2) return nullptr;
  if (node.inputs[0] == one) return &node.inputs[1];
  if (node.inputs[1] == one) return &node.inputs[0];
  return nullptr;
}

Attribute intAttribute(int64_t value) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = value;
  return a;
}

Attribute floatAttribute(float value) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = value;
  return a;
}

Attribute stringAttribute(const std::string& value) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = value;
  return a;
}

Attribute stringsAttribute(std::vector<std::string> values) {
  Attribute a;
  a.kind = Attribute::Kind::kStrings;
  a.strings = std::move(values);
  return a;
}

std::vector<std::string> sourceNodesOf(const Graph& graph, const std::vector<int>& indices) {
  std::vector<std::string> sources;
  auto add = [&](const std::string& name) {  // once each: a rewrite may split one node in two
    if (std::find(sources.begin(), sources.end(), name) == sources.end()) sources.push_back(name);
  };
  for (int i : indices) {
    const std::vector<std::string> inner = graph.nodes[i].attrStrings(kSourceNodesAttribute);
    if (inner.empty()) add(graph.nodes[i].displayName());
    for (const std::string& name : inner) add(name);
  }
  return sources;
}

void replaceNodes(Graph& graph, const std::vector<int>& indices, Node fused,
                  const std::string& pass) {
  fused.attributes[kSourceNodesAttribute] = stringsAttribute(sourceNodesOf(graph, indices));
  fused.attributes[kFusionPassAttribute] = stringAttribute(pass);
  // The last matched node's place: every input of the chain (a bias made by a Constant
  // node between the MatMul and the Add, say) exists by then, and every reader of
  // the chain's output comes after it.
  fused.index = graph.nodes[indices.front()].index;
  graph.nodes[indices.back()] = std::move(fused);
  for (auto it = indices.rbegin() + 1; it != indices.rend(); ++it)
    graph.nodes.erase(graph.nodes.begin() + *it);
}

namespace {

// `target`'s answer for `fused` ("" accepts), its inputs described from `shapes`
// (inferred before the rewrite; a symbolic dim becomes -1).
std::string refusal(const FusionTarget& target, const Node& fused, const InferredShapes& shapes) {
  std::vector<DataType> types;
  std::vector<Shape> dims;
  for (const std::string& input : fused.inputs) {
    types.push_back(input.empty() ? DataType::kUndefined : typeOf(shapes, input));
    Shape shape;
    if (const SymbolicShape* s = input.empty() ? nullptr : shapeOf(shapes, input))
      for (const DimExpr& d : *s) shape.push_back(d.isConst() ? d.constValue() : -1);
    dims.push_back(std::move(shape));
  }
  return target.accepts(fused, types, dims);
}

}  // namespace

void fuseEach(Network& network, const std::string& pass, std::vector<PassApplication>* applied,
              const FusionAt& fusionAt, const FusionTarget* target, const InferredShapes* known) {
  Graph& g = network.graph;
  auto index = std::make_unique<GraphIndex>(g);
  // The pass's own shapes, or inferred once when the first Kiln-domain node is proposed:
  // fusion keeps every value's shape, so one inference serves the whole pass.
  std::optional<InferredShapes> inferred;
  for (size_t at = 0; at < g.nodes.size();) {
    std::optional<Fusion> fusion = fusionAt(g, *index, static_cast<int>(at));
    if (!fusion) {
      ++at;
      continue;
    }
    if (target && target->accepts && fusion->fused.domain == kKilnDomain) {
      if (!known && !inferred) inferred = inferredShapesOrNone(network);
      const std::string why = refusal(*target, fusion->fused, known ? *known : *inferred);
      if (!why.empty()) {
        if (target->refusals)
          target->refusals->push_back(pass + ": kept '" + fusion->fused.name +
                                      "' unfused: the target refuses " + fusion->fused.opType +
                                      ": " + why);
        ++at;
        continue;
      }
    }
    const std::vector<int>& nodes = fusion->nodes;
    if (fusion->fused.domain == kKilnDomain) network.opsets[kKilnDomain] = 1;
    applied->push_back({pass, sourceNodesOf(g, nodes), fusion->fused.name});
    const int place = nodes.back() - static_cast<int>(nodes.size() - 1);
    // Matched nodes before the anchor are erased, so the scan resumes that much earlier.
    at -= std::count_if(nodes.begin(), nodes.end(), [&](int i) { return i < int(at); });
    replaceNodes(g, nodes, std::move(fusion->fused), pass);
    if (fusion->placeFirst)
      std::rotate(g.nodes.begin() + nodes.front(), g.nodes.begin() + place,
                  g.nodes.begin() + place + 1);
    index = std::make_unique<GraphIndex>(g);  // indices moved
  }
}

namespace {

class FusionPass final : public Pass {
 public:
  FusionPass(PassInfo info, ShapedFusionAt fusionAt, bool needsShapes)
      : m_info(std::move(info)), m_fusionAt(std::move(fusionAt)), m_needsShapes(needsShapes) {}

  PassInfo info() const override { return m_info; }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    return applyFor(network, applied, nullptr);
  }

  Status applyFor(Network& network, std::vector<PassApplication>* applied,
                  const FusionTarget* target) const override {
    const InferredShapes shapes = m_needsShapes ? inferredShapesOrNone(network) : InferredShapes();
    fuseEach(
        network, m_info.name, applied,
        [&](Graph& g, const GraphIndex& index, int at) { return m_fusionAt(g, index, shapes, at); },
        target, m_needsShapes ? &shapes : nullptr);
    return Status::ok();
  }

 private:
  PassInfo m_info;
  ShapedFusionAt m_fusionAt;
  bool m_needsShapes;
};

}  // namespace

std::unique_ptr<Pass> makeFusionPass(PassInfo info, FusionAt fusionAt) {
  return std::make_unique<FusionPass>(
      std::move(info),
      [fusionAt = std::move(fusionAt)](Graph& g, const GraphIndex& index, const InferredShapes&,
                                       int at) { return fusionAt(g, index, at); },
      false);
}

std::unique_ptr<Pass> makeFusionPass(PassInfo info, ShapedFusionAt fusionAt) {
  return std::make_unique<FusionPass>(std::move(info), std::move(fusionAt), true);
}

}  // namespace kiln::passes
