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
// A Split of a Transpose's output that nothing else reads, whose read parts hold at most 3/4 of
// it (SwinV2's and XCiT's Q and K taken out of the permuted Q/K/V while the attention reads V
// through strides before the permute), instead reads each part from the Transpose's input, the
// permutation in its strides
//   part_i = StridedCopy(Y; shape = part i's, strides_j = Y's stride of dim perm[j],
//                        offset = (s_0 + ... + s_{i-1}) * Y's stride of dim perm[a])
// so only the parts read move, once, where the Transpose moved all of X and the parts were views
// (SwinV2-T: Q and K, 2/3 of the permute's traffic). Any axis; Y's shape static; no offset
// condition (such a part is a copy on every backend); remove_dead_nodes drops the Transpose.
// A Gather of one constant index along an axis with only dims of 1 before it (`qkv[0]` of a
// packed Q/K/V no attention reads through strides: CaiT's talking-heads blocks) is a run too:
//   Gather(X, i; axis a) = StridedCopy(X; shape = the Gather's output, contiguous strides,
//                                      offset = i * inner)
// for a scalar index (the axis dropped) or one of shape [1] (kept as a dim of 1), i negative
// counted from the end; the same offset condition as a Split's parts; floating-point data and a
// run of at least 128 elements (a Gather of a Shape's output stays a Gather, whose shape rule
// carries the symbolic value the Reshapes after it need).
#include <memory>
#include <optional>
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

// Row-major element strides of `dims`, or false when a product overflows int64 (whatever
// shape a hostile model declares).
bool contiguousStrides(const Shape& dims, std::vector<int64_t>* strides) {
  strides->assign(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;)
    if (dims[d] < 0 || __builtin_mul_overflow((*strides)[d], dims[d], &(*strides)[d - 1]))
      return false;
  return true;
}

// Where a Split's parts read from: X itself (its row-major strides), or the input of the
// Transpose that writes X, with the permutation folded into the strides.
struct PartSource {
  std::string value;
  std::vector<int64_t> strides;  // per dim of X
  std::vector<std::string> sourceNodes;
};

// The Transpose's input as the parts' source, for a Split of X = Transpose(Y) that is X's only
// reader, when the parts read hold at most 3/4 of X (`sizes` along `axis`); else nullopt.
std::optional<PartSource> transposeSource(const Node& split, const GraphIndex& index,
                                          const Graph& graph, const InferredShapes& shapes,
                                          const Shape& dims, int64_t axis,
                                          const std::vector<int64_t>& sizes) {
  const std::string& x = split.inputs[0];
  const int producer = index.producer(x);
  if (producer < 0 || index.readers(x).size() != 1) return std::nullopt;
  const Node& transpose = graph.nodes[producer];
  if (!isOnnxOp(transpose, "Transpose", 1)) return std::nullopt;
  const std::string& y = transpose.inputs[0];
  Shape yDims;
  if (!staticShape(shapes, y, &yDims) || yDims.size() != dims.size()) return std::nullopt;
  const size_t rank = dims.size();
  std::vector<int64_t> perm = transpose.attrInts("perm");
  if (perm.empty())
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != rank || !isPermutation(perm)) return std::nullopt;
  for (size_t j = 0; j < rank; ++j)
    if (yDims[perm[j]] != dims[j]) return std::nullopt;
  std::vector<int64_t> yStrides;
  if (!contiguousStrides(yDims, &yStrides)) return std::nullopt;
  // The parts read against all of X, counted in rows of X's dims other than the axis.
  int64_t read = 0;
  for (size_t i = 0; i < split.outputs.size(); ++i)
    if (!split.outputs[i].empty() && !index.readers(split.outputs[i]).empty()) read += sizes[i];
  // In 128 bits: no wrap whatever dims a model declares (inference caps them today).
  if (static_cast<__int128>(read) * 4 > static_cast<__int128>(dims[axis]) * 3) return std::nullopt;
  PartSource source{y, {}, {transpose.displayName(), split.displayName()}};
  for (size_t j = 0; j < rank; ++j) source.strides.push_back(yStrides[perm[j]]);
  return source;
}

