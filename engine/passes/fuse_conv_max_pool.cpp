// fuse_conv_max_pool: a network's stem (ResNet-50's 7x7/2 3->64 convolution, its bias
// and ReLU, the 3x3/2 MaxPool, and in an INT8 build the QuantizeLinear that starts the
// INT8 region) as one ai.kiln FusedConvMaxPool (contract: ir/conv_max_pool.h):
//   Q(MaxPool(FusedConv(X, W, B; act); pool), s, 0)
//     = FusedConvMaxPool(X, W, B, s[, 0]; conv attributes, act, pool_*)
// which holds by definition (the layer computes the three ops in a row, rounding the
// conv's result to X's type), so the only conditions besides what the kernel takes are
// that no one else reads the two intermediates (they stop existing). The conv's output
// never goes to memory: the CUDA kernel pools it while it is still on chip.
// Runs only in half-precision channels-last builds (pipeline.cpp says why and where).
#include <cmath>

#include "ir/channels_last.h"
#include "ir/conv_max_pool.h"
#include "passes/fusion_passes.h"
#include "passes/qdq_rules.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = kConvMaxPoolPass;

bool allOnes(const std::vector<int64_t>& values) {
  for (int64_t v : values)
    if (v != 1) return false;
  return true;
}

// The conv half (comment of stemKernelTakes).
bool convFits(const Graph& g, const InferredShapes& shapes, const Node& conv) {
  if (conv.domain != kKilnDomain || conv.opType != "FusedConv" || conv.inputs.size() < 2 ||
      conv.inputs.size() > 4 || conv.hasInput(3) || conv.outputs.size() != 1 ||
      conv.outputs[0].empty() || isChannelsLast(conv))
    return false;
  // Weights in float32, or stored in X's own 16-bit type (a strongly typed model's FP16
  // region): the kernel packs them into X's type either way, exactly for the latter.
  const DataType xType = typeOf(shapes, conv.inputs[0]);
  auto weightType = [&](DataType t) { return t == DataType::kFloat32 || t == xType; };
  auto w = g.initializers.find(conv.inputs[1]);
  if (w == g.initializers.end() || !weightType(w->second.type()) || w->second.rank() != 4 ||
      w->second.dim(0) != 64)
    return false;
  const Shape& ws = w->second.shape();
  if (ws[1] > 4 || ws[1] * ws[2] > 22 || ws[3] > 8) return false;
  if (conv.hasInput(2)) {
    auto b = g.initializers.find(conv.inputs[2]);
    if (b == g.initializers.end() || !weightType(b->second.type()) || b->second.numel() != ws[0])
      return false;
  }
  const std::string act = conv.attrString("activation", "none");
  const SymbolicShape* x = shapeOf(shapes, conv.inputs[0]);
  return conv.attrInt("group", 1) == 1 && allOnes(conv.attrInts("dilations", {1, 1})) &&
         conv.attrInts("strides") == std::vector<int64_t>{2, 2} &&
         conv.attrString("auto_pad", "NOTSET") == "NOTSET" && (act == "none" || act == "relu") &&
         x && x->size() == 4 && rewrite::isStorageFloat(typeOf(shapes, conv.inputs[0]));
}

// The MaxPool half.
bool poolFits(const Node& pool) {
  if (!isDefaultDomain(pool) || pool.opType != "MaxPool" || pool.inputs.size() != 1 ||
      pool.outputs.empty() || pool.outputs[0].empty() ||
      (pool.outputs.size() > 1 && !pool.outputs[1].empty()))
    return false;
  const std::vector<int64_t> kernel = pool.attrInts("kernel_shape");
  const std::vector<int64_t> strides = pool.attrInts("strides", {1, 1});
  if (kernel.size() != 2 || strides.size() != 2) return false;
  for (size_t d = 0; d < 2; ++d)
    if (kernel[d] < 1 || kernel[d] > 3 || strides[d] < 1 || strides[d] > 2) return false;
  return allOnes(pool.attrInts("dilations", {1, 1})) && pool.attrInt("storage_order", 0) == 0 &&
         pool.attrString("auto_pad", "NOTSET") == "NOTSET";
}

// The QuantizeLinear half.
bool quantizeFits(const Node& q, const GraphIndex& index) {
  if (!isQuantize(q) || !isPerTensor(q, index)) return false;
  const float scale = perTensorScale(q, index);
  const ZeroPoint zp = zeroPointOf(q, index, DataType::kUndefined);
  return scale > 0 && std::isfinite(scale) && zp.type == DataType::kInt8 && zp.value == 0;
}

