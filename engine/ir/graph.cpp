#include "kiln/graph.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

namespace kiln {

std::string Node::displayName() const {
  return name.empty() ? opType + "_" + std::to_string(index) : name;
}

std::string Node::describe() const {
  return "node '" + displayName() + "' (#" + std::to_string(index) + ", " +
         (domain.empty() ? "" : domain + ".") + opType + ")";
}

int64_t Node::attrInt(const std::string& key, int64_t fallback) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? fallback : it->second.i;
}

float Node::attrFloat(const std::string& key, float fallback) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? fallback : it->second.f;
}

std::string Node::attrString(const std::string& key, const std::string& fallback) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? fallback : it->second.s;
}

std::vector<int64_t> Node::attrInts(const std::string& key, std::vector<int64_t> fallback) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? fallback : it->second.ints;
}

std::vector<float> Node::attrFloats(const std::string& key, std::vector<float> fallback) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? fallback : it->second.floats;
}

std::vector<std::string> Node::attrStrings(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? std::vector<std::string>{} : it->second.strings;
}

const Tensor* Node::attrTensor(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() || it->second.kind != Attribute::Kind::kTensor ? nullptr
                                                                               : &it->second.t;
}

const Graph* Node::attrGraph(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() || !it->second.g ? nullptr : it->second.g.get();
}

int Node::inputCount() const {
  int n = static_cast<int>(inputs.size());
  while (n > 0 && inputs[n - 1].empty()) --n;
  return n;
}

const ValueInfo* Graph::findValueInfo(const std::string& valueName) const {
  for (const ValueInfo& v : inputs)
    if (v.name == valueName) return &v;
  for (const ValueInfo& v : outputs)
    if (v.name == valueName) return &v;
  auto it = valueInfo.find(valueName);
  return it == valueInfo.end() ? nullptr : &it->second;
}

// Names a node's subgraphs read from enclosing scopes: inputs of nested nodes that
// the subgraph itself does not define.
static void collectOuterReads(const Graph& g, std::set<std::string>* reads) {
  std::unordered_set<std::string> defined;
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (const Node& n : g.nodes)
    for (const std::string& o : n.outputs) defined.insert(o);
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs)
      if (!in.empty() && !defined.count(in)) reads->insert(in);
    for (const auto& [key, attr] : n.attributes) {
      std::vector<std::shared_ptr<Graph>> subs = attr.graphs;
      if (attr.g) subs.push_back(attr.g);
      for (const auto& sub : subs) {
        std::set<std::string> inner;
        collectOuterReads(*sub, &inner);
        for (const std::string& name : inner)
          if (!defined.count(name)) reads->insert(name);
      }
    }
  }
  for (const ValueInfo& v : g.outputs)
    if (!defined.count(v.name)) reads->insert(v.name);
}

bool Node::hasSubgraphs() const {
  for (const auto& [key, attr] : attributes)
    if (attr.g || !attr.graphs.empty()) return true;
  return false;
}

std::vector<std::string> Node::implicitInputs() const {
  std::set<std::string> reads;
  for (const auto& [key, attr] : attributes) {
    std::vector<std::shared_ptr<Graph>> subs = attr.graphs;
    if (attr.g) subs.push_back(attr.g);
    for (const auto& sub : subs) collectOuterReads(*sub, &reads);
  }
  return {reads.begin(), reads.end()};
}

Status Graph::sortTopologically(const std::vector<std::string>& outerScope) {
  std::unordered_set<std::string> available(outerScope.begin(), outerScope.end());
  for (const ValueInfo& v : inputs) available.insert(v.name);
  for (const auto& [name, t] : initializers) available.insert(name);
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& o : nodes[i].outputs) {
      if (o.empty()) continue;
      if (producer.count(o) || available.count(o)) {
        if (!outerScope.empty() && available.count(o) && !producer.count(o)) continue;  // shadowing
        return invalidArgument(nodes[i].describe() + ": output '" + o + "' is defined twice")
            .withNodeOf(nodes[i])
            .withTensor(o);
      }
      producer[o] = i;
    }
  }
  // Kahn's algorithm over each node's reads (direct inputs and subgraph outer reads);
  // ties keep the file order so sorted models stay as they were.
  std::vector<std::vector<std::string>> reads(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<std::string> r;
    for (const std::string& in : nodes[i].inputs)
      if (!in.empty()) r.insert(in);
    for (const auto& [key, attr] : nodes[i].attributes) {
      std::vector<std::shared_ptr<Graph>> subs = attr.graphs;
      if (attr.g) subs.push_back(attr.g);
      for (const auto& sub : subs) collectOuterReads(*sub, &r);
    }
    reads[i].assign(r.begin(), r.end());
  }
  std::vector<int> pending(nodes.size(), 0);
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& name : reads[i]) {
      if (available.count(name)) continue;
      if (!producer.count(name))
        return invalidArgument(nodes[i].describe() + ": input '" + name +
                               "' is not produced by any node, input or initializer")
            .withNodeOf(nodes[i])
            .withTensor(name);
      ++pending[i];
      consumers[name].push_back(i);
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    for (const std::string& o : nodes[i].outputs) {
      for (size_t c : consumers[o])
        if (--pending[c] == 0) ready.insert(c);
    }
    sorted.push_back(std::move(nodes[i]));
  }
  if (sorted.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] > 0)
        return invalidArgument(nodes[i].describe() + ": part of a cycle in the graph")
            .withNodeOf(nodes[i]);
  }
  nodes = std::move(sorted);
  return Status::ok();
}

static void accumulateParameters(const Graph& g, int64_t* count, int64_t* bytes) {
  for (const auto& [name, t] : g.initializers) {
    *count += t.numel();
    *bytes += static_cast<int64_t>(t.byteSize());
  }
  for (const Node& n : g.nodes) {
    for (const auto& [key, attr] : n.attributes) {
      if (attr.kind == Attribute::Kind::kTensor && n.opType == "Constant") {
        *count += attr.t.numel();
        *bytes += static_cast<int64_t>(attr.t.byteSize());
      }
      if (attr.g) accumulateParameters(*attr.g, count, bytes);
      for (const auto& sub : attr.graphs) accumulateParameters(*sub, count, bytes);
    }
  }
}

int64_t Graph::parameterCount() const {
  int64_t count = 0, bytes = 0;
  accumulateParameters(*this, &count, &bytes);
  return count;
}

int64_t Graph::parameterBytes() const {
  int64_t count = 0, bytes = 0;
  accumulateParameters(*this, &count, &bytes);
  return bytes;
}

int Network::defaultOpset() const {
  auto it = opsets.find("");
  if (it != opsets.end()) return it->second;
  it = opsets.find("ai.onnx");
  return it == opsets.end() ? 0 : it->second;
}

}  // namespace kiln