// The StridedCopy that replaces Gather `gather` (one constant index, only dims of 1 before the
// axis, the run on a 128-element boundary), or none.
std::vector<Node> gatherAsCopy(const Node& gather, const GraphIndex& index,
                               const InferredShapes& shapes) {
  if (!isOnnxOp(gather, "Gather", 2) || gather.outputs.size() != 1 ||
      index.readers(gather.outputs[0]).empty())
    return {};
  const std::string& x = gather.inputs[0];
  Shape dims;
  const DataType type = typeOf(shapes, x);
  if (!staticShape(shapes, x, &dims) || dims.empty() || !isFloatingPoint(type)) return {};
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = gather.attrInt("axis", 0);
  if (axis < -rank || axis >= rank) return {};
  if (axis < 0) axis += rank;
  for (int64_t d = 0; d < axis; ++d)
    if (dims[d] != 1) return {};
  const Tensor* indices = index.constant(gather.inputs[1]);
  std::vector<int64_t> values;
  if (!indices || indices->rank() > 1 || !constantInts(indices, &values) || values.size() != 1)
    return {};
  int64_t at = values[0];
  if (at < -dims[axis] || at >= dims[axis]) return {};
  if (at < 0) at += dims[axis];
  std::vector<int64_t> strides;
  if (!contiguousStrides(dims, &strides)) return {};
  int64_t offset = 0;
  if (strides[axis] < kViewElements || __builtin_mul_overflow(at, strides[axis], &offset) ||
      offset % kViewElements != 0)
    return {};
  Shape shape(dims.begin(), dims.begin() + axis);
  if (indices->rank() == 1) shape.push_back(1);
  shape.insert(shape.end(), dims.begin() + axis + 1, dims.end());
  std::vector<int64_t> outStrides;
  if (!contiguousStrides(shape, &outStrides)) return {};
  Node copy;
  copy.opType = ops::kStridedCopyOp;
  copy.domain = kKilnDomain;
  copy.opset = 1;
  copy.name = gather.displayName() + " (as a view)";
  copy.index = gather.index;
  copy.inputs = {x};
  copy.outputs = gather.outputs;
  copy.attributes["shape"] = intsAttribute(shape);
  copy.attributes["strides"] = intsAttribute(outStrides);
  copy.attributes["offset"] = intAttribute(offset);
  copy.attributes[kSourceNodesAttribute] = stringsAttribute({gather.displayName()});
  copy.attributes[kFusionPassAttribute] = stringAttribute(kName);
  return {std::move(copy)};
}

// The StridedCopy nodes that replace Split `split`, or none (a Split that stays).
std::vector<Node> partsAsCopies(const Node& split, const GraphIndex& index, const Graph& graph,
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
  PartSource own{x, {}, {split.displayName()}};
  if (!contiguousStrides(dims, &own.strides)) return {};
  std::optional<PartSource> source =
      transposeSource(split, index, graph, shapes, dims, axis, sizes.value());
  if (!source) {
    for (int64_t d = 0; d < axis; ++d)
      if (dims[d] != 1) return {};
    source = std::move(own);
  }
  const bool views = source->value == x;  // else copies of the Transpose's input
  const int64_t inner = source->strides[axis];
  std::vector<Node> parts;
  int64_t start = 0;
  for (size_t i = 0; i < split.outputs.size(); ++i) {
    int64_t offset = 0;
    if (__builtin_mul_overflow(start, inner, &offset)) return {};
    start += sizes.value()[i];  // the sizes add up to the dim (ops::splitSizes checks)
    if (views && offset % kViewElements != 0) return {};
    if (split.outputs[i].empty() || index.readers(split.outputs[i]).empty()) continue;
    Node copy;
    copy.opType = ops::kStridedCopyOp;
    copy.domain = kKilnDomain;
    copy.opset = 1;
    copy.name = split.displayName() + " (part " + std::to_string(i) + ")";
    copy.index = split.index;
    copy.inputs = {source->value};
    copy.outputs = {split.outputs[i]};
    Shape shape = dims;
    shape[axis] = sizes.value()[i];
    copy.attributes["shape"] = intsAttribute(shape);
    copy.attributes["strides"] = intsAttribute(source->strides);
    copy.attributes["offset"] = intAttribute(offset);
    copy.attributes[kSourceNodesAttribute] = stringsAttribute(source->sourceNodes);
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
            "contiguous run: a view on the CUDA backend); a Split of a Transpose whose read "
            "parts hold <= 3/4 of it -> each part one StridedCopy of the Transpose's input; a "
            "Gather of one constant index with only dims of 1 before its axis -> one StridedCopy",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // The parts keep the Split's output names: one inference serves.
    const InferredShapes shapes = inferredShapesOrNone(network);
    const GraphIndex index(g);
    // Decided on the whole graph first: a Split's parts may read the Transpose before it.
    std::vector<std::vector<Node>> replacements;
    for (const Node& node : g.nodes)
      replacements.push_back(isOnnxOpType(node, "Gather") ? gatherAsCopy(node, index, shapes)
                                                          : partsAsCopies(node, index, g, shapes));
    std::vector<Node> nodes;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      Node& node = g.nodes[n];
      std::vector<Node>& parts = replacements[n];
      if (parts.empty()) {
        nodes.push_back(std::move(node));
        continue;
      }
      for (Node& part : parts) {
        applied->push_back({kName, part.attributes[kSourceNodesAttribute].strings, part.name});
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
