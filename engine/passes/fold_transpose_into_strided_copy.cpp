// fold_transpose_into_strided_copy: a Transpose of a StridedCopy's output is the StridedCopy
// with its dims permuted:
//   Transpose(StridedCopy(X; shape, strides, offset), perm)
//     = StridedCopy(X; shape[perm], strides[perm], offset)
// (Y[i] = X[offset + sum_k i_k strides_k], so Z[j] = Y[j permuted back] reads X at
// offset + sum_k j_k strides_{perm[k]}). One copy instead of two. MViTv2's pooled attention
// extracts q, k and v from the packed projection as StridedCopies into NCHW for its pooling
// convolutions, which channels_last_layout then reformats to NHWC: at batch 128 the copies
// gathered 2-byte elements (0.77 ms each) and the reformats moved them again (2.30 ms in all);
// folded, each copy reads runs of C contiguous channels.
// Conditions: the StridedCopy's output is read by the Transpose alone (not a graph output);
// the fold does not turn a copy whose innermost dim reads contiguous elements into one whose
// innermost dim gathers (the copy kernels move whole words only along contiguous runs, where a
// transpose kernel tiles).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ops/strided_copy_params.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_transpose_into_strided_copy";

// The folded geometry of StridedCopy `copy` read by Transpose `transpose`, or false.
bool foldedGeometry(const Node& copy, const Node& transpose, ops::StridedCopyGeometry* out) {
  auto geometry = ops::stridedCopyGeometry(copy, ops::kUnknownInputElements);
  if (!geometry.isOk()) return false;
  const ops::StridedCopyGeometry& g = geometry.value();
  const size_t rank = g.shape.size();
  std::vector<int64_t> perm = transpose.attrInts("perm");
  if (perm.empty())  // the default: the dims reversed
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != rank || !isPermutation(perm) || rank == 0) return false;
  out->offset = g.offset;
  out->shape.clear();
  out->strides.clear();
  for (int64_t axis : perm) {
    out->shape.push_back(g.shape[axis]);
    out->strides.push_back(g.strides[axis]);
  }
  const bool wasContiguous = g.strides.back() == 1 && g.shape.back() > 1;
  const bool staysContiguous = out->strides.back() == 1 && out->shape.back() > 1;
  return staysContiguous || !wasContiguous;
}

class FoldTransposeIntoStridedCopy final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Transpose(StridedCopy(X; shape, strides, offset), perm) -> StridedCopy(X; "
            "shape[perm], strides[perm], offset)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    auto index = std::make_unique<GraphIndex>(g);  // rebuilt after each fold alone
    size_t next = 0;
    while (next < g.nodes.size()) {
      const size_t at = next++;
      const Node& transpose = g.nodes[at];
      if (!isOnnxOp(transpose, "Transpose", 1)) continue;
      const int producer = index->producer(transpose.inputs[0]);
      if (producer < 0 || index->soleReader(transpose.inputs[0]) != static_cast<int>(at)) continue;
      Node& copy = g.nodes[producer];
      if (copy.domain != kKilnDomain || copy.opType != ops::kStridedCopyOp ||
          copy.outputs.size() != 1)
        continue;
      ops::StridedCopyGeometry folded;
      if (!foldedGeometry(copy, transpose, &folded)) continue;
      const std::vector<std::string> sources = sourceNodesOf(g, {producer, static_cast<int>(at)});
      copy.name += " + " + transpose.displayName();
      copy.attributes[kSourceNodesAttribute] = stringsAttribute(sources);
      applied->push_back({kName, sources, copy.name});
      copy.attributes["shape"] = intsAttribute(folded.shape);
      copy.attributes["strides"] = intsAttribute(folded.strides);
      copy.outputs[0] = transpose.outputs[0];
      g.nodes.erase(g.nodes.begin() + static_cast<int64_t>(at));
      next = at;  // the node after the Transpose is at its place now
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldTransposeIntoStridedCopy() {
  return std::make_unique<FoldTransposeIntoStridedCopy>();
}

}  // namespace kiln::passes
