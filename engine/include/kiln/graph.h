// The Kiln IR: a Network owns a Graph of Nodes that read and write named
// values. Weights (initializers) are Tensors the graph owns. Nodes are kept in
// topological order; control-flow nodes (If/Loop/Scan) own their subgraphs,
// which may read values of enclosing graphs by name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/dim.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

class Graph;

// One node attribute, mirroring ONNX AttributeProto.
struct Attribute {
  enum class Kind {
    kFloat,
    kInt,
    kString,
    kTensor,
    kGraph,
    kFloats,
    kInts,
    kStrings,
    kTensors,
    kGraphs
  };
  Kind kind = Kind::kInt;
  float f = 0.f;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
};

// Name, type and (possibly symbolic) shape of a graph input, output or value.
struct ValueInfo {
  std::string name;
  DataType type = DataType::kUndefined;
  bool hasShape = false;  // false: rank unknown
  SymbolicShape shape;
};

// One operator application. Input names may be empty for omitted optional inputs.
class Node {
 public:
  std::string name;    // may be empty in ONNX; displayName() fills it in
  std::string opType;  // as ONNX spells it: "Conv", "MatMul", ...
  std::string domain;  // "" for the default domain ai.onnx
  int opset = 0;       // opset version of `domain` that the model imports
  int index = 0;       // position in the original ONNX node list
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;

  // "name" or, when unnamed, "<opType>_<index>".
  std::string displayName() const;
  // "node 'Conv_3' (#3, Conv)": the prefix every node error carries.
  std::string describe() const;
  bool hasAttr(const std::string& key) const { return attributes.count(key) != 0; }
  int64_t attrInt(const std::string& key, int64_t fallback) const;
  float attrFloat(const std::string& key, float fallback) const;
  std::string attrString(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attrInts(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attrFloats(const std::string& key, std::vector<float> fallback = {}) const;
  std::vector<std::string> attrStrings(const std::string& key) const;
  const Tensor* attrTensor(const std::string& key) const;
  const Graph* attrGraph(const std::string& key) const;
  // The number of inputs that are present (trailing empty names dropped).
  int inputCount() const;
  bool hasInput(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  // True for control flow: a graph or graphs attribute (If, Loop, Scan bodies).
  bool hasSubgraphs() const;
  // Values of enclosing graphs that this node's subgraphs read (If/Loop/Scan bodies
  // may use outer names directly); they must stay alive until the node has run.
  std::vector<std::string> implicitInputs() const;
};

class Graph {
 public:
  std::string name;
  std::vector<ValueInfo> inputs;  // without initializers
  std::vector<ValueInfo> outputs;
  std::vector<Node> nodes;  // topological order
  std::map<std::string, Tensor> initializers;
  std::map<std::string, ValueInfo> valueInfo;  // declared types/shapes of intermediates

  const ValueInfo* findValueInfo(const std::string& name) const;
  // Reorders nodes topologically. Names produced by no node, no input and no
  // initializer are taken from `outerScope` (the enclosing graphs' values); an
  // unresolvable name or a cycle is an error naming the node.
  Status sortTopologically(const std::vector<std::string>& outerScope = {});
  int64_t parameterCount() const;  // elements of all initializers, subgraphs included
  int64_t parameterBytes() const;
};

// A model: the main graph plus what the file says about itself.
struct Network {
  Graph graph;
  int64_t irVersion = 0;
  std::map<std::string, int> opsets;  // domain ("" = ai.onnx) -> version
  std::string producerName;
  std::string producerVersion;
  std::string sourcePath;
  int defaultOpset() const;
};

}  // namespace kiln
