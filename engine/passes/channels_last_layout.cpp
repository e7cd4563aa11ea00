// channels_last_layout: convolutions and pooling with channels innermost (NHWC), for a
// backend whose tensor-core convolutions want that layout (CUDA at fp16/bf16: cuDNN
// runs NCHW half convolutions through internal transposes and has few fused engines
// for them). With T = Transpose(perm 0,2,3,1) and T^-1 = Transpose(perm 0,3,1,2):
//   Op(X) = T^-1(Op_nhwc(T(X)))   and   T(T^-1(v)) = v,
// where Op_nhwc is the same op on permuted storage (ir/channels_last.h: the node gets
// kiln_channels_last = 1, a filter W[K, C/g, R, S] becomes the initializer W[K, R, S, C/g]).
// A chain of such ops passes its NHWC values straight from one to the next, so only
// the region's edges pay a Transpose: a reformat layer, visible in the engine, made
// once per value however many readers it has.
// Which nodes: Conv (rewritten as FusedConv without activation, whose epilogue adds the
// bias) and FusedConv, each with a 4-D filter initializer; MaxPool / AveragePool with
// two spatial axes and one output; GlobalAveragePool / GlobalMaxPool of a 4-D input;
// QuantizedConv of int8 X, one group, symmetric (zero points 0), K a multiple of 4
// (cuDNN's INT8 NHWC convolutions, int8_conv_cudnn.cpp, which pads C to 4 itself); its
// residual Z, float32 or int8 (with z_scale, a per-tensor scalar that stays as it is),
// is an activation stored NHWC like X (ir/channels_last.cpp's roles). FusedConvMaxPool
// (fuse_conv_max_pool's stem layer) always: its kernel writes NHWC while it reads its
// few-channel X and its filter channels-first (its roles list no activation input and no
// filter), so no reformat goes before it, and its int8 output starts the INT8 region
// (QuantizedConv reads it as it is; a channels-first reader gets the usual reformat back).
// Layout-free ops follow the region without a reformat: a per-tensor QuantizeLinear /
// DequantizeLinear (one scale, one zero point) whose input is already channels-last reads and
// writes NHWC as it is (an elementwise op does not care where C sits), so INT8 layers chain through
// the Quantize between them. Elementwise ops follow the region too (`followsRegion`):
// an Add, Mul, activation or PointwiseChain whose 4-D inputs are all NHWC already
// (one of them of the output's full shape) and whose other inputs broadcast over H and
// W ([N, C, 1, 1], [C, 1, 1], scalars: stored [N, 1, 1, C] by a Reshape, which moves no
// bytes) computes the same values on NHWC storage: op(T^-1(a), b) = T^-1(op(a, T(b))).
// EfficientNet's squeeze-excitation scale Mul(x, s) and ConvNeXt's layer-scale Mul and
// residual Add then stay in the region instead of paying a reformat each way. A Concat
// of region values follows too, along the permuted axis (NCHW axis a is NHWC axis
// j with kToChannelsLast[j] = a: channels 1 -> 3), so DenseNet's blocks (Concat, then
// BN -> ReLU as one PointwiseChain: batch_norm_as_scale_shift) run NHWC throughout. A
// Slice of a region value with constant axes follows the same way (its axes permuted),
// so ShuffleNet's channel split does not pay a reformat per branch, and so does a channel
// shuffle (Reshape, Transpose (0, 2, 1, 3, 4), Reshape) as the same shuffle of the innermost
// axis; so does a normalization over each whole sample (Reshape to [N, 1, C * H * W],
// InstanceNormalization with a scalar scale and bias, Reshape back: GroupNorm(1, C) as torch
// exports it, PoolFormer's), whose statistics do not depend on where C sits. A Resize of H and W
// (constant scales or sizes, N and C kept) runs on NHWC storage with its scales, sizes or axes
// permuted when its readers are region layers (a convolution or pooling, or a Concat of region
// values, channels-first views of channels-last data and other such Resizes) and its input is a
// region value, such a view (Transpose (0, 3, 1, 2), or tokens turned into an image:
// fold_view_chains makes the reformat a Reshape), or no larger than its output: SegFormer's decoder
// upsamples four token maps and concatenates them for a 1x1 convolution, all channels-last then.
// Runs only when the builder asks for it (the backend prefers
// channels-last for the engine's precision) and after the fusions, which match channels-first
// patterns.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/channels_last.h"
#include "kiln/op_table.h"
#include "ir/conv_max_pool.h"
#include "ir/pointwise_program.h"
#include "ir/quantized_layers.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = kChannelsLastPass;

int inputRank(const Node& node, const InferredShapes& shapes) {
  const SymbolicShape* shape = node.inputs.empty() ? nullptr : shapeOf(shapes, node.inputs[0]);
  return shape ? static_cast<int>(shape->size()) : -1;
}

