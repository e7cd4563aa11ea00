// batch_norm_as_scale_shift: an inference BatchNormalization that no convolution or
// GEMM took (fold_batch_norm, fold_matmul_batch_norm) is a per-channel affine map:
//   BatchNormalization(X, scale, bias, mean, var) = X * s + t,
//   s = scale / sqrt(var + eps),  t = bias - mean * s,
// with s and t constants [C, 1, ..., 1] broadcasting over X's spatial dims. As a Mul
// and an Add it joins the elementwise ops around it in one PointwiseChain (the
// pre-activation BN -> ReLU of DenseNet, pre-activation ResNets and BN after a
// concatenation), and a channels-last engine keeps it in its NHWC region (an
// elementwise op with a [C, 1, 1] operand follows the region, channels_last_layout.cpp)
// instead of running a channels-first BN kernel between two reformats.
// Conditions: one output (inference mode), X of known rank >= 2 with a constant C,
// float32 constant parameters of C elements each, spatial = 1 (opset < 9), opset >= 7
// (the model's Mul and Add then broadcast numpy-style).
// Level 2, as fuse_pointwise_chain: below it the pair would run as two kernels where
// the BN is one. The Mul keeps the BN's name; the Add is "<BN> (shift)".
#include <cmath>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "batch_norm_as_scale_shift";

struct Affine {
  Tensor scale, shift;  // [C, 1, ..., 1]
};

// The affine map of BN node `bn`, or false when it does not qualify (see the file comment).
bool affineOf(const Node& bn, const GraphIndex& index, const Shapes& shapes, Affine* out) {
  if (!isOnnxOpType(bn, "BatchNormalization") || bn.inputs.size() != 5 || bn.opset < 7 ||
      bn.attrInt("training_mode", 0) != 0 || bn.attrInt("spatial", 1) != 1)
    return false;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (!bn.outputs[k].empty()) return false;
  const SymbolicShape* x = shapeOf(shapes, bn.inputs[0]);
  if (!x || x->size() < 2 || !(*x)[1].isConst()) return false;
  const int64_t c = (*x)[1].constValue();
  const Tensor* gamma = float32Constant(index, bn.inputs[1], c);
  const Tensor* beta = float32Constant(index, bn.inputs[2], c);
  const Tensor* mean = float32Constant(index, bn.inputs[3], c);
  const Tensor* var = float32Constant(index, bn.inputs[4], c);
  if (!gamma || !beta || !mean || !var) return false;
  const double eps = bn.attrFloat("epsilon", 1e-5f);
  Shape shape(x->size() - 1, 1);
  shape[0] = c;
  out->scale = Tensor(DataType::kFloat32, shape);
  out->shift = Tensor(DataType::kFloat32, shape);
  float* s = out->scale.data<float>();
  float* t = out->shift.data<float>();
  for (int64_t i = 0; i < c; ++i) {
    const double si = gamma->data<float>()[i] / std::sqrt(double(var->data<float>()[i]) + eps);
    s[i] = static_cast<float>(si);
    t[i] = static_cast<float>(beta->data<float>()[i] - mean->data<float>()[i] * si);
  }
  return true;
}

class BatchNormAsScaleShift final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "BatchNormalization(X) -> X * s + t, s = scale / sqrt(var + eps), "
            "t = bias - mean * s (per channel, [C, 1, ...] constants)",
            2};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const Shapes shapes = inferredShapesOrNone(network);
    std::vector<std::pair<size_t, Affine>> found;
    {
      const GraphIndex index(g);
      for (size_t at = 0; at < g.nodes.size(); ++at) {
        Affine a;
        if (affineOf(g.nodes[at], index, shapes, &a)) found.emplace_back(at, std::move(a));
      }
    }
    // From the back, so the indices of the BNs still to rewrite stay valid.
    for (auto it = found.rbegin(); it != found.rend(); ++it) {
      const Node bn = g.nodes[it->first];
      const std::string name = bn.displayName();
      const std::string s = freshName(g, name + "_scale");
      g.initializers[s] = std::move(it->second.scale);
      const std::string t = freshName(g, name + "_shift");
      g.initializers[t] = std::move(it->second.shift);
      const std::string scaled = freshName(g, bn.outputs[0] + "_scaled");
      Node mul = makeAffineNode("Mul", name, {bn.inputs[0], s}, scaled, bn);
      Node add = makeAffineNode("Add", name + " (shift)", {scaled, t}, bn.outputs[0], bn);
      g.nodes[it->first] = std::move(add);
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(it->first), std::move(mul));
      applied->push_back({kName, {name}, name});
    }
    return Status::ok();
  }

 private:
  static Node makeAffineNode(const char* op, const std::string& name,
                             std::vector<std::string> inputs, const std::string& output,
                             const Node& bn) {
    Node n;
    n.opType = op;
    n.name = name;
    n.opset = bn.opset;  // >= 7: Mul and Add broadcast numpy-style
    n.index = bn.index;
    n.inputs = std::move(inputs);
    n.outputs = {output};
    n.attributes[kSourceNodesAttribute] = stringsAttribute({bn.displayName()});
    n.attributes[kFusionPassAttribute] = stringAttribute(kName);
    return n;
  }
};

}  // namespace

std::unique_ptr<Pass> makeBatchNormAsScaleShift() {
  return std::make_unique<BatchNormAsScaleShift>();
}

}  // namespace kiln::passes
