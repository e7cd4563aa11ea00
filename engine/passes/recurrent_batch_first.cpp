// recurrent_batch_first: a recurrent layer (LSTM, GRU, RNN; opset >= 14, layout 0) whose X is
// Transpose(Z, [1, 0, 2]) reads Z as its batch-major input instead (layout 1):
//   RNN(Transpose(Z, [1, 0, 2]), ..., h0, c0) = Y, Y_h, Y_c  becomes
//   RNN'(Z, ..., Transpose(h0, [1, 0, 2]), Transpose(c0, [1, 0, 2]); layout = 1) = Y', Y_h', Y_c'
//   Y = Transpose(Y', [1, 2, 0, 3]), Y_h = Transpose(Y_h', [1, 0, 2]), Y_c likewise,
// the ONNX definition of layout 1 (X [batch, seq, input], Y [batch, seq, dirs, hidden], the
// states [batch, dirs, hidden]). PyTorch exports a batch_first=True LSTM / GRU / RNN as the
// layout-0 op between such Transposes; the pass moves them to the outputs, where the
// transpose and reshape merges and fold_view_chains meet the model's own permutes back to
// batch-major: Sequencer2D's horizontal LSTMs (a Reshape of [B, H, W, C] to [B * H, W, C])
// are then read and written in place, no copy on either side. The input Transpose stays for
// its other readers. Kiln's GPU kernels take both layouts (the persistent LSTM included).
#include <memory>
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "recurrent_batch_first";

bool isRecurrent(const Node& node) {
  return isDefaultDomain(node) &&
         (node.opType == "LSTM" || node.opType == "GRU" || node.opType == "RNN");
}

class RecurrentBatchFirst final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "LSTM / GRU / RNN(Transpose(Z, [1, 0, 2])) -> the layer with layout = 1 reading Z, "
            "Transposes on its outputs (batch_first exports)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      if (!isRecurrent(g.nodes[at]) || g.nodes[at].opset < 14 ||
          g.nodes[at].attrInt("layout", 0) != 0 || g.nodes[at].inputs.empty())
        continue;
      const int transposeAt = index->producer(g.nodes[at].inputs[0]);
      if (transposeAt < 0) continue;
      const Node& transpose = g.nodes[transposeAt];
      if (!isOnnxOp(transpose, "Transpose", 1) ||
          transpose.attrInts("perm") != std::vector<int64_t>{1, 0, 2})
        continue;
      const std::string source = transpose.inputs[0];
      Node rnn = g.nodes[at];
      const std::vector<std::string> sources = {transpose.displayName(), rnn.displayName()};
      auto transposeNode = [&](const std::string& suffix, const std::string& input,
                               const std::vector<int64_t>& perm) {
        Node t =
            madeNode(g, rnn, freshName(g, rnn.name + suffix), "Transpose", {input}, sources, kName);
        t.attributes["perm"] = intsAttribute(perm);
        return t;
      };
      // The initial states (inputs 5 and 6) to batch-major.
      std::vector<Node> before, after;
      const char* stateNames[] = {"_initial_h_batch_first", "_initial_c_batch_first"};
      for (size_t i = 5; i <= 6 && i < rnn.inputs.size(); ++i) {
        if (rnn.inputs[i].empty()) continue;
        before.push_back(transposeNode(stateNames[i - 5], rnn.inputs[i], {1, 0, 2}));
        rnn.inputs[i] = before.back().outputs[0];
      }
      // Each output read back in the layout-0 order its readers expect, under its own name.
      const char* outputNames[] = {"_y_batch_first", "_y_h_batch_first", "_y_c_batch_first"};
      for (size_t i = 0; i < rnn.outputs.size() && i < 3; ++i) {
        if (rnn.outputs[i].empty()) continue;
        const std::string original = rnn.outputs[i];
        rnn.outputs[i] = freshName(g, original + "_batch_first");
        Node t = transposeNode(
            outputNames[i], rnn.outputs[i],
            i == 0 ? std::vector<int64_t>{1, 2, 0, 3} : std::vector<int64_t>{1, 0, 2});
        t.outputs = {original};
        after.push_back(std::move(t));
      }
      rnn.inputs[0] = source;
      rnn.attributes["layout"] = intAttribute(1);
      applied->push_back({kName, sources, rnn.displayName()});
      g.nodes[at] = std::move(rnn);
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at) + 1, after.begin(),
                     after.end());
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at), before.begin(),
                     before.end());
      at += before.size() + after.size();
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeRecurrentBatchFirst() {
  return std::make_unique<RecurrentBatchFirst>();
}

}  // namespace kiln::passes
