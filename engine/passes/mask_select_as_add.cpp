// mask_select_as_add: a softmax's masking Where becomes the additive mask the fused softmax
// takes, computed at the mask's own (broadcast) size:
//   Softmax(Where(cond, F, X)) -> Softmax(Add(X, Where(cond, F, 0)))
//   Softmax(Where(cond, X, F)) -> Softmax(Add(X, Where(cond, 0, F)))
// F is a constant at most -1e30 (float32's lowest, as torch's masked_fill(finfo.min) exports,
// or -inf): then X + F rounds to F for every |X| < 1e22, so each masked position is F on
// both sides and every softmax value is the same (a fully masked row too: all F, uniform).
// fuse_softmax_scale_mask then takes the Add: one row kernel reads X and the small mask
// instead of a Where writing the whole score tensor. DeBERTa's XSoftmax: 0.175 ms for the
// Where and 0.106 ms for the Softmax per layer at batch 128 on an H200.
// Conditions: the Where is read by the Softmax (last axis) alone; F's type is X's.
// Runs right before fuse_softmax_scale_mask.
#include <algorithm>
#include <memory>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "mask_select_as_add";
constexpr double kMaskingFill = -1e30;

bool lastAxisSoftmax(const Node& n) {
  return isOnnxOp(n, "Softmax", 1) && n.attrInt("axis", n.opset < 13 ? 1 : -1) == -1;
}

class MaskSelectAsAdd final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Softmax(Where(cond, F, X)) -> Softmax(X + Where(cond, F, 0)) for a masking fill F "
            "<= -1e30: the mask at its own size, for the fused softmax",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      if (!lastAxisSoftmax(g.nodes[at])) continue;
      const std::string scores = g.nodes[at].inputs[0];
      const int whereAt = index->producer(scores);
      if (whereAt < 0 || index->soleReader(scores) != static_cast<int>(at)) continue;
      Node& where = g.nodes[whereAt];
      if (!isOnnxOp(where, "Where", 3)) continue;
      // The fill's slot (1: masked where cond holds, 2: where it does not).
      int fillSlot = 0;
      double fill = 0.0;
      for (int slot : {1, 2}) {
        const Tensor* c = index->constant(where.inputs[slot]);
        if (scalarValue(c, &fill) && fill <= kMaskingFill &&
            !index->constant(where.inputs[3 - slot])) {
          fillSlot = slot;
          break;
        }
      }
      if (fillSlot == 0) continue;
      const std::string x = where.inputs[3 - fillSlot];
      const Tensor& fillTensor = *index->constant(where.inputs[fillSlot]);
      const std::string zero = freshName(g, where.inputs[fillSlot] + "_zero");
      Tensor zeroTensor(fillTensor.type(), {});
      std::fill_n(static_cast<char*>(zeroTensor.rawData()), zeroTensor.byteSize(), 0);
      g.initializers[zero] = std::move(zeroTensor);
      const std::string mask = freshName(g, where.outputs[0] + "_mask");
      const std::string name = where.displayName();
      // The Where computes the mask; an Add after it takes its place before the Softmax.
      Node add = madeNode(g, where, name + " (as add)", "Add", {x, mask}, {name}, kName);
      add.outputs = {scores};
      where.inputs[3 - fillSlot] = zero;
      where.outputs = {mask};
      g.nodes.insert(g.nodes.begin() + whereAt + 1, std::move(add));
      applied->push_back({kName, {name}, name + " (as add)"});
      ++at;  // the Softmax moved one place on
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeMaskSelectAsAdd() {
  return std::make_unique<MaskSelectAsAdd>();
}

}  // namespace kiln::passes
