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
// (any shapes that broadcast: 4-D values permuted alike broadcast alike) and whose other
// inputs broadcast over H and W ([N, C, 1, 1], [C, 1, 1], scalars: stored [N, 1, 1, C] by a
// Reshape, which moves no bytes) computes the same values on NHWC storage: op(T^-1(a), b) =
// T^-1(op(a, T(b))). EfficientNet's squeeze-excitation scale Mul(x, s) and ConvNeXt's layer-scale
// Mul and residual Add then stay in the region instead of paying a reformat each way. A Concat of
// region values follows too, along the permuted axis (NCHW axis a is NHWC axis j with
// kToChannelsLast[j] = a: channels 1 -> 3), so DenseNet's blocks (Concat, then BN -> ReLU as one
// PointwiseChain: batch_norm_as_scale_shift) run NHWC throughout. A Slice of a region value with
// constant axes follows the same way (its axes permuted), so ShuffleNet's channel split does not
// pay a reformat per branch, and so does a Split (along the permuted axis, every output a region
// value: InceptionNeXt's token mixer, FocalNet's q / ctx / gates) and a StridedCopy that reads a
// box of a region value (the Split -> Slice chains fold_split_views made: FocalNet's gate per focal
// level, its geometry rewritten for NHWC storage) and a Pad of a region value in any mode, its
// constant pads (or axes) permuted (TResNet's BlurPool: a reflect Pad before its stride-2 blur
// convolution, whose filter is a Constant node and qualifies like an initializer), and so does a
// channel shuffle (Reshape, Transpose (0, 2, 1, 3, 4), Reshape) as the same shuffle of the
// innermost axis; so does a normalization over each whole sample (Reshape to [N, 1, C * H * W],
// InstanceNormalization with a scalar scale and bias, Reshape back: GroupNorm(1, C) as torch
// exports it, PoolFormer's), whose statistics do not depend on where C sits. A Resize of H and W
// (constant scales or sizes, N and C kept) runs on NHWC storage with its scales, sizes or axes
// permuted when its readers are region layers (a convolution or pooling, or a Concat of region
// values, channels-first views of channels-last data and other such Resizes) and its input is a
// region value, such a view (Transpose (0, 3, 1, 2), or tokens turned into an image:
// fold_view_chains makes the reformat a Reshape), or no larger than its output: SegFormer's decoder
// upsamples four token maps and concatenates them for a 1x1 convolution, all channels-last then.
// Runs only when the builder asks for it (the backend prefers channels-last for the engine's
// precision) and after the fusions, which match channels-first patterns.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/channels_last.h"
#include "passes/channels_last_followers.h"
#include "ir/conv_max_pool.h"
#include "ir/pointwise_program.h"
#include "ir/quantized_layers.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace channels_last;

constexpr const char* kName = kChannelsLastPass;

