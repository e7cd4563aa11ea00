// The pass interface and the graph queries passes share. Internal to kiln_engine.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/passes.h"
#include "kiln/shape_inference.h"

namespace kiln::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  // Name, one-line algebra and the lowest optimization level the pass runs at.
  virtual PassInfo info() const = 0;
  // Rewrites every match in `network`; appends one record per rewrite.
  virtual Status apply(Network& network, std::vector<PassApplication>* applied) const = 0;
  // As apply, asking `target` (may be nullptr) before making a Kiln-domain node. Passes
  // that make none keep the default.
  virtual Status applyFor(Network& network, std::vector<PassApplication>* applied,
                          const FusionTarget* target) const {
    (void)target;
    return apply(network, applied);
  }
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

// Value name -> inferred type and symbolic shape, as inferShapes gives them.
using InferredShapes = std::map<std::string, InferredValue>;
// The main graph's inferred shapes, or none when inference fails (shape checks then
// refuse every match). Fusion keeps every value's shape, so one inference serves a pass.
InferredShapes inferredShapesOrNone(const Network& network);
// `value`'s inferred shape (nullptr: unknown rank) and type (kUndefined: unknown).
const SymbolicShape* shapeOf(const InferredShapes& shapes, const std::string& value);
DataType typeOf(const InferredShapes& shapes, const std::string& value);

// A node of the ONNX default domain ("" or "ai.onnx").
bool isDefaultDomain(const Node& node);
// A default-domain `op` node with exactly `inputs` inputs and one named output.
bool isOnnxOp(const Node& node, const char* op, size_t inputs);
// The other input of a two-input node, given one of them; nullptr when `one` is not an input.
const std::string* otherInput(const Node& node, const std::string& one);

Attribute intAttribute(int64_t value);
Attribute floatAttribute(float value);
Attribute stringAttribute(const std::string& value);
Attribute stringsAttribute(std::vector<std::string> values);

// The ONNX nodes behind the nodes at `indices`: a node an earlier pass fused stands
// for its source-nodes attribute, any other node for its display name; each name once.
std::vector<std::string> sourceNodesOf(const Graph& graph, const std::vector<int>& indices);

// Replaces the nodes at `indices` (ascending) with `fused`, placed where the last
// of them was; `fused` gets the provenance attributes (sourceNodesOf the replaced
// nodes and the pass name).
void replaceNodes(Graph& graph, const std::vector<int>& indices, Node fused,
                  const std::string& pass);

// One rewrite a fusion pass found: the nodes it replaces and the node replacing them.
struct Fusion {
  std::vector<int> nodes;  // ascending
  Node fused;
  // Place the fused node where nodes.front() was rather than where nodes.back() was
  // (a reader of one of its outputs lies between the two).
  bool placeFirst = false;
};
// Returns the rewrite anchored at node `at`, or nothing. It may add initializers to
// `graph` (folded weights) but must not move nodes.
using FusionAt =
    std::function<std::optional<Fusion>(Graph& graph, const GraphIndex& index, int at)>;

// The fusion passes' rewrite loop: visits the nodes in order, applies each rewrite
// `fusionAt` finds (replaceNodes), records it (the ONNX nodes behind the replaced
// ones, the fused node's name), re-indexes and goes on at the node that followed the
// anchor. Declares the ai.kiln opset when a fused node is in that domain. With a
// `target`, a Kiln-domain node it refuses is not made (see FusionTarget); `known`: the
// main graph's inferred shapes when the caller has them (else inferred on first need).
void fuseEach(Network& network, const std::string& pass, std::vector<PassApplication>* applied,
              const FusionAt& fusionAt, const FusionTarget* target = nullptr,
              const InferredShapes* known = nullptr);

// FusionAt with the main graph's inferred shapes (inferredShapesOrNone, once per pass).
using ShapedFusionAt = std::function<std::optional<Fusion>(Graph& graph, const GraphIndex& index,
                                                           const InferredShapes& shapes, int at)>;

// A fusion pass: `info` and the rewrite fuseEach applies (with shapes, or without and
// then no shape inference runs).
std::unique_ptr<Pass> makeFusionPass(PassInfo info, FusionAt fusionAt);
std::unique_ptr<Pass> makeFusionPass(PassInfo info, ShapedFusionAt fusionAt);

}  // namespace kiln::passes