bool isFloat(const Node& node, const InferredShapes& shapes) {
  const DataType t = typeOf(shapes, node.inputs[0]);
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

bool isZeroOrAbsent(const Node& node, size_t slot, const Graph& g) {
  if (!node.hasInput(slot)) return true;
  auto t = g.initializers.find(node.inputs[slot]);
  if (t == g.initializers.end() || t->second.numel() != 1) return false;
  return t->second.valueAsInt64(0) == 0;
}

// An INT8 convolution cuDNN runs channels-last (see the header comment).
bool qualifiesInt8(const Node& node, const Graph& g, const InferredShapes& shapes) {
  if (node.inputs.size() <= kQuantWScale || typeOf(shapes, node.inputs[0]) != DataType::kInt8 ||
      node.attrInt("group", 1) != 1)
    return false;
  auto w = g.initializers.find(node.inputs[kQuantW]);
  if (w == g.initializers.end() || w->second.rank() != 4 || w->second.type() != DataType::kInt8)
    return false;
  const std::string act = node.attrString("activation", "none");
  if (act != "none" && act != "relu") return false;
  return w->second.dim(0) % 4 == 0 && isZeroOrAbsent(node, kQuantXZeroPoint, g) &&
         isZeroOrAbsent(node, kQuantYZeroPoint, g);
}

// A per-tensor QuantizeLinear / DequantizeLinear: elementwise, so layout-free.
bool isLayoutFree(const Node& node, const Graph& g) {
  if (!isDefaultDomain(node) || node.outputs.size() != 1 || node.inputs.size() < 2 ||
      (node.opType != "QuantizeLinear" && node.opType != "DequantizeLinear"))
    return false;
  for (size_t slot = 1; slot < node.inputs.size(); ++slot) {
    if (node.inputs[slot].empty()) continue;
    auto t = g.initializers.find(node.inputs[slot]);
    if (t == g.initializers.end() || t->second.numel() != 1) return false;
  }
  return true;
}

// Ops that compute each output element from the inputs' elements at the same
// (broadcast) position alone (the op table's positionwise rows).
bool isElementwise(const Node& node) {
  const ops::OpRow* row = ops::findOp(node.opType);
  if (!row || !row->positionwise) return false;
  return row->domain.empty() ? isDefaultDomain(node) : node.domain == row->domain;
}

// How an elementwise node reads its inputs on NHWC storage: the slots whose values are
// NHWC already, and those that broadcast over H and W and need their C moved last.
struct FollowPlan {
  std::vector<size_t> regionSlots;
  std::vector<size_t> broadcastSlots;
};

// True when elementwise `node` can run on NHWC storage without a reformat before it
// (see the file comment); fills `plan`. `chosen`: the nodes before it going NHWC.
bool followsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                   const InferredShapes& shapes, FollowPlan* plan) {
  if (!isElementwise(node) || node.outputs.size() != 1 || node.outputs[0].empty() ||
      node.hasSubgraphs())
    return false;
  const SymbolicShape* out = shapeOf(shapes, node.outputs[0]);
  if (!out || out->size() != 4) return false;
  bool full = false;
  *plan = {};
  for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
    const std::string& value = node.inputs[slot];
    if (value.empty()) continue;
    const SymbolicShape* s = shapeOf(shapes, value);
    if (!s || s->size() > 4) return false;
    const int producer = index.producer(value);
    if (producer >= 0 && chosen[producer] && s->size() == 4) {
      plan->regionSlots.push_back(slot);
      full = full || *s == *out;
      continue;
    }
    // Right-aligned to [N, C, H, W]: H and W must be 1 (a broadcast over the plane).
    for (size_t d = 0; d < s->size(); ++d) {
      const size_t at = d + 4 - s->size();
      if (at >= 2 && !((*s)[d].isConst() && (*s)[d].constValue() == 1)) return false;
      if (at == 1 && !(*s)[d].isConst()) return false;  // C moves: it must be a number
    }
    plan->broadcastSlots.push_back(slot);
  }
  return full;
}

bool isPlainReshape(const Node& node) {
  return isDefaultDomain(node) && node.opType == "Reshape" && node.inputs.size() == 2 &&
         node.outputs.size() == 1 && node.attrInt("allowzero", 0) == 0;
}

// A channels-first view of channels-last data (rewrite::channelsLastSourceOf): its reformat
// to NHWC folds away (fold_view_chains).
bool isChannelsFirstView(const std::string& value, const Graph& g, const GraphIndex& index,
                         const InferredShapes& shapes) {
  return !rewrite::channelsLastSourceOf(g, index, shapes, value).empty();
}

