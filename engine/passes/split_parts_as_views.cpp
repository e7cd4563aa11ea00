// split_parts_as_views: a Split along an axis with only dims of 1 before it cuts its input into
// contiguous runs, so each part is one ai.kiln StridedCopy of a run
//   Split(X; axis a, sizes s_i) -> part_i = StridedCopy(X; shape = X's with s_i at a,
//                                   strides = X's, offset = (s_0 + ... + s_{i-1}) * inner)
// (inner: the elements of X's dims after a), which the CUDA runtime plans as a view of X's
// bytes, no kernel at all (GpuKernelEntry::viewOffset); the CPU reference copies each part as
// the Split did. timm's packed Q/K/V taken apart by `unbind(0)` after the head permute, where the
// attention does not read them through strides (SwinV2's normalized Q and K): the Split copied
// all three parts (0.79 ms of SwinV2-T at batch 128 on an H200).
// Conditions: X's shape static, the sizes constant, every dim before the axis 1, each part's
// offset a multiple of 128 elements (so a view starts on the arena's 256-byte alignment in
// 16- and 32-bit storage; a part the runtime cannot view is copied, one copy a part);
// X not a string tensor. An output nothing reads gets no copy. Runs after fold_split_views,
// which folds the parts read through view chains that copy.
#include <memory>
#include <string>
#include <vector>

#include "ops/split_params.h"
#include "ops/strided_copy_params.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "split_parts_as_views";
constexpr int64_t kViewElements = 128;  // 256 bytes of 16-bit storage

// The StridedCopy nodes that replace Split `split`, or none (a Split that stays).
std::vector<Node> partsAsCopies(const Node& split, const GraphIndex& index,
                                const InferredShapes& shapes) {
  if (!isOnnxOpType(split, "Split") || split.outputs.empty()) return {};
  const std::string& x = split.inputs[0];
  Shape dims;
  const DataType type = typeOf(shapes, x);
  if (!staticShape(shapes, x, &dims) || dims.empty() || type == DataType::kString ||
      type == DataType::kUndefined)
    return {};
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = split.attrInt("axis", 0);
  if (axis < -rank || axis >= rank) return {};
  if (axis < 0) axis += rank;
  for (int64_t d = 0; d < axis; ++d)
    if (dims[d] != 1) return {};
  const bool fromInput = ops::splitSizesFromInput(split.opset) && split.hasInput(1);
  auto sizes = ops::splitSizes(split, split.opset, dims[axis], split.outputs.size(), fromInput,
                               [&](std::vector<int64_t>* out) {
                                 return constantInts(index.constant(split.inputs[1]), out)
                                            ? Status::ok()
                                            : invalidArgument("sizes not constant");
                               });
  if (!sizes.isOk()) return {};
  // X's strides (and the parts' offsets below) in int64 without wrapping, whatever shape a
  // hostile model declares.
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = rank - 1; d > 0; --d)
    if (dims[d] < 0 || __builtin_mul_overflow(strides[d], dims[d], &strides[d - 1])) return {};
  const int64_t inner = strides[axis];
  std::vector<Node> parts;
  int64_t start = 0;
  for (size_t i = 0; i < split.outputs.size(); ++i) {
    int64_t offset = 0;
    if (__builtin_mul_overflow(start, inner, &offset)) return {};
    start += sizes.value()[i];  // the sizes add up to the dim (ops::splitSizes checks)
    if (offset % kViewElements != 0) return {};
    if (split.outputs[i].empty() || index.readers(split.outputs[i]).empty()) continue;
    Node copy;
    copy.opType = ops::kStridedCopyOp;
    copy.domain = kKilnDomain;
    copy.opset = 1;
    copy.name = split.displayName() + " (part " + std::to_string(i) + ")";
    copy.index = split.index;
    copy.inputs = {x};
    copy.outputs = {split.outputs[i]};
    Shape shape = dims;
    shape[axis] = sizes.value()[i];
    copy.attributes["shape"] = intsAttribute(shape);
    copy.attributes["strides"] = intsAttribute(strides);
    copy.attributes["offset"] = intAttribute(offset);
    copy.attributes[kSourceNodesAttribute] = stringsAttribute({split.displayName()});
    copy.attributes[kFusionPassAttribute] = stringAttribute(kName);
    parts.push_back(std::move(copy));
  }
  return parts;
}

class SplitPartsAsViews final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Split along an axis with only dims of 1 before it -> one StridedCopy a part (a "
            "contiguous run: a view on the CUDA backend)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // The parts keep the Split's output names: one inference serves.
    const InferredShapes shapes = inferredShapesOrNone(network);
    const GraphIndex index(g);
    std::vector<Node> nodes;
    for (Node& node : g.nodes) {
      std::vector<Node> parts = partsAsCopies(node, index, shapes);
      if (parts.empty()) {
        nodes.push_back(std::move(node));
        continue;
      }
      for (Node& part : parts) {
        applied->push_back({kName, {node.displayName()}, part.name});
        nodes.push_back(std::move(part));
      }
      network.opsets.try_emplace(kKilnDomain, 1);
    }
    g.nodes = std::move(nodes);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeSplitPartsAsViews() {
  return std::make_unique<SplitPartsAsViews>();
}

}  // namespace kiln::passes
