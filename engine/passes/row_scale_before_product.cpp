// row_scale_before_product: a constant that scales a product's rows (one factor per output
// row, or per head, the same for every column) scales the left operand instead:
//   Mul(MatMul(A, B), c) = MatMul(Mul(A, c), B)   when c is constant along the last axis
// ((A B)[.., i, j] c[.., i, 0] = sum_k (A[.., i, k] c[.., i, 0]) B[.., k, j]). SwinV2's cosine
// attention scales its scores by a per-head logit scale, exp(min(s_h, log 100)) of shape
// [H, 1, 1], between the Q K^T product and the softmax, where fuse_attention takes only a
// scalar: with the scale on Q the scores' MatMul feeds the softmax directly and the whole
// attention fuses, the scale going into the normalized Q's pointwise chain.
// Conditions: the Mul's other input is a constant (not a scalar: fuse_softmax_scale_mask and
// fuse_attention take those) of the product's type, whose last dim is 1 and whose other dims
// are 1 or A's (rank at most A's): Mul(A, c) keeps A's shape; A and the product of equal rank
// (no rank broadcast in the MatMul); B not a constant (a GEMM's weights take a scale through
// fold_scale_into_matmul); A's last dim (static) at most the product's, so the scale never
// moves onto more elements than it scaled; the product read by the Mul alone.
#include <memory>
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "row_scale_before_product";

// The MatMul Mul `mul` scales by rows and the scale's input index, or -1.
int scaledProduct(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                  const Node& mul, int at, size_t* scaleInput) {
  if (!isOnnxOp(mul, "Mul", 2)) return -1;
  for (size_t side = 0; side < 2; ++side) {
    const int product = index.producer(mul.inputs[side]);
    if (product < 0 || index.soleReader(mul.inputs[side]) != at) continue;
    const Node& matmul = g.nodes[product];
    if (!isOnnxOp(matmul, "MatMul", 2) || index.constant(matmul.inputs[1])) continue;
    const Tensor* c = index.constant(mul.inputs[1 - side]);
    if (!c || c->numel() <= 1 || c->type() != typeOf(shapes, mul.inputs[side])) continue;
    const SymbolicShape* a = shapeOf(shapes, matmul.inputs[0]);
    const SymbolicShape* s = shapeOf(shapes, matmul.outputs[0]);
    const Shape& cs = c->shape();
    if (!a || !s || a->size() < 2 || a->size() != s->size() || cs.empty() ||
        cs.size() > a->size() || cs.back() != 1)
      continue;
    bool keepsShape = true;
    for (size_t k = 0; k + 1 < cs.size(); ++k) {
      const DimExpr& dim = (*a)[a->size() - cs.size() + k];
      keepsShape = keepsShape && (cs[k] == 1 || (dim.isConst() && dim.constValue() == cs[k]));
    }
    // Scaling A moves A's elements instead of the product's: only when A has no more of them
    // (its last dim at most the product's), so the rewrite never adds traffic should the
    // attention not fuse after all (XCiT's and EdgeNeXt's channel attention scales [d, d]
    // scores of [d, tokens] operands: there A is the larger).
    const DimExpr& inner = a->back();
    const DimExpr& columns = s->back();
    if (!inner.isConst() || !columns.isConst() || inner.constValue() > columns.constValue())
      continue;
    if (!keepsShape) continue;
    *scaleInput = 1 - side;
    return product;
  }
  return -1;
}

class RowScaleBeforeProduct final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Mul(MatMul(A, B), c) with c constant along the last axis (a per-row or per-head "
            "scale) -> MatMul(Mul(A, c), B)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // The product takes the Mul's output name and the new Mul writes a fresh value: the
    // inferred shapes stay right for every other value, so one inference serves.
    const InferredShapes shapes = inferredShapesOrNone(network);
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      size_t scaleInput = 0;
      const int product =
          scaledProduct(g, *index, shapes, g.nodes[at], static_cast<int>(at), &scaleInput);
      if (product < 0) continue;
      const Node mul = g.nodes[at];
      Node matmul = g.nodes[product];
      const std::string scaled = freshName(g, matmul.inputs[0] + "_row_scaled");
      Node scale = madeNode(g, mul, mul.displayName() + " (on the left operand)", "Mul",
                            {matmul.inputs[0], mul.inputs[scaleInput]}, {mul.displayName()}, kName);
      scale.outputs = {scaled};
      applied->push_back({kName, {mul.displayName(), matmul.displayName()}, scale.name});
      matmul.inputs[0] = scaled;
      matmul.outputs[0] = mul.outputs[0];
      // Both go where the Mul was: c may be a Constant node between the product and the Mul
      // (A and B come before the product; the product's one reader was the Mul). The node
      // after them is then at + 1 again.
      g.nodes[at] = std::move(matmul);
      g.nodes.insert(g.nodes.begin() + static_cast<int64_t>(at), std::move(scale));
      g.nodes.erase(g.nodes.begin() + product);
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeRowScaleBeforeProduct() {
  return std::make_unique<RowScaleBeforeProduct>();
}

}  // namespace kiln::passes