// True when `node` is a Concat of 4-D values that come from the region (or are
// channels-first views of channels-last data, whose reformats fold away; at least one from
// the region): on NHWC storage it is the same Concat along the permuted axis (channels:
// axis 3), so a DenseNet block's concatenations stay in the region. Sets `axis` to the
// NHWC axis.
bool concatFollowsRegion(const Node& node, const Graph& g, const GraphIndex& index,
                         const std::vector<bool>& chosen, const InferredShapes& shapes,
                         FollowPlan* plan, int64_t* axis) {
  if (!isDefaultDomain(node) || node.opType != "Concat" || node.outputs.size() != 1 ||
      node.outputs[0].empty() || node.inputs.empty() || !node.hasAttr("axis"))
    return false;
  const SymbolicShape* out = shapeOf(shapes, node.outputs[0]);
  if (!out || out->size() != 4) return false;
  *plan = {};
  bool fromRegion = false;
  for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
    const std::string& value = node.inputs[slot];
    const int producer = value.empty() ? -1 : index.producer(value);
    const SymbolicShape* s = shapeOf(shapes, value);
    if (producer < 0 || !s || s->size() != 4) return false;
    if (!chosen[producer] && !isChannelsFirstView(value, g, index, shapes)) return false;
    fromRegion = fromRegion || chosen[producer];
    plan->regionSlots.push_back(slot);
  }
  if (!fromRegion) return false;
  int64_t a = node.attrInt("axis", 1);
  if (a < 0) a += 4;
  if (a < 0 || a > 3) return false;
  for (int j = 0; j < 4; ++j)
    if (kToChannelsLast[j] == a) *axis = j;
  return true;
}

// True when `node` is a Slice of a 4-D value from the region with constant axes (or none:
// the leading axes) and constant starts: on NHWC storage it is the same Slice along the
// permuted axes, so ShuffleNet's channel split (chunk) stays in the region. Sets `axes` to
// the NHWC axes, in the order of the node's starts / ends / steps.
bool sliceFollowsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                        const InferredShapes& shapes, FollowPlan* plan,
                        std::vector<int64_t>* axes) {
  if (!isDefaultDomain(node) || node.opType != "Slice" || node.outputs.size() != 1 ||
      node.outputs[0].empty() || node.inputs.empty() || node.inputs[0].empty())
    return false;
  const int producer = index.producer(node.inputs[0]);
  const SymbolicShape* in = shapeOf(shapes, node.inputs[0]);
  if (producer < 0 || !chosen[producer] || !in || in->size() != 4) return false;
  std::vector<int64_t> nchw;
  if (node.opset < 10) {
    nchw = node.attrInts("axes");
    if (nchw.empty())
      for (size_t k = 0; k < node.attrInts("starts").size(); ++k) nchw.push_back(int64_t(k));
  } else {
    const Tensor* starts = node.hasInput(1) ? index.constant(node.inputs[1]) : nullptr;
    if (!starts) return false;
    if (node.hasInput(3)) {
      const Tensor* a = index.constant(node.inputs[3]);
      if (!a) return false;
      for (int64_t k = 0; k < a->numel(); ++k) nchw.push_back(a->valueAsInt64(k));
    } else {
      for (int64_t k = 0; k < starts->numel(); ++k) nchw.push_back(k);
    }
  }
  axes->clear();
  for (int64_t a : nchw) {
    if (a < 0) a += 4;
    if (a < 0 || a > 3) return false;
    for (int j = 0; j < 4; ++j)
      if (kToChannelsLast[j] == a) axes->push_back(j);
  }
  *plan = {};
  plan->regionSlots.push_back(0);
  return true;
}

// A channel shuffle of a region value: Reshape [N, C, H, W] -> [N, a, b, H, W],
// Transpose (0, 2, 1, 3, 4), Reshape back to [N, C, H, W] (ShuffleNet), each value read by
// the next node alone. On NHWC storage it is the same shuffle of the innermost axis:
// Reshape [N, H, W, a, b] (0 copies N, H, W), Transpose (0, 1, 2, 4, 3), Reshape
// [N, H, W, C]. Returns the indices of the three nodes, or an empty list.
struct Shuffle {
  std::vector<int> nodes;  // the two Reshapes and the Transpose, in order
  int64_t a = 0, b = 0, c = 0;
};

Shuffle shuffleFollowsRegion(const Graph& g, const GraphIndex& index, int at,
                             const std::vector<bool>& chosen, const InferredShapes& shapes) {
  const Node& r1 = g.nodes[at];
  if (!isPlainReshape(r1)) return {};
  const int producer = index.producer(r1.inputs[0]);
  const SymbolicShape* x = shapeOf(shapes, r1.inputs[0]);
  const SymbolicShape* split = shapeOf(shapes, r1.outputs[0]);
  if (producer < 0 || !chosen[producer] || !x || !split || x->size() != 4 || split->size() != 5)
    return {};
  const int t = index.soleReader(r1.outputs[0]);
  if (t < 0 || !isDefaultDomain(g.nodes[t]) || g.nodes[t].opType != "Transpose" ||
      g.nodes[t].attrInts("perm") != std::vector<int64_t>{0, 2, 1, 3, 4})
    return {};
  const int r2 = index.soleReader(g.nodes[t].outputs[0]);
  if (r2 < 0 || !isPlainReshape(g.nodes[r2]) || g.nodes[r2].inputs[0] != g.nodes[t].outputs[0])
    return {};
  const SymbolicShape* y = shapeOf(shapes, g.nodes[r2].outputs[0]);
  const SymbolicShape& s = *split;
  if (!y || !(*y == *x) || !(s[0] == (*x)[0]) || !(s[3] == (*x)[2]) || !(s[4] == (*x)[3]) ||
      !s[1].isConst() || !s[2].isConst() || !(*x)[1].isConst() ||
      s[1].constValue() * s[2].constValue() != (*x)[1].constValue())
    return {};
  return {{at, t, r2}, s[1].constValue(), s[2].constValue(), (*x)[1].constValue()};
}

