// fold_matmul_batch_norm: a BatchNormalization over the output features of a MatMul
// with constant weights (timm's LinearNorm: Linear then BatchNorm1d, as LeViT has 60 of):
//   Reshape(BatchNormalization(Flatten(MatMul(X, W), axis = r - 1), scale, bias, mean, var),
//           to MatMul's shape)
//   | BatchNormalization(MatMul(X, W), ...)                      (a rank-2 MatMul)
//     = Add(MatMul(X, W * s), bias - mean * s),   s = scale / sqrt(var + epsilon)
// per output feature n (W's column n): the BN normalizes dim 1 of the flattened
// [rows, N] view, which is the MatMul's last dim. The Add then fuses into the MatMul's
// epilogue (fuse_matmul_bias_activation runs later).
// A Reshape after the BN to another shape (the head split merged into LinearNorm's
// Reshape) stays and reads the Add, when its target is a constant without 0 entries.
// Conditions: inference-mode BN with one output and constant float32 parameters of N
// elements; W a constant float32 [K, N]; the MatMul output read by the Flatten (or the
// BN) and by Shape nodes alone (a Shape sees the same shape after the fold); the
// Flatten output read by the BN alone and the BN output by the Reshape alone, whose
// output has the MatMul output's inferred shape and type. W gets a new name, so a
// weight shared with other nodes is left as it was.
#include <algorithm>
#include <cmath>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using rewrite::float32Constant;

constexpr const char* kName = "fold_matmul_batch_norm";

struct Match {
  int matmul = -1;
  std::vector<int> nodes;  // Flatten, BN, Reshape (or the BN alone), ascending
  int bn = -1;
  std::string output;
};

// `value` is read by node `reader` and otherwise by Shape nodes alone.
bool readByAndShapes(const Graph& g, const GraphIndex& index, const std::string& value,
                     int reader) {
  bool found = false;
  for (int r : index.readers(value)) {
    if (r == reader)
      found = true;
    else if (r < 0 || !isOnnxOp(g.nodes[r], "Shape", 1))
      return false;
  }
  return found;
}

// The chain from the MatMul at `at` to the value that replaces the BN's result.
bool matchAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at,
             Match* m) {
  const Node& mm = g.nodes[at];
  if (!isOnnxOp(mm, "MatMul", 2)) return false;
  const SymbolicShape* mmShape = shapeOf(shapes, mm.outputs[0]);
  if (!mmShape || mmShape->size() < 2) return false;
  for (int r : index.readers(mm.outputs[0])) {
    if (r < 0) return false;
    const Node& next = g.nodes[r];
    if (isOnnxOp(next, "Shape", 1)) continue;
    if (isOnnxOp(next, "Flatten", 1) &&
        next.attrInt("axis", 1) == static_cast<int64_t>(mmShape->size()) - 1) {
      const int bn = index.soleReader(next.outputs[0]);
      const int reshape = bn < 0 ? -1 : index.soleReader(g.nodes[bn].outputs[0]);
      if (reshape < 0 || !isOnnxOp(g.nodes[reshape], "Reshape", 2) ||
          g.nodes[reshape].inputs[0] != g.nodes[bn].outputs[0])
        continue;
      if (rewrite::sameShapeAndType(shapes, g.nodes[reshape].outputs[0], mm.outputs[0])) {
        *m = {at, {r, bn, reshape}, bn, g.nodes[reshape].outputs[0]};
      } else {
        // A Reshape elsewhere (merge_reshapes joined LinearNorm's with the head split
        // after it): it stays, reading the Add's MatMul-shaped result, which holds the
        // same elements in the same order, when its target is a constant with no 0
        // (a 0 would copy a dim of the rank-2 value it read before).
        std::vector<int64_t> target;
        if (!rewrite::constantInts(index.constant(g.nodes[reshape].inputs[1]), &target) ||
            std::find(target.begin(), target.end(), 0) != target.end())
          continue;
        *m = {at, {r, bn}, bn, g.nodes[bn].outputs[0]};
      }
    } else if (mmShape->size() == 2) {
      *m = {at, {r}, r, next.outputs.empty() ? "" : next.outputs[0]};
    } else {
      return false;
    }
    const Node& bn = g.nodes[m->bn];
    if (bn.opType != "BatchNormalization" || !isDefaultDomain(bn) || bn.inputs.size() != 5 ||
        bn.outputs.size() != 1 || bn.attrInt("training_mode", 0) != 0)
      return false;
    return readByAndShapes(g, index, mm.outputs[0], m->nodes.front());
  }
  return false;
}

// W * s column by column and bias - mean * s, or false when a constant does not fit.
bool foldWeights(const GraphIndex& index, const Node& mm, const Node& bn, Tensor* w, Tensor* b) {
  const Tensor* weights = float32Constant(index, mm.inputs[1], -1);
  if (!weights || weights->rank() != 2) return false;
  const int64_t k = weights->dim(0), n = weights->dim(1);
  const Tensor* p[4];
  for (int i = 0; i < 4; ++i)
    if (!(p[i] = float32Constant(index, bn.inputs[i + 1], n))) return false;
  const double epsilon = bn.attrFloat("epsilon", 1e-5f);
  *w = weights->clone();
  *b = Tensor(DataType::kFloat32, {n});
  for (int64_t col = 0; col < n; ++col) {
    const double s = p[0]->data<float>()[col] / std::sqrt(p[3]->data<float>()[col] + epsilon);
    for (int64_t row = 0; row < k; ++row)
      w->data<float>()[row * n + col] = static_cast<float>(w->data<float>()[row * n + col] * s);
    b->data<float>()[col] =
        static_cast<float>(p[1]->data<float>()[col] - p[2]->data<float>()[col] * s);
  }
  return true;
}

std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  Match m;
  Tensor w, b;
  if (!matchAt(g, index, shapes, at, &m) || m.output.empty() ||
      !foldWeights(index, g.nodes[at], g.nodes[m.bn], &w, &b))
    return std::nullopt;
  Node& mm = g.nodes[at];
  const std::string wName = rewrite::freshName(g, mm.inputs[1] + "_bnfolded");
  const std::string bName = rewrite::freshName(g, mm.inputs[1] + "_bnbias");
  g.initializers[wName] = std::move(w);
  g.initializers[bName] = std::move(b);
  // The MatMul stays where it is with the folded weights (its readers are the chain and
  // Shape nodes, which see the same shape); the chain becomes the bias Add.
  mm.inputs[1] = wName;
  Node add;
  add.opType = "Add";
  add.opset = mm.opset;
  add.inputs = {mm.outputs[0], bName};
  add.outputs = {m.output};
  for (const std::string& s : sourceNodesOf(g, m.nodes))
    add.name += (add.name.empty() ? "" : " + ") + s;
  return Fusion{m.nodes, std::move(add)};
}

}  // namespace

std::unique_ptr<Pass> makeFoldMatMulBatchNorm() {
  return makeFusionPass({kName,
                         "[Reshape](BatchNormalization([Flatten](MatMul(X, W)))) -> "
                         "Add(MatMul(X, W * s), bias - mean * s)",
                         1},
                        foldAt);
}

}  // namespace kiln::passes
