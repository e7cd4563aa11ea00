// fuse_masked_fill_softmax: a softmax of masked scores (torch's masked_fill before softmax) as
// one ScaledMaskedSoftmax row kernel that reads the mask at its own (broadcast) size:
//   Softmax(Where(cond, F, X)) -> ScaledMaskedSoftmax(X, Where(cond, F, 0); mask_replaces = 1)
//   Softmax(Where(cond, X, F)) -> ScaledMaskedSoftmax(X, Where(cond, 0, F); mask_replaces = 1)
// With mask_replaces a nonzero mask value is the score itself: v = M != 0 ? M : X, so every
// score is the Where's (F where masked, X elsewhere; X at a masked position is never read,
// an inf or NaN there included) for any scalar fill F != 0. The Where then computes the mask
// at cond's size instead of writing the whole score tensor. DeBERTa's XSoftmax at batch 128
// on an H200: the Where 0.175 ms and the Softmax 0.106 ms per layer -> 0.013 + 0.081.
// Conditions: the Where is read by the Softmax (last axis) alone; F a scalar constant, X not
// a constant. fuse_attention leaves such a softmax alone (its masks add). Runs right before
// fuse_softmax_scale_mask.
#include <memory>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fuse_masked_fill_softmax";

bool lastAxisSoftmax(const Node& n) {
  return isOnnxOp(n, "Softmax", 1) && n.attrInt("axis", n.opset < 13 ? 1 : -1) == -1;
}

// The slot (1 or 2) of the Where's scalar nonzero constant fill across from a computed value,
// or 0.
int fillSlot(const Node& where, const GraphIndex& index) {
  for (int slot : {1, 2}) {
    double fill = 0.0;
    if (scalarValue(index.constant(where.inputs[slot]), &fill) && fill != 0.0 &&
        !index.constant(where.inputs[3 - slot]))
      return slot;
  }
  return 0;
}

class FuseMaskedFillSoftmax final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Softmax(Where(cond, F, X)) -> ScaledMaskedSoftmax(X, Where(cond, F, 0)) with the "
            "mask replacing the score: the mask at its own size, one row kernel",
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
      const int slot = fillSlot(where, *index);
      if (slot == 0) continue;
      const std::string x = where.inputs[3 - slot];
      const Tensor& fill = *index->constant(where.inputs[slot]);
      const std::string zero = freshName(g, where.inputs[slot] + "_zero");
      g.initializers[zero] = Tensor(fill.type(), {});  // a new tensor holds zeros
      // The Where computes the mask under a fresh name; the Softmax becomes the fused node.
      const std::string mask = freshName(g, scores + "_mask");
      where.inputs[3 - slot] = zero;
      where.outputs = {mask};
      Node& softmax = g.nodes[at];
      const std::string name = where.displayName() + " + " + softmax.displayName();
      softmax.name = name;
      softmax.opType = "ScaledMaskedSoftmax";
      softmax.domain = kKilnDomain;
      softmax.opset = 1;
      softmax.inputs = {x, mask};
      softmax.attributes.erase("axis");
      softmax.attributes["axis"] = intAttribute(-1);
      softmax.attributes["scale"] = floatAttribute(1.f);
      softmax.attributes["mask_replaces"] = intAttribute(1);
      network.opsets[kKilnDomain] = 1;
      applied->push_back({kName, {where.displayName(), name}, name});
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseMaskedFillSoftmax() {
  return std::make_unique<FuseMaskedFillSoftmax>();
}

}  // namespace kiln::passes