// A normalization over each whole sample of a region value: Reshape [N, C, H, W] ->
// [N, 1, C * H * W], InstanceNormalization with a one-element scale and bias, Reshape back
// to [N, C, H, W] (torch's export of GroupNorm(1, C), PoolFormer's norm), each value read by
// the next node alone. The statistics and the scalar affine do not depend on where C sits,
// so on NHWC storage it is the same three nodes with the last Reshape to [N, H, W, C].
// Returns the three nodes' indices and the two Reshapes' targets ({0, 1, C * H * W} and
// {0, H, W, C}: 0 copies N), or none.
struct WholeSampleNorm {
  std::vector<int> nodes;          // the Reshape, the InstanceNormalization, the Reshape back
  std::vector<int64_t> flatShape;  // the first Reshape's target, spelled out: a 0 copying
                                   // dim 1 would copy H on NHWC storage, not C
  std::vector<int64_t> nhwcShape;
};

WholeSampleNorm wholeSampleNormFollowsRegion(const Graph& g, const GraphIndex& index, int at,
                                             const std::vector<bool>& chosen,
                                             const InferredShapes& shapes) {
  const Node& r1 = g.nodes[at];
  if (!isPlainReshape(r1)) return {};
  const int producer = index.producer(r1.inputs[0]);
  const SymbolicShape* x = shapeOf(shapes, r1.inputs[0]);
  const SymbolicShape* flat = shapeOf(shapes, r1.outputs[0]);
  if (producer < 0 || !chosen[producer] || !x || !flat || x->size() != 4 || flat->size() != 3)
    return {};
  for (int d = 1; d < 4; ++d)
    if (!(*x)[d].isConst()) return {};
  const int64_t c = (*x)[1].constValue(), h = (*x)[2].constValue(), w = (*x)[3].constValue();
  const SymbolicShape& f = *flat;
  if (!(f[0] == (*x)[0]) || !f[1].isConst() || f[1].constValue() != 1 || !f[2].isConst() ||
      f[2].constValue() != c * h * w)
    return {};
  const int norm = index.soleReader(r1.outputs[0]);
  if (norm < 0) return {};
  const Node& n = g.nodes[norm];
  if (!isDefaultDomain(n) || n.opType != "InstanceNormalization" || n.inputs.size() != 3 ||
      n.outputs.size() != 1 || n.inputs[0] != r1.outputs[0])
    return {};
  for (size_t slot : {size_t{1}, size_t{2}}) {
    const Tensor* t = index.constant(n.inputs[slot]);  // an initializer or a Constant node's
    if (!t || t->numel() != 1) return {};
  }
  const int r2 = index.soleReader(n.outputs[0]);
  if (r2 < 0 || !isPlainReshape(g.nodes[r2]) || g.nodes[r2].inputs[0] != n.outputs[0]) return {};
  const SymbolicShape* y = shapeOf(shapes, g.nodes[r2].outputs[0]);
  if (!y || !(*y == *x)) return {};
  return {{at, norm, r2}, {0, 1, c * h * w}, {0, h, w, c}};
}

// A Resize that keeps N and C and has an NHWC form (see the file comment): the inputs it
// replaces (slot, NHWC tensor) and its NHWC `axes` attribute (empty: none).
struct ResizeNhwc {
  std::vector<std::pair<size_t, Tensor>> inputs;
  std::vector<int64_t> axes;
};

Tensor permutedVector(const Tensor& t, const int (&perm)[4]) {
  Tensor out(t.type(), {4});
  const size_t size = dataTypeSize(t.type());
  const auto* src = static_cast<const unsigned char*>(t.rawData());
  auto* dst = static_cast<unsigned char*>(out.rawData());
  for (int j = 0; j < 4; ++j) std::copy_n(src + perm[j] * size, size, dst + j * size);
  return out;
}

int64_t toChannelsLastAxis(int64_t a) {
  for (int j = 0; j < 4; ++j)
    if (kToChannelsLast[j] == a) return j;
  return -1;
}

