// merge_duplicate_nodes: common subexpressions computed once. Two deterministic
// default-domain nodes of the same op, opset and attributes reading the same values
// write the same values, so the later one goes and its readers read the earlier one's
// outputs: f(a, b) ... f(a, b) = y ... y. Scalar constants, and integer constants of at
// most 16 elements, with equal type, shape and bytes count as one value, so per-layer
// copies of one scalar or shape do not hide a duplicate. Exporters repeat work per layer: the
// transformers exports rebuild the additive attention mask from the same boolean mask in every
// layer (a [N, 1, S, S] Where per layer, 12 in BERT-base). Left alone: nodes with subgraphs or
// tensor attributes, random ops, nodes writing a graph output, and values a subgraph reads by name.
// Runs after fold_constants, so the shape arithmetic already folded is no candidate.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "passes/fusion_passes.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "merge_duplicate_nodes";
constexpr int64_t kSmallConstant = 16;  // elements of an integer constant compared

const std::set<std::string>& randomOps() {
  static const std::set<std::string> ops = {
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
      "Multinomial",  "Bernoulli",        "Dropout"};
  return ops;
}

// The bytes that identify a scalar or a small integer constant (a shape, axes): type,
// shape and data; "" for others (weights, even small ones, keep their own names: the
// weight folds rewrite a weight read by one node).
std::string constantKey(const Tensor* t) {
  if (!t || !t->defined() || t->type() == DataType::kString) return "";
  const bool integer = t->type() == DataType::kInt64 || t->type() == DataType::kInt32;
  if (t->numel() > (integer ? kSmallConstant : 1)) return "";
  std::string key = std::to_string(static_cast<int>(t->type())) + ":" + shapeToString(t->shape());
  key += ":";
  key.append(static_cast<const char*>(t->rawData()), t->byteSize());
  return key;
}

// The attributes as text, or false when one holds a tensor or a graph.
bool attributeKey(const Node& node, std::string* key) {
  for (const auto& [name, a] : node.attributes) {
    *key += name + "=" + std::to_string(static_cast<int>(a.kind)) + ":";
    switch (a.kind) {
      case Attribute::Kind::kFloat:
        key->append(reinterpret_cast<const char*>(&a.f), sizeof a.f);
        break;
      case Attribute::Kind::kInt:
        *key += std::to_string(a.i);
        break;
      case Attribute::Kind::kString:
        *key += std::to_string(a.s.size()) + ":" + a.s;
        break;
      case Attribute::Kind::kFloats:
        key->append(reinterpret_cast<const char*>(a.floats.data()),
                    a.floats.size() * sizeof(float));
        break;
      case Attribute::Kind::kInts:
        for (int64_t v : a.ints) *key += std::to_string(v) + ",";
        break;
      case Attribute::Kind::kStrings:
        for (const std::string& s : a.strings) *key += std::to_string(s.size()) + ":" + s;
        break;
      default:
        return false;  // tensors and graphs: not compared
    }
    *key += ";";
  }
  return true;
}

// The node's identity (op, opset, attributes, inputs), or "" when it must stay (one of its
// outputs a graph output or read by a subgraph by name).
std::string nodeKey(const Node& node, const std::set<std::string>& graphOutputs,
                    const std::set<std::string>& readByName) {
  if (!isDefaultDomain(node) || node.opType == "Constant" || randomOps().count(node.opType) ||
      node.outputs.empty())
    return "";
  for (const std::string& out : node.outputs)
    if (graphOutputs.count(out) || readByName.count(out)) return "";
  std::string key = node.opType + "/" + std::to_string(node.opset) + "/" +
                    std::to_string(node.outputs.size()) + "/";
  if (!attributeKey(node, &key)) return "";
  for (const std::string& in : node.inputs) key += "|" + in;
  return key;
}

class MergeDuplicateNodes final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "f(a, b) twice -> once (same op, opset, attributes and inputs; equal small "
            "constants count as one value); readers of the second read the first",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    std::set<std::string> graphOutputs, readByName;
    for (const ValueInfo& out : g.outputs) graphOutputs.insert(out.name);
    for (const Node& node : g.nodes)
      for (const std::string& in : node.implicitInputs()) readByName.insert(in);
    // Value -> the value that stands for it (an equal small constant, the output of the
    // node it duplicates).
    std::map<std::string, std::string> same;
    std::set<std::string> duplicateConstants, recordedConstants;
    {
      const GraphIndex index(g);
      std::map<std::string, std::string> firstOfKey;
      auto note = [&](const std::string& name) {
        const std::string key = constantKey(index.constant(name));
        if (key.empty() || readByName.count(name)) return;
        auto [it, inserted] = firstOfKey.emplace(key, name);
        if (!inserted && it->second != name) {
          same[name] = it->second;
          duplicateConstants.insert(name);
        }
      };
      for (const auto& [name, tensor] : g.initializers) note(name);
      for (const Node& node : g.nodes)
        if (node.opType == "Constant" && node.outputs.size() == 1) note(node.outputs[0]);
    }
    std::map<std::string, size_t> firstNode;  // node key -> index of its first node
    for (size_t at = 0; at < g.nodes.size();) {
      Node& node = g.nodes[at];
      for (std::string& in : node.inputs) {
        auto it = same.find(in);
        if (it == same.end()) continue;
        if (duplicateConstants.count(in) && recordedConstants.insert(in).second)
          applied->push_back({kName, {in}, it->second});  // an equal constant read instead
        in = it->second;
      }
      const std::string key = nodeKey(node, graphOutputs, readByName);
      if (key.empty()) {
        ++at;
        continue;
      }
      auto [it, inserted] = firstNode.emplace(key, at);
      const Node* first = inserted ? nullptr : &g.nodes[it->second];
      // An optional output this node writes and the first one does not: the node stays.
      for (size_t i = 0; first && i < node.outputs.size(); ++i)
        if (!node.outputs[i].empty() && first->outputs[i].empty()) first = nullptr;
      if (!first) {
        ++at;
        continue;
      }
      for (size_t i = 0; i < node.outputs.size(); ++i)
        if (!node.outputs[i].empty()) same[node.outputs[i]] = first->outputs[i];
      applied->push_back({kName, {node.displayName()}, first->displayName()});
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(at));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeMergeDuplicateNodes() {
  return std::make_unique<MergeDuplicateNodes>();
}

}  // namespace kiln::passes