// Exactly the class the CUDA kernel takes (backends/cuda/ops/conv_max_pool_impl.cu: an
// fp16/bf16 tensor-core kernel for a small-channel stem such as ResNet-50's 7x7/2
// 3->64 conv + 3x3/2 MaxPool), so that no layer this pass makes falls back to the host:
//   FusedConv: no residual Z; W a float32 (or X's 16-bit type) initializer [64, C, R, S] with
//     C <= 4, S <= 8 and C * R <= 22 (the kernel keeps the filter in shared memory as
//     at most 22 rows of 8 taps; with C <= 4 every allowed geometry fits its
//     shared-memory cap); B absent or a float32 (or X's type)
//     initializer [64]; group 1, dilations 1, strides exactly [2, 2], auto_pad
//     NOTSET; activation none or relu; X a 4-D float value.
//   MaxPool: 2-D, one output (no Indices), kernel_shape each <= 3, strides each 1 or 2,
//     dilations 1, storage_order 0, auto_pad NOTSET (any pads, either ceil_mode).
//   QuantizeLinear: per tensor, y_scale a positive finite float32 scalar constant,
//     int8 output with zero point 0 (a zero point constant 0, or none with output_dtype
//     int8: without either a Q writes uint8, which the kernel does not).
bool stemKernelTakes(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                     const Node& conv, const Node& pool, const Node& q) {
  return convFits(g, shapes, conv) && poolFits(pool) && quantizeFits(q, index);
}

// The stem's pool attributes with ONNX's defaults written out, under the "pool_" prefix.
void setPoolAttributes(const Node& pool, Node* fused) {
  const std::string p = kPoolAttributePrefix;
  Attribute ints;
  ints.kind = Attribute::Kind::kInts;
  ints.ints = pool.attrInts("kernel_shape");
  fused->attributes[p + "kernel_shape"] = ints;
  ints.ints = pool.attrInts("strides", {1, 1});
  fused->attributes[p + "strides"] = ints;
  ints.ints = pool.attrInts("pads", {0, 0, 0, 0});
  fused->attributes[p + "pads"] = ints;
  ints.ints = pool.attrInts("dilations", {1, 1});
  fused->attributes[p + "dilations"] = ints;
  fused->attributes[p + "ceil_mode"] = intAttribute(pool.attrInt("ceil_mode", 0));
}

Node fusedNode(const Node& conv, const Node& pool, const Node& q) {
  Node fused;
  fused.name = conv.displayName() + " + " + pool.displayName() + " + " + q.displayName();
  fused.opType = kFusedConvMaxPoolOp;
  fused.domain = kKilnDomain;
  fused.opset = 1;
  fused.attributes = conv.attributes;  // Conv's and the activation's
  fused.attributes.erase(kSourceNodesAttribute);
  fused.attributes.erase(kFusionPassAttribute);
  setPoolAttributes(pool, &fused);
  fused.inputs = {conv.inputs[0], conv.inputs[1], conv.hasInput(2) ? conv.inputs[2] : "",
                  q.inputs[1]};
  if (q.hasInput(2)) fused.inputs.push_back(q.inputs[2]);
  fused.outputs = {q.outputs[0]};
  return fused;
}

// Anchored at the FusedConv: its sole reader the MaxPool, the MaxPool's the Q (neither
// intermediate a graph output).
std::optional<Fusion> fuseAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  const Node& conv = g.nodes[at];
  if (conv.outputs.size() != 1) return std::nullopt;
  const int pool = index.soleReader(conv.outputs[0]);
  if (pool < 0 || g.nodes[pool].outputs.empty()) return std::nullopt;
  const int q = index.soleReader(g.nodes[pool].outputs[0]);
  if (q < 0 || g.nodes[q].inputs.empty() || g.nodes[q].inputs[0] != g.nodes[pool].outputs[0] ||
      !stemKernelTakes(g, index, shapes, conv, g.nodes[pool], g.nodes[q]))
    return std::nullopt;
  return Fusion{{at, pool, q}, fusedNode(conv, g.nodes[pool], g.nodes[q])};
}

}  // namespace

std::unique_ptr<Pass> makeFuseConvMaxPool() {
  return makeFusionPass({kName,
                         "Q(MaxPool(FusedConv(X, W, B; act)), s, 0) -> one FusedConvMaxPool "
                         "(a stem: 64 filters, stride 2, small C*R*S; fp16/bf16 NHWC builds only)",
                         2},
                        fuseAt);
}

}  // namespace kiln::passes