// The NHWC form of a Resize of a 4-D float value that keeps N and C, or nothing.
std::optional<ResizeNhwc> resizeNhwc(const Node& node, const GraphIndex& index,
                                     const InferredShapes& shapes) {
  if (!isDefaultDomain(node) || node.opType != "Resize" || node.opset < 11 ||
      node.outputs.size() != 1 || node.outputs[0].empty() || node.inputs.empty() ||
      node.inputs[0].empty() || !isFloat(node, shapes) ||
      node.attrString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
    return std::nullopt;
  const SymbolicShape* in = shapeOf(shapes, node.inputs[0]);
  const SymbolicShape* out = shapeOf(shapes, node.outputs[0]);
  if (!in || !out || in->size() != 4 || out->size() != 4 || !((*in)[0] == (*out)[0]) ||
      !((*in)[1] == (*out)[1]))
    return std::nullopt;
  ResizeNhwc plan;
  if (!node.attrInts("axes").empty()) {  // an empty list means every axis, as none
    for (int64_t a : node.attrInts("axes")) {
      if (a < 0) a += 4;
      if (a < 0 || a > 3) return std::nullopt;
      plan.axes.push_back(toChannelsLastAxis(a));
    }
    return plan;  // scales and sizes follow the axes' order: unchanged
  }
  for (size_t slot : {size_t(2), size_t(3)}) {
    if (!node.hasInput(slot)) continue;
    const Tensor* t = index.constant(node.inputs[slot]);
    if (!t) return std::nullopt;
    if (t->numel() == 0) continue;  // an empty scales beside sizes
    if (t->rank() != 1 || t->numel() != 4) return std::nullopt;
    plan.inputs.push_back({slot, permutedVector(*t, kToChannelsLast)});
  }
  if (plan.inputs.empty()) return std::nullopt;
  return plan;
}

// True when `node` has a channels-last form this pass may give it.
bool qualifies(const Node& node, const Graph& g, const InferredShapes& shapes) {
  if (node.outputs.size() != 1 || node.outputs[0].empty() || node.inputs.empty() ||
      node.inputs[0].empty() || isChannelsLast(node) || node.hasSubgraphs())
    return false;
  if (inputRank(node, shapes) != 4) return false;
  if (isFusedConvMaxPool(node)) return true;
  if (node.opType == kQuantizedConvOp && node.domain == kKilnDomain)
    return qualifiesInt8(node, g, shapes);
  // MaxPool also pools int8 / uint8 channels-last (fold_qdq's quantized MaxPools).
  const DataType type = typeOf(shapes, node.inputs[0]);
  if (isDefaultDomain(node) && node.opType == "MaxPool" &&
      (type == DataType::kInt8 || type == DataType::kUInt8))
    return node.attrInts("kernel_shape").size() == 2 && node.attrInt("storage_order", 0) == 0;
  if (!isFloat(node, shapes)) return false;
  const bool conv = (node.opType == "Conv" && isDefaultDomain(node)) ||
                    (node.opType == "FusedConv" && node.domain == kKilnDomain);
  if (conv) {
    if (node.inputs.size() < 2) return false;
    auto w = g.initializers.find(node.inputs[1]);
    return w != g.initializers.end() && w->second.rank() == 4;
  }
  if (!isDefaultDomain(node)) return false;
  if (node.opType == "MaxPool" || node.opType == "AveragePool")
    return node.attrInts("kernel_shape").size() == 2 && node.attrInt("storage_order", 0) == 0;
  return node.opType == "GlobalAveragePool" || node.opType == "GlobalMaxPool";
}

std::string freshValue(const Graph& g, const std::set<std::string>& taken,
                       const std::string& base) {
  std::string name = base;
  for (int i = 1; taken.count(name) || g.initializers.count(name); ++i)
    name = base + "_" + std::to_string(i);
  return name;
}

// A reformat layer: Transpose `from` -> `to` with `perm`, tagged with this pass and
// the layer it serves.
Node reformat(const std::string& from, const std::string& to, const int (&perm)[4],
              const std::string& layout, const std::string& serves, int opset) {
  Node t;
  t.name = "Reformat " + from + " to " + layout;
  t.opType = "Transpose";
  t.opset = opset;
  t.index = -1;
  t.inputs = {from};
  t.outputs = {to};
  Attribute p;
  p.kind = Attribute::Kind::kInts;
  p.ints.assign(perm, perm + 4);
  t.attributes["perm"] = p;
  t.attributes[kFusionPassAttribute] = stringAttribute(kName);
  t.attributes[kSourceNodesAttribute] = stringsAttribute({serves});
  return t;
}

// The NHWC form of a broadcast input [.., C, 1, 1]: [N or 1, 1, 1, C], the same bytes.
// An initializer gets a reshaped copy, a computed value a Reshape node (0 copies N).
std::string broadcastTwin(Graph& g, std::set<std::string>& taken, const std::string& value,
                          const SymbolicShape& shape, int opset, std::vector<Node>* nodes) {
  std::vector<DimExpr> nchw(4 - shape.size(), DimExpr(1));
  nchw.insert(nchw.end(), shape.begin(), shape.end());
  const int64_t c = nchw[1].constValue();
  if (c == 1 && shape.size() < 4) return value;  // a scalar or [N]-free broadcast: as it is
  const std::string twin = freshValue(g, taken, value + "_nhwc");
  taken.insert(twin);
  auto init = g.initializers.find(value);
  if (init != g.initializers.end()) {
    const int64_t n = nchw[0].constValue();
    g.initializers[twin] = init->second.reshaped({n, 1, 1, c});
    return twin;
  }
  const std::string target = freshValue(g, taken, value + "_nhwc_shape");
  taken.insert(target);
  g.initializers[target] = Tensor::int64Vector(
      {shape.size() == 4 ? (nchw[0].isConst() ? nchw[0].constValue() : 0) : 1, 1, 1, c});
  Node r;
  r.name = "Reshape " + value + " to NHWC";
  r.opType = "Reshape";
  r.opset = opset;
  r.index = -1;
  r.inputs = {value, target};
  r.outputs = {twin};
  r.attributes[kFusionPassAttribute] = stringAttribute(kName);
  nodes->push_back(std::move(r));
  return twin;
}

// A plain Conv as a FusedConv without activation (same inputs, bias in the epilogue).
void asFusedConv(Node* node) {
  if (node->opType == "FusedConv") return;
  std::vector<std::string> sources = node->attrStrings(kSourceNodesAttribute);
  if (sources.empty()) sources.push_back(node->displayName());
  node->name = node->displayName();
  node->opType = "FusedConv";
  node->domain = kKilnDomain;
  node->opset = 1;
  node->attributes["activation"] = stringAttribute("none");
  node->attributes[kSourceNodesAttribute] = stringsAttribute(std::move(sources));
}

class ChannelsLastLayout final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Op(X) = T^-1(Op_nhwc(T(X))), T(T^-1(v)) = v: convolutions and pooling in NHWC, "
            "Transposes only at the region's edges (backend and precision permitting)",
            2};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    auto inferred = inferShapes(network);
    if (!inferred.isOk()) return Status::ok();  // no shapes, no layout decisions
    const auto& shapes = inferred.value().values;
    std::vector<bool> chosen(g.nodes.size()), layoutFree(g.nodes.size());
    std::vector<FollowPlan> follows(g.nodes.size());
    std::vector<bool> follower(g.nodes.size());
    std::vector<int64_t> concatAxis(g.nodes.size(), -1);          // a following Concat's NHWC axis
    std::vector<std::vector<int64_t>> sliceAxes(g.nodes.size());  // a following Slice's
    // A following channel shuffle's nodes: each one's NHWC shape input (Reshapes) or perm.
    std::map<int, std::vector<int64_t>> shuffleShapes, shufflePerms;
    std::set<int> decidedWithReshape;   // a whole-sample norm's nodes after its first Reshape
    std::map<int, ResizeNhwc> resizes;  // the Resizes going NHWC
    bool any = false;
    const GraphIndex index(g);
    // Resizes that may go NHWC, whatever their readers (see resizeJoins).
    std::map<int, ResizeNhwc> resizeForms;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (auto form = resizeNhwc(g.nodes[i], index, shapes))
        resizeForms[static_cast<int>(i)] = *form;
    // Whether every reader of node `at`'s output is a node that qualifies (reading it as X)
    // or a Concat.
    auto readersTakeNhwc = [&](int at) {
      const std::vector<int> readers = index.readers(g.nodes[at].outputs[0]);
      if (readers.empty()) return false;
      for (int reader : readers) {
        if (reader < 0) return false;
        const Node& r = g.nodes[reader];
        const bool layer = qualifies(r, g, shapes) && r.inputs[0] == g.nodes[at].outputs[0];
        if (!layer && !(isDefaultDomain(r) && r.opType == "Concat")) return false;
      }
      return true;
    };
    // A Resize joins the region when its readers are region layers: nodes that qualify, or
    // Concats each of whose inputs is a region value, a free view, or another Resize that
    // may join (one whose readers are such layers too).
    auto resizeJoins = [&](int at) {
      const Node& node = g.nodes[at];
      const int producer = index.producer(node.inputs[0]);
      const bool inputNhwc = (producer >= 0 && chosen[producer]) ||
                             isChannelsFirstView(node.inputs[0], g, index, shapes);
      const SymbolicShape* in = shapeOf(shapes, node.inputs[0]);
      const SymbolicShape* out = shapeOf(shapes, node.outputs[0]);
      const bool grows = in && out && (*in)[2].isConst() && (*in)[3].isConst() &&
                         (*out)[2].isConst() && (*out)[3].isConst() &&
                         (*out)[2].constValue() * (*out)[3].constValue() >=
                             (*in)[2].constValue() * (*in)[3].constValue();
      if ((!inputNhwc && !grows) || !readersTakeNhwc(at)) return false;
      for (int reader : index.readers(node.outputs[0])) {
        const Node& r = g.nodes[reader];
        if (r.opType != "Concat") continue;
        for (const std::string& v : r.inputs) {
          const int p = v.empty() ? -1 : index.producer(v);
          const bool laterResize = p > at && resizeForms.count(p) && readersTakeNhwc(p);
          if (p < 0 ||
              !(chosen[p] || p == at || laterResize || isChannelsFirstView(v, g, index, shapes)))
            return false;
        }
      }
      return true;
    };
    // In order, so a layout-free op sees whether its input's producer went NHWC.
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& node = g.nodes[i];
      if (shuffleShapes.count(static_cast<int>(i)) || shufflePerms.count(static_cast<int>(i)) ||
          decidedWithReshape.count(static_cast<int>(i))) {
        any = true;  // decided with the shuffle's (or the norm's) first Reshape
        continue;
      }
      const WholeSampleNorm norm =
          wholeSampleNormFollowsRegion(g, index, static_cast<int>(i), chosen, shapes);
      if (!norm.nodes.empty()) {
        decidedWithReshape.insert(norm.nodes[1]);
        shuffleShapes[norm.nodes[0]] = norm.flatShape;
        shuffleShapes[norm.nodes[2]] = norm.nhwcShape;
        for (int n : norm.nodes) {
          chosen[n] = layoutFree[n] = follower[n] = true;
          follows[n] = {{0}, {}};
        }
        any = true;
        continue;
      }
      const Shuffle shuffle = shuffleFollowsRegion(g, index, static_cast<int>(i), chosen, shapes);
      if (!shuffle.nodes.empty()) {
        shuffleShapes[shuffle.nodes[0]] = {0, 0, 0, shuffle.a, shuffle.b};
        shufflePerms[shuffle.nodes[1]] = {0, 1, 2, 4, 3};
        shuffleShapes[shuffle.nodes[2]] = {0, 0, 0, shuffle.c};
        for (int n : shuffle.nodes) {
          chosen[n] = layoutFree[n] = follower[n] = true;
          follows[n] = {{0}, {}};
        }
        any = true;
        continue;
      }
      chosen[i] = qualifies(node, g, shapes);
      if (!chosen[i] && resizeForms.count(static_cast<int>(i)) &&
          resizeJoins(static_cast<int>(i))) {
        resizes[static_cast<int>(i)] = resizeForms[static_cast<int>(i)];
        chosen[i] = layoutFree[i] = follower[i] = true;
        follows[i] = {{0}, {}};
      }
      if (!chosen[i] && isLayoutFree(node, g)) {
        const int producer = index.producer(node.inputs[0]);
        chosen[i] = layoutFree[i] = producer >= 0 && chosen[producer];
      }
      if (!chosen[i] && followsRegion(node, index, chosen, shapes, &follows[i]))
        chosen[i] = layoutFree[i] = follower[i] = true;
      if (!chosen[i] &&
          concatFollowsRegion(node, g, index, chosen, shapes, &follows[i], &concatAxis[i]))
        chosen[i] = layoutFree[i] = follower[i] = true;
      if (!chosen[i] && sliceFollowsRegion(node, index, chosen, shapes, &follows[i], &sliceAxes[i]))
        chosen[i] = layoutFree[i] = follower[i] = true;
      any |= chosen[i];
    }
    if (!any) return Status::ok();

    const int opset = network.defaultOpset();
    std::set<std::string> taken;
    for (const Node& n : g.nodes) taken.insert(n.outputs.begin(), n.outputs.end());
    for (const ValueInfo& v : g.inputs) taken.insert(v.name);
    std::map<std::string, std::string> nhwc;  // value -> its channels-last twin
    std::vector<Node> nodes;
    std::set<std::string> oldFilters;
    // A Shape read only as the target of a Reshape whose target the region replaces (a
    // whole-sample norm's Reshape back to Shape(x), dynamic batch) goes: it would otherwise
    // keep x's channels-first form alive for nothing.
    std::set<int> deadShapes;
    for (const auto& [at, target] : shuffleShapes) {
      const int p = index.producer(g.nodes[at].inputs[1]);
      if (p >= 0 && isDefaultDomain(g.nodes[p]) && g.nodes[p].opType == "Shape" && !chosen[p] &&
          index.readers(g.nodes[p].outputs[0]) == std::vector<int>{at})
        deadShapes.insert(p);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node node = g.nodes[i];
      if (deadShapes.count(static_cast<int>(i))) continue;
      if (!chosen[i]) {
        nodes.push_back(std::move(node));
        continue;
      }
      const std::string serves = node.displayName();
      if (node.opType == "Conv") asFusedConv(&node);
      if (concatAxis[i] >= 0) node.attributes["axis"] = intAttribute(concatAxis[i]);
      if (auto shape = shuffleShapes.find(static_cast<int>(i)); shape != shuffleShapes.end()) {
        const std::string target = freshValue(g, taken, node.outputs[0] + "_nhwc_shape");
        taken.insert(target);
        g.initializers[target] = Tensor::int64Vector(shape->second);
        node.inputs[1] = target;
      }
      if (auto resize = resizes.find(static_cast<int>(i)); resize != resizes.end()) {
        for (const auto& [slot, tensor] : resize->second.inputs) {
          const std::string permuted = freshValue(g, taken, node.inputs[slot] + "_nhwc");
          taken.insert(permuted);
          g.initializers[permuted] = tensor;
          node.inputs[slot] = permuted;
        }
        if (!resize->second.axes.empty())
          node.attributes["axes"] = rewrite::intsAttribute(resize->second.axes);
      }
      if (auto perm = shufflePerms.find(static_cast<int>(i)); perm != shufflePerms.end())
        node.attributes["perm"] = rewrite::intsAttribute(perm->second);
      if (node.opType == "Slice" && follower[i]) {  // its axes, permuted (sliceFollowsRegion)
        if (node.opset < 10) {
          node.attributes["axes"] = rewrite::intsAttribute(sliceAxes[i]);
        } else {
          if (node.inputs.size() < 4) node.inputs.resize(4);
          const std::string axes = freshValue(g, taken, node.inputs[0] + "_nhwc_axes");
          taken.insert(axes);
          g.initializers[axes] = Tensor::int64Vector(sliceAxes[i]);
          node.inputs[3] = axes;
        }
      }
      // A layout-free op keeps its meaning on NHWC storage: no attribute, no filter.
      if (!layoutFree[i]) node.attributes[kChannelsLastAttribute] = intAttribute(1);
      const ChannelsLastRoles roles = follower[i]
                                          ? ChannelsLastRoles{follows[i].regionSlots, {0}, -1}
                                      : layoutFree[i] ? ChannelsLastRoles{{0}, {0}, -1}
                                                      : channelsLastRoles(node);
      for (size_t slot : follows[i].broadcastSlots)
        node.inputs[slot] = broadcastTwin(g, taken, node.inputs[slot],
                                          *shapeOf(shapes, node.inputs[slot]), opset, &nodes);
      for (size_t slot : roles.activationInputs) {
        if (!node.hasInput(slot)) continue;
        const std::string value = node.inputs[slot];
        if (!nhwc.count(value)) {
          const std::string twin = freshValue(g, taken, value + "_nhwc");
          taken.insert(twin);
          nodes.push_back(reformat(value, twin, kToChannelsLast, "NHWC", serves, opset));
          nhwc[value] = twin;
        }
        node.inputs[slot] = nhwc[value];
      }
      if (roles.filterInput >= 0) {
        const std::string w = node.inputs[roles.filterInput];
        const std::string krsc = freshValue(g, taken, w + "_krsc");
        taken.insert(krsc);
        g.initializers[krsc] = permute4d(g.initializers.at(w), kToChannelsLast);
        node.inputs[roles.filterInput] = krsc;
        oldFilters.insert(w);
      }
      const std::string y = node.outputs[0];
      const std::string twin = freshValue(g, taken, y + "_nhwc");
      taken.insert(twin);
      node.outputs[0] = twin;
      nhwc[y] = twin;
      const std::string layer = node.displayName();
      nodes.push_back(std::move(node));
      applied->push_back({kName, {serves}, layer});
      // A channels-first reader: a graph output, a node left channels-first, or a
      // converted node reading y in a slot that stays channels-first (a
      // FusedConvMaxPool's X).
      bool channelsFirstReader = false;
      for (int reader : index.readers(y)) {
        if (deadShapes.count(reader)) continue;
        if (reader < 0 || !chosen[reader]) {
          channelsFirstReader = true;
          continue;
        }
        const Node& r = g.nodes[reader];
        const std::vector<size_t> nhwcSlots = follower[reader] ? follows[reader].regionSlots
                                              : layoutFree[reader]
                                                  ? std::vector<size_t>{0}
                                                  : channelsLastRoles(r).activationInputs;
        for (size_t slot = 0; slot < r.inputs.size(); ++slot)
          if (r.inputs[slot] == y &&
              std::find(nhwcSlots.begin(), nhwcSlots.end(), slot) == nhwcSlots.end())
            channelsFirstReader = true;
      }
      if (channelsFirstReader)
        nodes.push_back(reformat(twin, y, kToChannelsFirst, "NCHW", serves, opset));
    }
    g.nodes = std::move(nodes);
    const GraphIndex after(g);
    for (const std::string& w : oldFilters)
      if (after.readers(w).empty()) g.initializers.erase(w);
    network.opsets[kKilnDomain] = 1;
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeChannelsLastLayout() {
  return std::make_unique<ChannelsLastLayout>();
}

}  // namespace kiln::passes