int inputRank(const Node& node, const InferredShapes& shapes) {
  const SymbolicShape* shape = node.inputs.empty() ? nullptr : shapeOf(shapes, node.inputs[0]);
  return shape ? static_cast<int>(shape->size()) : -1;
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

// True when `node` has a channels-last form this pass may give it.
bool qualifies(const Node& node, const Graph& g, const GraphIndex& index,
               const InferredShapes& shapes) {
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
  if (conv) {  // a filter initializer or Constant node (timm's BlurPool writes a Constant)
    if (node.inputs.size() < 2) return false;
    const Tensor* w = index.constant(node.inputs[1]);
    return w && w->rank() == 4;
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
    std::vector<int64_t> followAxis(g.nodes.size(),
                                    -1);  // a following Concat's or Split's NHWC axis
    std::vector<std::vector<int64_t>> sliceAxes(g.nodes.size());  // a following Slice's
    std::map<int, PadNhwc> pads;  // following Pads' permuted pads or axes
    // A following channel shuffle's nodes: each one's NHWC shape input (Reshapes) or perm.
    std::map<int, std::vector<int64_t>> shuffleShapes, shufflePerms;
    std::set<int> decidedWithReshape;   // a whole-sample norm's nodes after its first Reshape
    std::map<int, ResizeNhwc> resizes;  // the Resizes going NHWC
    std::map<int, ops::StridedCopyGeometry> stridedCopies;  // following StridedCopies' NHWC reads
    bool any = false;
    const GraphIndex index(g);
    // Resizes that may go NHWC, whatever their readers (see resizeJoins).
    std::map<int, ResizeNhwc> resizeForms;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (auto form = resizeNhwc(g.nodes[i], index, shapes))
        resizeForms[static_cast<int>(i)] = *form;
    // Whether every reader of `value` is a node that qualifies (reading it as X) or a Concat.
    auto valueReadersTakeNhwc = [&](const std::string& value) {
      const std::vector<int> readers = index.readers(value);
      if (readers.empty()) return false;
      for (int reader : readers) {
        if (reader < 0) return false;
        const Node& r = g.nodes[reader];
        const bool layer = qualifies(r, g, index, shapes) && r.inputs[0] == value;
        if (!layer && !(isDefaultDomain(r) && r.opType == "Concat")) return false;
      }
      return true;
    };
    auto readersTakeNhwc = [&](int at) { return valueReadersTakeNhwc(g.nodes[at].outputs[0]); };
    // A Split follows when one of its outputs feeds region layers alone (a convolution, a
    // pooling, a Concat): otherwise (MobileViTv2's q / k / v for its elementwise attention)
    // each output would pay its own reformat back instead of the Split's input paying one.
    auto splitFeedsRegion = [&](const Node& split) {
      return std::any_of(split.outputs.begin(), split.outputs.end(), [&](const std::string& v) {
        return !v.empty() && valueReadersTakeNhwc(v);
      });
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
      chosen[i] = qualifies(node, g, index, shapes);
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
          concatFollowsRegion(node, g, index, chosen, shapes, &follows[i], &followAxis[i]))
        chosen[i] = layoutFree[i] = follower[i] = true;
      if (!chosen[i] && splitFeedsRegion(node) &&
          splitFollowsRegion(node, index, chosen, shapes, &follows[i], &followAxis[i]))
        chosen[i] = layoutFree[i] = follower[i] = true;
      if (!chosen[i] && sliceFollowsRegion(node, index, chosen, shapes, &follows[i], &sliceAxes[i]))
        chosen[i] = layoutFree[i] = follower[i] = true;
      PadNhwc pad;
      if (!chosen[i] && padFollowsRegion(node, index, chosen, shapes, &follows[i], &pad)) {
        pads[static_cast<int>(i)] = std::move(pad);
        chosen[i] = layoutFree[i] = follower[i] = true;
      }
      ops::StridedCopyGeometry read;
      if (!chosen[i] && stridedCopyFollowsRegion(node, index, chosen, shapes, &follows[i], &read)) {
        stridedCopies[static_cast<int>(i)] = std::move(read);
        chosen[i] = layoutFree[i] = follower[i] = true;
      }
      any |= chosen[i];
    }
    if (!any) return Status::ok();

    const int opset = network.defaultOpset();
    std::set<std::string> taken;
    for (const Node& n : g.nodes) taken.insert(n.outputs.begin(), n.outputs.end());
    for (const ValueInfo& v : g.inputs) taken.insert(v.name);
    std::map<std::string, std::string> nhwc;  // value -> its channels-last twin
    std::vector<Node> nodes;
    // Constants the rewrite replaced (channels-first filters, the shapes, axes, pads, scales and
    // sizes of followers): dropped at the end when nothing reads them any more.
    std::set<std::string> replacedConstants;
    // Input `slot` of `node` replaced by a new initializer `value` named after `base`; the
    // constant it read is a replaced one.
    auto replaceInput = [&](Node& node, size_t slot, const std::string& base, Tensor value) {
      const std::string name = freshValue(g, taken, base);
      taken.insert(name);
      g.initializers[name] = std::move(value);
      if (!node.inputs[slot].empty()) replacedConstants.insert(node.inputs[slot]);
      node.inputs[slot] = name;
    };
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
      if (followAxis[i] >= 0) node.attributes["axis"] = intAttribute(followAxis[i]);
      if (auto shape = shuffleShapes.find(static_cast<int>(i)); shape != shuffleShapes.end()) {
        replaceInput(node, 1, node.outputs[0] + "_nhwc_shape", Tensor::int64Vector(shape->second));
      }
      if (auto resize = resizes.find(static_cast<int>(i)); resize != resizes.end()) {
        for (const auto& [slot, tensor] : resize->second.inputs)
          replaceInput(node, slot, node.inputs[slot] + "_nhwc", tensor);
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
          replaceInput(node, 3, node.inputs[0] + "_nhwc_axes", Tensor::int64Vector(sliceAxes[i]));
        }
      }
      if (auto pad = pads.find(static_cast<int>(i)); pad != pads.end()) {
        const bool byAxes = !pad->second.axes.empty();
        if (node.opset < 11) {
          node.attributes["pads"] = rewrite::intsAttribute(pad->second.pads);
        } else {
          const size_t slot = byAxes ? 3 : 1;
          replaceInput(node, slot, node.inputs[slot] + (byAxes ? "_nhwc_axes" : "_nhwc_pads"),
                       Tensor::int64Vector(byAxes ? pad->second.axes : pad->second.pads));
        }
      }
      if (auto copy = stridedCopies.find(static_cast<int>(i)); copy != stridedCopies.end()) {
        node.attributes["shape"] = rewrite::intsAttribute(copy->second.shape);
        node.attributes["strides"] = rewrite::intsAttribute(copy->second.strides);
        node.attributes["offset"] = intAttribute(copy->second.offset);
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
        g.initializers[krsc] = permute4d(*index.constant(w), kToChannelsLast);
        node.inputs[roles.filterInput] = krsc;
        replacedConstants.insert(w);
      }
      // Every output goes NHWC (a following Split has several; every other chosen node one).
      std::vector<std::pair<std::string, std::string>> outputs;  // (y, its NHWC twin)
      for (std::string& y : node.outputs) {
        if (y.empty()) continue;
        const std::string twin = freshValue(g, taken, y + "_nhwc");
        taken.insert(twin);
        outputs.push_back({y, twin});
        nhwc[y] = twin;
        y = twin;
      }
      const std::string layer = node.displayName();
      nodes.push_back(std::move(node));
      applied->push_back({kName, {serves}, layer});
      for (const auto& [y, twin] : outputs) {
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
    }
    g.nodes = std::move(nodes);
    const GraphIndex after(g);
    std::set<std::string> unread;  // replaced constants no node reads any more
    for (const std::string& c : replacedConstants)
      if (after.readers(c).empty()) unread.insert(c);
    for (const std::string& c : unread) g.initializers.erase(c);
    // A Constant node that wrote only such a constant goes with it.
    g.nodes.erase(std::remove_if(g.nodes.begin(), g.nodes.end(),
                                 [&](const Node& n) {
                                   return isDefaultDomain(n) && n.opType == "Constant" &&
                                          n.outputs.size() == 1 && unread.count(n.outputs[0]);
                                 }),
                  g.nodes.end());
    network.opsets[kKilnDomain] = 1;
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeChannelsLastLayout() {
  return std::make_unique<ChannelsLastLayout>();
}

}  // namespace kiln::passes
