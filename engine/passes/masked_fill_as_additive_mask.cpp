// masked_fill_as_additive_mask: a masked_fill of attention scores with the type's lowest value
// (or -inf) as the additive mask it equals, so the attention fusion (whose masks add) takes
// the block:
//   Where(cond, S, F) -> Add(S, Where(cond, 0, F))      (and Where(cond, F, S) mirrored)
// S the scores (a MatMul, or a Mul / Div whose first input a MatMul writes), F a scalar
// constant that is -inf, or at most -2^127 in a float32 or bfloat16 tensor (torch's
// finfo(float32).min is -(2 - 2^-23) 2^127). Exact: s + F rounds to F for every finite s with
// |s| < 2^102 (F's neighbour toward zero is 2^103 away), and s + -inf is -inf, so every masked
// score is F and every other one s, as before; a row every mask hides keeps its value (each
// score F, or -inf). GPT-Neo's attention (`where(causal, scores, finfo.min)`, then the padding
// mask added) stayed unfused (docs/benchmarks.md, eleventh session); with this pass and
// merge_additive_masks it is one FusedAttention. Conditions: the Where is read by one node
// alone, and its output reaches a last-axis Softmax through Adds alone (the softmax directly,
// or additive masks after it), each read by the next alone; S has the Where's shape and type
// (cond and F only broadcast). A Where straight before the softmax is taken too: the attention
// fusion then takes the block where fuse_masked_fill_softmax would make a separate row kernel.
// A constant cond (a causal mask at a fixed shape) makes the mask a constant here. Runs after
// the GEMM fusion and before merge_additive_masks and the softmax fusions.
// Known limit (twelfth session's review, not yet fixed): Kiln's own flash kernels scale the mask
// by log2(e) in float, so a finite fill below -FLT_MAX / log2(e) becomes -inf there and a row
// every mask hides is NaN in a float32 / bfloat16 build (cuDNN's kernel and the CPU keep it
// uniform); in a float16 build the fill is -inf already.
#include <cmath>
#include <set>
#include <string>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "masked_fill_as_additive_mask";

// F absorbs every score it is added to (above): -inf, or <= -2^127 in a type whose lowest
// finite value is about -2^128.
bool absorbingFill(const Tensor* fill) {
  double f = 0.0;
  if (!fill || !scalarValue(fill, &f)) return false;
  if (std::isinf(f) && f < 0) return true;
  const bool wideExponent =
      fill->type() == DataType::kFloat32 || fill->type() == DataType::kBFloat16;
  return wideExponent && f <= -std::ldexp(1.0, 127);
}

// The Where's output reaches a last-axis Softmax through Adds alone, each read by the next.
bool feedsSoftmaxThroughAdds(const Graph& g, const GraphIndex& index, std::string value) {
  for (int hops = 0; hops < 4; ++hops) {
    const int reader = index.soleReader(value);
    if (reader < 0) return false;
    const Node& n = g.nodes[reader];
    if (isOnnxOp(n, "Softmax", 1)) return n.attrInt("axis", n.opset < 13 ? 1 : -1) == -1;
    if (!isOnnxOp(n, "Add", 2)) return false;
    value = n.outputs[0];
  }
  return false;
}

// The slot (1 or 2) of the Where holding the scores, with an absorbing fill in the other, or 0.
int scoresSlot(const Graph& g, const GraphIndex& index, const Shapes& shapes, const Node& where) {
  for (int slot : {1, 2}) {
    if (attentionScores(g, index, where.inputs[slot]) &&
        absorbingFill(index.constant(where.inputs[3 - slot])) &&
        sameShapeAndType(shapes, where.inputs[slot], where.outputs[0]))
      return slot;
  }
  return 0;
}

// Where(cond, 0, F) (scores in slot 1) or Where(cond, F, 0) (slot 2) at cond's shape, in F's type.
Tensor maskOf(const Tensor& cond, int scoresSlot, const Tensor& fill) {
  double f = 0.0;
  scalarValue(&fill, &f);
  Tensor mask(DataType::kFloat64, cond.shape());
  double* m = mask.data<double>();
  for (int64_t i = 0; i < cond.numel(); ++i)
    m[i] = (cond.valueAsDouble(i) != 0.0) == (scoresSlot == 1) ? 0.0 : f;
  return castTensor(mask, fill.type());
}

class MaskedFillAsAdditiveMask final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Where(cond, S, F) -> Add(S, Where(cond, 0, F)) for attention scores S before a "
            "softmax, F -inf or float32's lowest (a masked_fill as the additive mask it equals)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // A rewrite keeps every value's name and shape but the Where's output, which becomes the
    // Add's: one inference serves every match; the index is rebuilt after each.
    const Shapes shapes = inferredShapesOrNone(network);
    std::set<std::string> replaced;
    for (bool changed = true; changed;) {
      changed = false;
      const GraphIndex index(g);
      for (int at = 0; at < static_cast<int>(g.nodes.size()) && !changed; ++at) {
        const Node& where = g.nodes[at];
        if (!isOnnxOp(where, "Where", 3) || !feedsSoftmaxThroughAdds(g, index, where.outputs[0]))
          continue;
        const int slot = scoresSlot(g, index, shapes, where);
        if (slot == 0) continue;
        const std::string scores = where.inputs[slot];
        const Tensor& fill = *index.constant(where.inputs[3 - slot]);
        const std::string mask = freshName(g, where.outputs[0] + "_mask");
        Node add = madeNode(g, where, where.displayName() + " (as mask)", "Add", {scores, mask},
                            {where.displayName()}, kName);
        add.outputs = where.outputs;
        applied->push_back({kName, {where.displayName()}, add.name});
        if (const Tensor* cond = index.constant(where.inputs[0])) {
          // A constant condition (a causal mask at a fixed shape): the mask is computed here;
          // the condition and the fill go when nothing else reads them.
          g.initializers[mask] = maskOf(*cond, slot, fill);
          replaced.insert(where.inputs[0]);
          replaced.insert(where.inputs[3 - slot]);
          g.nodes[at] = std::move(add);
        } else {
          const std::string zero = freshName(g, where.inputs[3 - slot] + "_zero");
          g.initializers[zero] = Tensor(fill.type(), {});  // a new tensor holds zeros
          Node& rewritten = g.nodes[at];
          rewritten.inputs[slot] = zero;
          rewritten.outputs = {mask};
          g.nodes.insert(g.nodes.begin() + at + 1, std::move(add));
        }
        changed = true;
      }
    }
    dropUnreadInitializers(g, replaced);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeMaskedFillAsAdditiveMask() {
  return std::make_unique<MaskedFillAsAdditiveMask>();
}

}  // namespace kiln::passes
