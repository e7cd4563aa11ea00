// fuse_matmul_residual: the residual Add after a GEMM as the GEMM's own epilogue input, so
// the product leaves the GEMM with the residual already added (cuBLASLt's C with beta 1 on
// CUDA) instead of being written, read back and read again with the residual by an Add:
//   Add(FusedMatMul(A, W, b; act = none), Z)  (either order)
//     = FusedMatMul(A, W, b, Z; act = none)   Y = A W + b + Z
// Z of the GEMM output's shape and type (no broadcast), the GEMM output read by the Add
// alone and not a graph output, the FusedMatMul without a residual yet and not pinned to
// cuDNN's graph path (which takes none). LeViT's blocks (Linear + BatchNorm folded, then the
// residual), layer-scaled branches once fold_scale_into_matmul put the scale into W and b
// (CaiT, ResMLP), and any Add a LayerNormalization after it did not take. Runs after
// fuse_add_layer_norm, which keeps the Adds a norm reads, and after fold_qdq, whose INT8
// patterns see the GEMM and the Add as the export wrote them.
// fuse_prenorm_residual: the same rewrite, before fuse_add_layer_norm, for the Adds of a
// pre-norm residual stream (ViT, DeiT, CLIP, GPT-2, Whisper): the sum read by a
// LayerNormalization or RMSNormalization and by the next residual Add. AddLayerNorm would
// read the product and Z and write the sum and the norm (four passes over the rows); with
// the sum from the GEMM's epilogue (one more read there) the norm reads it and writes once:
// three. A post-norm sum (BERT), read by the norm alone, stays for AddLayerNorm, which
// takes it in three passes as well without changing the GEMM.
#include "passes/fusion_passes.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fuse_matmul_residual";

// A FusedMatMul of Kiln's domain with A, W and bias only and no activation.
bool isPlainFusedMatMul(const Node& node) {
  return node.opType == "FusedMatMul" && node.domain == kKilnDomain && node.inputs.size() == 3 &&
         node.outputs.size() == 1 && node.attrString("activation", "none") == "none" &&
         node.attrString("path", "auto") != "cudnn_graph";
}

std::optional<Fusion> residualAt(const Graph& g, const GraphIndex& index,
                                 const InferredShapes& shapes, int at) {
  const Node& add = g.nodes[at];
  if (!isOnnxOp(add, "Add", 2) || add.inputs[0].empty() || add.inputs[1].empty())
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const std::string& product = add.inputs[side];
    const std::string& residual = add.inputs[1 - side];
    const int mm = index.producer(product);
    if (mm < 0 || product == residual || index.soleReader(product) != at) continue;
    const Node& gemm = g.nodes[mm];
    if (!isPlainFusedMatMul(gemm)) continue;
    const SymbolicShape* y = shapeOf(shapes, product);
    const SymbolicShape* z = shapeOf(shapes, residual);
    const SymbolicShape* out = shapeOf(shapes, add.outputs[0]);
    const DataType type = typeOf(shapes, product);
    if (!y || !z || !out || *y != *z || *y != *out || type == DataType::kUndefined ||
        type != typeOf(shapes, residual))
      continue;
    Node fused = gemm;
    fused.name = gemm.displayName() + " + " + add.displayName();
    fused.inputs.push_back(residual);
    fused.outputs = {add.outputs[0]};
    // The GEMM's operands exist before it, Z before the Add: the fused node goes there.
    return Fusion{{mm, at}, std::move(fused), false};
  }
  return std::nullopt;
}

// A LayerNormalization or RMSNormalization (either domain) that normalizes `value`.
bool normalizes(const Node& node, const std::string& value) {
  return (node.opType == "LayerNormalization" || node.opType == "RMSNormalization") &&
         (isDefaultDomain(node) || node.domain == kKilnDomain) && !node.inputs.empty() &&
         node.inputs[0] == value;
}

// residualAt for an Add whose sum a norm reads, and something besides it (a node or the
// graph's outputs).
std::optional<Fusion> preNormResidualAt(const Graph& g, const GraphIndex& index,
                                        const InferredShapes& shapes, int at) {
  const Node& add = g.nodes[at];
  if (add.outputs.size() != 1 || add.outputs[0].empty()) return std::nullopt;
  const std::vector<int>& readers = index.readers(add.outputs[0]);
  bool norm = false;
  for (int reader : readers)  // -1: a graph output
    norm = norm || (reader >= 0 && normalizes(g.nodes[reader], add.outputs[0]));
  if (!norm || readers.size() < 2) return std::nullopt;
  // Explicit quantization's GEMMs and residuals stay as the export wrote them for fold_qdq,
  // which runs after fuse_add_layer_norm (and fuse_matmul_residual after it).
  for (const std::string& input : add.inputs) {
    const int producer = index.producer(input);
    if (producer < 0) continue;
    const Node& node = g.nodes[producer];
    if (node.opType == "DequantizeLinear") return std::nullopt;
    for (const std::string& operand : node.inputs) {
      const int p = operand.empty() ? -1 : index.producer(operand);
      if (p >= 0 && g.nodes[p].opType == "DequantizeLinear") return std::nullopt;
    }
  }
  return residualAt(g, index, shapes, at);
}

}  // namespace

std::unique_ptr<Pass> makeFusePrenormResidual() {
  return makeFusionPass(
      {"fuse_prenorm_residual",
       "Add(FusedMatMul(A, W, b), Z) -> FusedMatMul(A, W, b, Z) where a norm and the next "
       "residual read the sum: the norm then reads it once, no AddLayerNorm",
       1},
      preNormResidualAt);
}

std::unique_ptr<Pass> makeFuseMatMulResidual() {
  return makeFusionPass(
      {kName,
       "Add(FusedMatMul(A, W, b), Z) of Z the product's shape -> FusedMatMul(A, W, b, Z): "
       "the residual in the GEMM's epilogue",
       1},
      residualAt);
}

}  // namespace kiln::passes
