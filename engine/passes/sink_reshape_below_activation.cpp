// sink_reshape_below_activation: an activation after a GEMM's Reshape moves above it,
// so fuse_matmul_bias_activation sees the activation on the GEMM's own output:
//   act(Reshape(G, s)) = Reshape(act(G), s)
// An activation is elementwise, so it commutes with any reshape. G is written by a
// MatMul, a Gemm or an Add (a GEMM's bias), read by the Reshape alone; the Reshape's
// output is read by the activation alone; act is one node of FusedMatMul's activation
// set (activation_tail.h: Gelu of either form after fuse_gelu, Relu, LeakyRelu, Sigmoid,
// Tanh, HardSigmoid, HardSwish, Clip with constant bounds). The exporters write this for GPT-2's
// Conv1D (addmm on the rows, then a view back to [batch, sequence, features], then the GELU). Runs
// after fuse_gelu and before fuse_matmul_bias_activation. Both nodes keep their names, attributes
// and other inputs; only their order and the value between them change.
#include "passes/activation_tail.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "sink_reshape_below_activation";

bool writtenByGemm(const Graph& g, const GraphIndex& index, const std::string& value) {
  const int producer = index.producer(value);
  if (producer < 0) return false;
  const Node& p = g.nodes[producer];
  return rewrite::isOnnxOpType(p, "MatMul") || rewrite::isOnnxOpType(p, "Gemm") ||
         rewrite::isOnnxOpType(p, "Add");
}

// The activation reading Reshape `at`'s output, or -1 when the pair does not match.
int activationAfter(const Graph& g, const GraphIndex& index, int at) {
  const Node& reshape = g.nodes[at];
  if (!rewrite::isOnnxOpType(reshape, "Reshape") || reshape.outputs.size() != 1 ||
      !reshape.hasInput(0) || index.soleReader(reshape.inputs[0]) != at ||
      !writtenByGemm(g, index, reshape.inputs[0]))
    return -1;
  // The activations FusedMatMul takes (activation_tail.h), as one node: a chain such as
  // SiLU reads its input twice and would not move as one node.
  ActivationTail tail;
  if (!matchActivationTail(g, index, reshape.outputs[0], &tail) || tail.nodes.size() != 1 ||
      g.nodes[tail.nodes[0]].inputs[0] != reshape.outputs[0])
    return -1;
  return tail.nodes[0];
}

class SinkReshapeBelowActivation final : public Pass {
 public:
  PassInfo info() const override {
    return {kName, "act(Reshape(GEMM output, s)) -> Reshape(act(GEMM output), s)", 1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      const int act = activationAfter(g, *index, static_cast<int>(at));
      if (act < 0) continue;
      // The activation takes the Reshape's place (its input is written before it) and
      // the Reshape the activation's (its shape input is written before the old place).
      Node reshape = g.nodes[at];
      Node activation = g.nodes[act];
      const std::string between = rewrite::freshName(g, activation.outputs[0] + "_unshaped");
      activation.inputs[0] = reshape.inputs[0];
      reshape.inputs[0] = between;
      reshape.outputs[0] = activation.outputs[0];
      activation.outputs[0] = between;
      applied->push_back({kName, {reshape.displayName(), activation.displayName()}, ""});
      g.nodes[at] = std::move(activation);
      g.nodes[act] = std::move(reshape);
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeSinkReshapeBelowActivation() {
  return std::make_unique<SinkReshapeBelowActivation>();
}

}  // namespace kiln::passes
