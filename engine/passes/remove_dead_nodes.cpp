// remove_dead_nodes: a node none of whose outputs is read (by a node or as a graph
// output) does not change the graph's outputs, so it goes; repeated until nothing
// changes. It runs last, after fusions have left the scalars of their patterns
// (Constant nodes) without readers.
#include "passes/fusion_passes.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "remove_dead_nodes";

class RemoveDeadNodes final : public Pass {
 public:
  PassInfo info() const override {
    return {kName, "nodes whose outputs nobody reads are removed (outputs unchanged)", 1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    for (bool changed = true; changed;) {
      changed = false;
      const GraphIndex index(g);
      for (size_t i = g.nodes.size(); i-- > 0;) {
        bool read = false;
        for (const std::string& out : g.nodes[i].outputs)
          read = read || (!out.empty() && !index.readers(out).empty());
        if (read) continue;
        applied->push_back({kName, {g.nodes[i].displayName()}, ""});
        g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
      }
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeRemoveDeadNodes() {
  return std::make_unique<RemoveDeadNodes>();
}

}  // namespace kiln::passes
