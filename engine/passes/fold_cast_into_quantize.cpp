// fold_cast_into_quantize: a QuantizeLinear reading a float16/bfloat16 value through a Cast
// to float32 reads the value itself:
//   Q(Cast(x, to = FLOAT), s[, z])  ->  Q(x, s[, z])      x float16 or bfloat16
// Exact: every float16 and bfloat16 number is a float32 number, so Q divides, rounds and
// saturates the same values (both backends' QuantizeLinear take any float x with a float32
// scale). The strongly typed exports of opset < 19 models write this Cast before each Q
// after an FP16 region (ai.onnx QuantizeLinear takes float16 only from opset 19): it
// copied the tensor once more and, between a stem's MaxPool and its Q, kept the stem from
// becoming one FusedConvMaxPool layer (ResNet-50 INT8 rebuilt strongly typed: 1.516 ms
// against the plan's 1.342 at batch 64, H200). The Cast stays while something else reads it.
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_cast_into_quantize";

bool isHalfFloat(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16;
}

std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  const Node& q = g.nodes[at];
  if (!isDefaultDomain(q) || q.opType != "QuantizeLinear" || q.inputs.size() < 2 ||
      q.outputs.size() != 1)
    return std::nullopt;
  const int c = index.producer(q.inputs[0]);
  if (c < 0 || !isOnnxOp(g.nodes[c], "Cast", 1) ||
      g.nodes[c].attrInt("to", 0) != static_cast<int64_t>(DataType::kFloat32))
    return std::nullopt;
  const std::string& x = g.nodes[c].inputs[0];
  if (!isHalfFloat(typeOf(shapes, x))) return std::nullopt;
  Fusion fusion;
  fusion.fused = q;
  fusion.fused.inputs[0] = x;
  const bool castGoes = index.soleReader(q.inputs[0]) == at;
  fusion.nodes =
      castGoes ? std::vector<int>{std::min(c, at), std::max(c, at)} : std::vector<int>{at};
  fusion.fused.name = q.name;
  return fusion;
}

}  // namespace

std::unique_ptr<Pass> makeFoldCastIntoQuantize() {
  return makeFusionPass({kName,
                         "QuantizeLinear(Cast(x, to = float32)) -> QuantizeLinear(x) for a "
                         "float16/bfloat16 x (exact: the Cast widens without rounding)",
                         0},
                        ShapedFusionAt(foldAt));
}

}  // namespace kiln::passes
