// Nodes for the graphs tests build in code (pass, compare and GPU tests):
//   g.nodes.push_back(withInts(makeNode("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1}));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/graph.h"

namespace kiln::test {

// A default-domain `op` node at `opset`, named after its first output.
inline Node makeNode(const std::string& op, std::vector<std::string> inputs,
                     std::vector<std::string> outputs, int opset = 17) {
  Node n;
  n.name = outputs.empty() ? op : outputs[0];
  n.opType = op;
  n.opset = opset;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

// `node` named `name` at position `index` of its graph (Node::index).
inline Node withName(Node node, const std::string& name, int index) {
  node.name = name;
  node.index = index;
  return node;
}

// `node` with attribute `key` set, so a node builds in one expression.
inline Node withInts(Node node, const std::string& key, std::vector<int64_t> values) {
  node.attributes[key].kind = Attribute::Kind::kInts;
  node.attributes[key].ints = std::move(values);
  return node;
}

inline Node withInt(Node node, const std::string& key, int64_t value) {
  node.attributes[key].kind = Attribute::Kind::kInt;
  node.attributes[key].i = value;
  return node;
}

inline Node withString(Node node, const std::string& key, const std::string& value) {
  node.attributes[key].kind = Attribute::Kind::kString;
  node.attributes[key].s = value;
  return node;
}

inline Node withFloat(Node node, const std::string& key, float value) {
  node.attributes[key].kind = Attribute::Kind::kFloat;
  node.attributes[key].f = value;
  return node;
}

}  // namespace kiln::test
