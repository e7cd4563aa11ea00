// reduce_as_global_pool: a mean or maximum over every spatial axis, keeping dims, is the
// global pool of the same input:
//   ReduceMean(X [N, C, H, W], axes = {2, 3}, keepdims = 1) = GlobalAveragePool(X)
//   ReduceMax (X, same axes)                                 = GlobalMaxPool(X)
// (axes in any order, negative or not; float types). Only 4-D: a rank-3 mean over the
// last axis is a transformer's LayerNorm statistics over its hidden axis as often as a
// pool, and fuse_layer_norm must still see it. timm writes the
// squeeze-excitation pool as `x.mean((2, 3), keepdim=True)` (EfficientNetV2, RegNet,
// ResNeSt); as a ReduceMean it ran channels-first, with a reformat of the convolutions'
// NHWC output before each one, while channels_last_layout keeps a global pool inside the
// NHWC region and its kernel reads that layout. With keepdims = 0 (timm's and
// torchvision's heads, `x.mean((2, 3))`) a Flatten(axis 1) of the pool follows. A mean over
// other axes, or with noop_with_empty_axes, stays.
#include <algorithm>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "reduce_as_global_pool";

// The global pool `node` equals, or nullptr.
const char* globalPoolOf(const Node& node, const GraphIndex& index, const Shapes& shapes) {
  const bool mean = isOnnxOpType(node, "ReduceMean"), max = isOnnxOpType(node, "ReduceMax");
  if ((!mean && !max) || node.outputs.size() != 1 || !node.hasInput(0)) return nullptr;
  const DataType type = typeOf(shapes, node.inputs[0]);
  if (type != DataType::kFloat32 && type != DataType::kFloat16 && type != DataType::kBFloat16)
    return nullptr;
  const SymbolicShape* s = shapeOf(shapes, node.inputs[0]);
  if (!s || s->size() != 4) return nullptr;
  const int64_t rank = static_cast<int64_t>(s->size());
  std::vector<int64_t> axes;
  // ReduceMean and ReduceMax take their axes as an input since opset 18.
  if (node.opset < 18) {
    axes = node.attrInts("axes");
  } else if (node.hasInput(1)) {
    if (!constantInts(index.constant(node.inputs[1]), &axes)) return nullptr;
  }
  if (axes.empty()) return nullptr;  // every axis, or none (noop_with_empty_axes)
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return nullptr;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::unique(axes.begin(), axes.end()) != axes.end()) return nullptr;
  if (axes != std::vector<int64_t>{2, 3}) return nullptr;
  return mean ? "GlobalAveragePool" : "GlobalMaxPool";
}

class ReduceAsGlobalPool final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "ReduceMean / ReduceMax over H and W -> GlobalAveragePool / GlobalMaxPool "
            "(and a Flatten when the dims are dropped)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // Retyping a node renames no value, so one inference serves every match.
    const Shapes shapes = inferredShapesOrNone(network);
    const GraphIndex index(g);
    std::vector<Node> nodes;
    for (Node& node : g.nodes) {
      const char* pool = globalPoolOf(node, index, shapes);
      if (!pool) {
        nodes.push_back(std::move(node));
        continue;
      }
      const bool keepDims = node.attrInt("keepdims", 1) != 0;
      node.opType = pool;
      node.domain.clear();
      node.inputs.resize(1);
      node.attributes.erase("axes");
      node.attributes.erase("keepdims");
      node.attributes.erase("noop_with_empty_axes");
      applied->push_back({kName, {node.displayName()}, ""});
      if (keepDims) {
        nodes.push_back(std::move(node));
        continue;
      }
      // keepdims = 0: the pool's [N, C, 1, 1] flattened to [N, C].
      const std::string y = node.outputs[0];
      const std::string pooled = freshName(g, y + "_pooled");
      node.outputs[0] = pooled;
      Node flatten = madeNode(g, node, node.displayName() + " (drop H, W)", "Flatten", {pooled},
                              {node.displayName()}, kName);
      flatten.outputs = {y};
      flatten.attributes["axis"] = intAttribute(1);
      nodes.push_back(std::move(node));
      nodes.push_back(std::move(flatten));
    }
    g.nodes = std::move(nodes);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeReduceAsGlobalPool() {
  return std::make_unique<ReduceAsGlobalPool>();
}

}  // namespace kiln::passes
