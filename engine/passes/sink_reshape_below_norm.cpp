// sink_reshape_below_norm: a LayerNormalization or RMSNormalization over the last axis of a
// residual sum's Reshape moves above the Reshape, so fuse_add_layer_norm sees the norm on the
// Add's own output:
//   Norm(Reshape(S = Add(A, B), s)) = Reshape(Norm(S), s)
// when the Reshape keeps the last dim (both its input's and its output's last dims are the
// same known n): a row of n consecutive elements is the same row before and after it, and
// the norm reads and writes rows alone. The exporters write this for pre-norm decoders whose
// MLP runs on rows (OPT: the residual stream [B, S, H] viewed [B * S, H] before the final
// LayerNorm and fc1, the fc2 residual viewed back before the next block's LayerNorm). The
// Reshape stays for its other readers (the residual stream); with none left it goes. The norm
// keeps its name, scale and bias; its Mean and InvStdDev outputs, which would change shape,
// must not exist, and an RMSNormalization's scale (which broadcasts over the whole input) must
// be 1 in every dim but the last. A Reshape of a value no Add writes stays where it is: nothing
// would fuse. Runs after fuse_layer_norm and fuse_rms_norm, before fuse_add_layer_norm.
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "sink_reshape_below_norm";

bool isRowNorm(const Node& norm) {
  const bool domainOk = isDefaultDomain(norm) || norm.domain == kKilnDomain;
  return domainOk && (norm.opType == "LayerNormalization" || norm.opType == "RMSNormalization") &&
         norm.outputs.size() == 1 && !norm.outputs[0].empty() && norm.hasInput(0);
}

// The last dim of `value` as a known number, or -1.
int64_t knownLastDim(const InferredShapes& shapes, const std::string& value) {
  const SymbolicShape* s = shapeOf(shapes, value);
  if (!s || s->empty() || !s->back().isConst()) return -1;
  return s->back().constValue();
}

// The Reshape that norm `at` reads, when the pair moves; -1 otherwise.
int reshapeBefore(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at) {
  const Node& norm = g.nodes[at];
  if (!isRowNorm(norm)) return -1;
  const int r = index.producer(norm.inputs[0]);
  if (r < 0) return -1;
  const Node& reshape = g.nodes[r];
  if (!rewrite::isOnnxOpType(reshape, "Reshape") || reshape.outputs.size() != 1 ||
      !reshape.hasInput(0) || !reshape.hasInput(1))
    return -1;
  const int add = index.producer(reshape.inputs[0]);
  if (add < 0 || !rewrite::isOnnxOpType(g.nodes[add], "Add")) return -1;
  const SymbolicShape* out = shapeOf(shapes, reshape.outputs[0]);
  if (!out || out->empty()) return -1;
  const int64_t axis = norm.attrInt("axis", -1);
  if (axis != -1 && axis != static_cast<int64_t>(out->size()) - 1) return -1;
  const int64_t n = knownLastDim(shapes, reshape.outputs[0]);
  if (n < 1 || knownLastDim(shapes, reshape.inputs[0]) != n) return -1;
  // RMSNormalization's scale broadcasts over the whole input (LayerNormalization's parameters
  // only over the normalized row): a scale with a leading dim other than 1 would meet other rows.
  if (norm.opType == "RMSNormalization") {
    const SymbolicShape* scale = norm.hasInput(1) ? shapeOf(shapes, norm.inputs[1]) : nullptr;
    if (!scale) return -1;
    for (size_t d = 0; d + 1 < scale->size(); ++d)
      if (!(*scale)[d].isConst() || (*scale)[d].constValue() != 1) return -1;
  }
  return r;
}

class SinkReshapeBelowNorm final : public Pass {
 public:
  PassInfo info() const override {
    return {kName, "Norm(Reshape(Add, s)) keeping the last dim -> Reshape(Norm(Add), s)", 1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    const InferredShapes shapes = inferredShapesOrNone(network);
    Graph& g = network.graph;
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      const int r = reshapeBefore(g, *index, shapes, static_cast<int>(at));
      if (r < 0) continue;
      const Node reshape = g.nodes[r];
      Node& norm = g.nodes[at];
      // The norm reads the sum and writes it in the sum's shape; a copy of the Reshape (the
      // same target, so the same dims) gives the norm's old output its old shape.
      const std::string rows = rewrite::freshName(g, norm.outputs[0] + "_unshaped");
      Node back = rewrite::madeNode(g, reshape, norm.displayName() + " (reshaped)", "Reshape",
                                    {rows, reshape.inputs[1]}, {reshape.displayName()}, kName);
      if (reshape.attributes.count("allowzero"))
        back.attributes["allowzero"] = reshape.attributes.at("allowzero");
      back.outputs[0] = norm.outputs[0];
      norm.inputs[0] = reshape.inputs[0];
      norm.outputs[0] = rows;
      if (norm.attributes.count("axis")) norm.attributes["axis"] = intAttribute(-1);
      applied->push_back({kName, {reshape.displayName(), norm.displayName()}, ""});
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at) + 1, std::move(back));
      // A Reshape the norm alone read goes, so the sum is not kept alive for nothing.
      if (index->soleReader(reshape.outputs[0]) == static_cast<int>(at)) {
        g.nodes.erase(g.nodes.begin() + r);
        --at;
      }
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeSinkReshapeBelowNorm() {
  return std::make_unique<SinkReshapeBelowNorm>();
}

}  // namespace kiln::passes
