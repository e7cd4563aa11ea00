// fold_cast_into_int8_output: an INT8 layer's float output read only by a Cast to float16 /
// bfloat16 is written in that type by the layer itself:
//   Cast(QuantizedConv|QuantizedMatMul(...) -> Y float32, to = T)  ->  the layer with
//   float_output_type = T writing the Cast's output
// The same number either way: the layer computes Y in float and the Cast rounds it once to
// T; the layer now rounds it once to T (contract: ir/quantized_layers.h). A strongly typed
// model of an INT8 + FP16 plan has this Cast after every INT8 layer that feeds an FP16 one
// (its Q/DQ region computes in float32, opset < 19 DequantizeLinear writes float32): BERT-base
// b128 on an H200 spent 2.6 ms in them and wrote each INT8 GEMM's output in float32. After
// fold_qdq, which makes the INT8 layers; before fuse_pointwise_chain, which would take the
// Cast into a chain.
#include "ir/quantized_layers.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_cast_into_int8_output";

std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  const Node& layer = g.nodes[at];
  if (!isQuantizedLayer(layer) || layer.outputs.size() != 1 || layer.outputs[0].empty() ||
      (layer.inputs.size() > kQuantYScale && !layer.inputs[kQuantYScale].empty()) ||
      quantizedFloatOutputType(layer) != DataType::kFloat32 ||
      typeOf(shapes, layer.outputs[0]) != DataType::kFloat32)
    return std::nullopt;
  const int cast = index.soleReader(layer.outputs[0]);
  if (cast < 0 || !isOnnxOp(g.nodes[cast], "Cast", 1)) return std::nullopt;
  const int64_t to = g.nodes[cast].attrInt("to", 0);
  if (to != static_cast<int64_t>(DataType::kFloat16) &&
      to != static_cast<int64_t>(DataType::kBFloat16))
    return std::nullopt;
  Fusion fusion;
  fusion.nodes = {std::min(at, cast), std::max(at, cast)};
  fusion.fused = layer;
  fusion.fused.attributes[kFloatOutputTypeAttribute] = intAttribute(to);
  fusion.fused.outputs[0] = g.nodes[cast].outputs[0];
  fusion.fused.name = layer.name;
  return fusion;
}

}  // namespace

std::unique_ptr<Pass> makeFoldCastIntoInt8Output() {
  return makeFusionPass({kName,
                         "Cast(Y, to = float16|bfloat16) of a QuantizedConv/QuantizedMatMul's "
                         "float Y -> the layer writes that type (float_output_type)",
                         0},
                        ShapedFusionAt(foldAt));
}

}  // namespace kiln::passes
