// inline_constant_if: an If whose condition is a constant is the branch it takes,
//   If(true, then, else) = then,   If(false, then, else) = else.
// A fixed-shape model's shape tests fold to constants (fold_constants, which runs first):
// TorchScript exports of scripted helpers (DeBERTa's relative positions) test shapes in If
// nodes, which have no GPU kernel and no output shape before they run. The taken branch's
// nodes and initializers join the main graph in the If's place, every value they make under
// a fresh name (values of the enclosing graph keep theirs; nested subgraphs read the new
// names, unless they define the name themselves), and
// the branch's outputs become the If's outputs (through an Identity where the branch hands
// out a value it does not compute: an outer value or one of its initializers; the
// Identity goes with remove_no_op_nodes). An If inside the taken branch is inlined in turn
// when its condition is constant. When anything was inlined, fold_constants runs again on
// the result, whose shape arithmetic now sees the main graph's static shapes, and the
// rounds go on while an If's condition folds.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "inline_constant_if";

// The constant condition of If node `node`, or false when it is not one.
bool constantCondition(const Node& node, const GraphIndex& index, bool* value) {
  if (!isDefaultDomain(node) || node.opType != "If" || node.inputs.size() != 1) return false;
  const Tensor* c = index.constant(node.inputs[0]);
  if (!c || c->numel() != 1) return false;
  *value = c->valueAsDouble(0) != 0;
  return true;
}

void renameSubgraphReads(Node& node, const std::map<std::string, std::string>& names);

// Renames the values of `names` that `graph` reads from enclosing scopes: its nodes' inputs
// and its outputs, in nested subgraphs too; a name the graph defines itself (an input, an
// initializer, a node's output) shadows the outer one there and stays.
void renameOuterReads(Graph& graph, std::map<std::string, std::string> names) {
  for (const ValueInfo& v : graph.inputs) names.erase(v.name);
  for (const auto& [name, tensor] : graph.initializers) names.erase(name);
  for (const Node& n : graph.nodes)
    for (const std::string& out : n.outputs) names.erase(out);
  if (names.empty()) return;
  auto rename = [&](std::string& value) {
    auto it = names.find(value);
    if (it != names.end()) value = it->second;
  };
  for (ValueInfo& v : graph.outputs) rename(v.name);
  for (Node& n : graph.nodes) {
    for (std::string& in : n.inputs) rename(in);
    renameSubgraphReads(n, names);
  }
}

// renameOuterReads on every subgraph attribute of `node` (copies: the attributes' graphs
// may be shared with other nodes).
void renameSubgraphReads(Node& node, const std::map<std::string, std::string>& names) {
  for (auto& [key, attr] : node.attributes) {
    if (attr.g) {
      auto copy = std::make_shared<Graph>(*attr.g);
      renameOuterReads(*copy, names);
      attr.g = copy;
    }
    for (auto& sub : attr.graphs) {
      auto copy = std::make_shared<Graph>(*sub);
      renameOuterReads(*copy, names);
      sub = copy;
    }
  }
}

// The nodes that replace If node `at` by its `branch` (initializers added to g).
std::vector<Node> inlinedBranch(Graph& g, int at, const Graph& branch) {
  const Node& ifNode = g.nodes[at];
  const std::string prefix = ifNode.displayName() + "/";
  std::map<std::string, std::string> names;  // branch value -> main-graph name
  std::set<std::string> handedOut;           // fresh names given so far (not in g yet)
  auto fresh = [&](const std::string& base) {
    std::string name = freshName(g, base);
    for (int i = 1; handedOut.count(name); ++i) name = freshName(g, base + "_" + std::to_string(i));
    handedOut.insert(name);
    return name;
  };
  for (const auto& [name, tensor] : branch.initializers) {
    names[name] = fresh(prefix + name);
    g.initializers[names[name]] = tensor;
  }
  std::map<std::string, size_t> outputSlot;  // a branch output computed by a branch node
  for (size_t i = 0; i < branch.outputs.size() && i < ifNode.outputs.size(); ++i)
    outputSlot[branch.outputs[i].name] = i;
  std::vector<bool> computed(branch.outputs.size(), false);
  for (const Node& n : branch.nodes)
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      auto slot = outputSlot.find(out);
      if (slot != outputSlot.end() && !computed[slot->second]) {
        names[out] = ifNode.outputs[slot->second];
        computed[slot->second] = true;
      } else {
        names[out] = fresh(prefix + out);
      }
    }
  std::vector<Node> out;
  for (Node n : branch.nodes) {
    n.name = prefix + n.displayName();
    for (std::string& in : n.inputs) {
      auto it = names.find(in);
      if (it != names.end()) in = it->second;
    }
    renameSubgraphReads(n, names);
    for (std::string& o : n.outputs)
      if (!o.empty()) o = names.at(o);
    out.push_back(std::move(n));
  }
  for (size_t i = 0; i < computed.size() && i < ifNode.outputs.size(); ++i) {
    if (computed[i] || ifNode.outputs[i].empty()) continue;
    const std::string& handed = branch.outputs[i].name;
    auto renamed = names.find(handed);
    Node identity;
    identity.name = prefix + "output " + std::to_string(i);
    identity.opType = "Identity";
    identity.opset = ifNode.opset;
    identity.index = ifNode.index;
    identity.inputs = {renamed != names.end() ? renamed->second : handed};
    identity.outputs = {ifNode.outputs[i]};
    out.push_back(std::move(identity));
  }
  return out;
}

class InlineConstantIf final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "If(true, then, else) = then, If(false, then, else) = else: the taken branch's "
            "nodes in the If's place (then fold_constants again)",
            1};
  }

  // Rounds of inlining and folding until no If's condition is constant: an If that tests a
  // shape computed after an earlier If (DeBERTa's next layer, which reads the hidden state
  // the previous layer's inlined branch fed) only folds once that branch is in the graph.
  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    while (true) {
      if (!inlineRound(network.graph, applied)) return Status::ok();
      if (Status s = makeFoldConstants()->apply(network, applied); !s.isOk()) return s;
    }
  }

 private:
  // Inlines every If whose condition is constant now (and the constant Ifs of the
  // branches it inlines); whether there was one.
  static bool inlineRound(Graph& g, std::vector<PassApplication>* applied) {
    bool inlined = false;
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size();) {
      bool condition = false;
      const Node& node = g.nodes[at];
      const Graph* branch = constantCondition(node, *index, &condition)
                                ? node.attrGraph(condition ? "then_branch" : "else_branch")
                                : nullptr;
      if (!branch || branch->outputs.size() != node.outputs.size()) {
        ++at;
        continue;
      }
      const std::string name = node.displayName();
      const Graph taken = *branch;  // the If node (and its attribute) goes
      std::vector<Node> nodes = inlinedBranch(g, static_cast<int>(at), taken);
      g.nodes.erase(g.nodes.begin() + at);
      g.nodes.insert(g.nodes.begin() + at, nodes.begin(), nodes.end());
      applied->push_back({kName, {name}, nodes.empty() ? "" : nodes.front().name});
      index = std::make_unique<GraphIndex>(g);
      inlined = true;  // `at` is the branch's first node now: a nested If is seen next
    }
    return inlined;
  }
};

}  // namespace

std::unique_ptr<Pass> makeInlineConstantIf() {
  return std::make_unique<InlineConstantIf>();
}

}  // namespace kiln::passes
