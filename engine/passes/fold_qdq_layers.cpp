// fold_qdq rule 3 (the algebra is in fold_qdq.cpp): a quantizable layer and the
// Q/DQ nodes around it become one QuantizedConv / QuantizedMatMul
// (ir/quantized_layers.h). The layer's activation must come from a per-tensor DQ; its
// weights from a DQ of int8 constants with zero point 0 (per tensor or per output
// channel), or, when the activation's Q came from a calibration cache, be float
// constants that are quantized here per output channel (max |w| / 127). A conv's
// residual Z from a per-tensor DQ of int8 values with zero point 0 folds too: the
// layer reads the int8 values with z_scale (DQ(zq, sz, 0) = sz * zq, which the
// epilogue adds), so a residual block's input can stay int8 between blocks.
#include <algorithm>
#include <cmath>

#include "ir/quantized_layers.h"
#include "kiln/calibration.h"
#include "passes/qdq_rules.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

enum class LayerKind { kNone, kConv, kMatMul, kGemm };

LayerKind kindOf(const Node& node) {
  const bool onnx = node.domain.empty() || node.domain == "ai.onnx";
  if (node.outputs.size() != 1 || node.inputs.size() < 2) return LayerKind::kNone;
  if ((onnx && node.opType == "Conv") || (node.domain == kKilnDomain && node.opType == "FusedConv"))
    return LayerKind::kConv;
  if ((onnx && node.opType == "MatMul") ||
      (node.domain == kKilnDomain && node.opType == "FusedMatMul"))
    return LayerKind::kMatMul;
  if (onnx && node.opType == "Gemm") return LayerKind::kGemm;
  return LayerKind::kNone;
}

// An input of the folded layer: an existing value, or a new initializer (added only
// once the whole fold is known to succeed, so a failed match leaves nothing behind).
struct FoldedInput {
  std::string name;  // the value, or the new initializer's base name
  Tensor created;    // defined: add this initializer
  std::string commit(Graph& g) const {
    return created.defined() ? addInitializer(g, name, created) : name;
  }
};

// The weights as the quantized layer wants them, with their scale input.
struct FoldedWeights {
  FoldedInput weights, scale;
  std::vector<int> dequantize;  // the weight DQ node, when it goes with the fold
};

bool allZero(const Tensor* t) {
  if (!t) return false;
  for (int64_t i = 0; i < t->numel(); ++i)
    if (t->valueAsInt64(i) != 0) return false;
  return true;
}

// Quantizes float weights per output channel (axis) with symmetric scales.
Tensor quantizeWeights(const Tensor& w, int axis, std::vector<float>* scales) {
  *scales = perChannelWeightScales(w, axis);
  int64_t inner = 1;
  for (int d = axis + 1; d < w.rank(); ++d) inner *= w.dim(d);
  Tensor q(DataType::kInt8, w.shape());
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float s = (*scales)[(i / inner) % w.dim(axis)];
    const double v = std::nearbyint(static_cast<double>(w.data<float>()[i] / s));
    q.data<int8_t>()[i] = static_cast<int8_t>(std::clamp(v, -127.0, 127.0));
  }
  return q;
}

// Weights of a conv ([M, ...], channel axis 0) or a matmul ([K, N] axis 1; Gemm
// transB [N, K] axis 0, transposed here).
bool foldWeights(const Graph& g, const GraphIndex& index, const Node& layer, LayerKind kind,
                 bool calibrated, int layerIndex, FoldedWeights* out, std::string* whyNot) {
  const std::string& w = layer.inputs[1];
  const bool transB = kind == LayerKind::kGemm && layer.attrInt("transB", 0) != 0;
  const int channelAxis = kind == LayerKind::kConv || transB ? 0 : 1;
  const int dq = dequantizeProducing(g, index, w);
  if (dq < 0) {
    const Tensor* fw = index.constant(w);
    if (!calibrated || !fw || fw->type() != DataType::kFloat32 ||
        (kind != LayerKind::kConv && fw->rank() != 2) || fw->rank() < 2) {
      *whyNot = "its weights are not quantized (no DequantizeLinear of int8 constants)";
      return false;
    }
    std::vector<float> scales;
    Tensor q = quantizeWeights(*fw, channelAxis, &scales);
    out->weights = {w + "_int8", transB ? rewrite::transposedMatrix(q) : q};
    out->scale = {w + "_scale",
                  Tensor::fromVector(DataType::kFloat32, {int64_t(scales.size())}, scales)};
    return true;
  }
  const Node& wdq = g.nodes[dq];
  const Tensor* wq = index.constant(wdq.inputs[0]);
  const Tensor* scale = index.constant(wdq.inputs[1]);
  if (!wq || wq->type() != DataType::kInt8 || !scale || scale->type() != DataType::kFloat32 ||
      (wdq.hasInput(2) && !allZero(index.constant(wdq.inputs[2])))) {
    *whyNot = "its weights are not int8 constants with zero point 0";
    return false;
  }
  if (kind != LayerKind::kConv && wq->rank() != 2) {
    *whyNot = "its weights are not a 2-D matrix";
    return false;
  }
  if (scale->numel() != 1) {
    int64_t axis = wdq.attrInt("axis", 1);
    if (axis < 0) axis += wq->rank();
    if (axis != channelAxis || scale->rank() != 1 || scale->numel() != wq->dim(channelAxis)) {
      *whyNot = "its weight scales are neither per tensor nor per output channel";
      return false;
    }
  }
  out->weights = transB ? FoldedInput{wdq.inputs[0] + "_kn", rewrite::transposedMatrix(*wq)}
                        : FoldedInput{wdq.inputs[0], Tensor()};
  out->scale = {wdq.inputs[1], Tensor()};
  if (index.soleReader(w) == layerIndex) out->dequantize.push_back(dq);
  return true;
}

// The Add that alone reads MatMul `layerIndex`'s product and adds a float32 constant [N]
// (N the int8 weights' columns) to it, or -1; its constant becomes `bias`.
int matMulBiasAdd(const Graph& g, const GraphIndex& index, int layerIndex,
                  const FoldedWeights& weights, FoldedInput* bias) {
  const int add = index.soleReader(g.nodes[layerIndex].outputs[0]);
  if (add < 0 || !isOnnxOp(g.nodes[add], "Add", 2)) return -1;
  const std::string* b = otherInput(g.nodes[add], g.nodes[layerIndex].outputs[0]);
  const Tensor* w = weights.weights.created.defined() ? &weights.weights.created
                                                      : index.constant(weights.weights.name);
  const Tensor* fb = b ? index.constant(*b) : nullptr;
  if (!fb || !w || w->rank() != 2 || fb->type() != DataType::kFloat32 || fb->rank() != 1 ||
      fb->numel() != w->dim(1) || *b == g.nodes[layerIndex].outputs[0])
    return -1;
  *bias = {*b, Tensor()};
  return add;
}

// The bias as a float32 [C] initializer name ("" for none); DQ'd int32 biases
// (ONNX Runtime's QDQ format) are dequantized here.
bool foldBias(const Graph& g, const GraphIndex& index, const Node& layer, LayerKind kind,
              int layerIndex, FoldedInput* bias, std::vector<int>* dequantize,
              std::string* whyNot) {
  *bias = {};
  if (kind == LayerKind::kMatMul && layer.opType == "MatMul") return true;
  if (!layer.hasInput(2)) return true;
  const std::string& b = layer.inputs[2];
  if (const Tensor* fb = index.constant(b); fb && fb->type() == DataType::kFloat32) {
    *bias = fb->rank() == 1 ? FoldedInput{b, Tensor()}
                            : FoldedInput{b + "_1d", fb->clone().reshaped({fb->numel()})};
    return true;
  }
  const int dq = dequantizeProducing(g, index, b);
  const Tensor* bq = dq >= 0 ? index.constant(g.nodes[dq].inputs[0]) : nullptr;
  const Tensor* scale = dq >= 0 ? index.constant(g.nodes[dq].inputs[1]) : nullptr;
  if (!bq || bq->type() != DataType::kInt32 || !scale || scale->type() != DataType::kFloat32 ||
      (scale->numel() != 1 && scale->numel() != bq->numel()) ||
      (g.nodes[dq].hasInput(2) && !allZero(index.constant(g.nodes[dq].inputs[2])))) {
    *whyNot = "its bias is neither a float constant nor a DequantizeLinear of int32 constants";
    return false;
  }
  Tensor real(DataType::kFloat32, {bq->numel()});
  for (int64_t i = 0; i < bq->numel(); ++i)
    real.data<float>()[i] = static_cast<float>(bq->data<int32_t>()[i]) *
                            scale->data<float>()[scale->numel() == 1 ? 0 : i];
  *bias = {b + "_float", std::move(real)};
  if (index.soleReader(b) == layerIndex) dequantize->push_back(dq);
  return true;
}

// The conv's residual Z (slot 3): its int8 value and z_scale when a per-tensor
// DequantizeLinear of int8 values with zero point 0 writes it; otherwise Z as it is
// (float), with no z_scale. The DQ goes with the fold when the layer is its only
// reader (the INT8 conv reading the same block input keeps it otherwise, and removes
// it when it folds last).
void foldResidual(const Graph& g, const GraphIndex& index, const Node& layer, int layerIndex,
                  std::string* z, std::string* zScale, std::vector<int>* dequantize) {
  *z = layer.hasInput(3) ? layer.inputs[3] : "";
  *zScale = "";
  const int dq = z->empty() ? -1 : dequantizeProducing(g, index, *z);
  if (dq < 0 || !isPerTensor(g.nodes[dq], index) || readsFloat8(g, index, g.nodes[dq])) return;
  const Node& zdq = g.nodes[dq];
  const DataType type = quantizedTypeOf(g, index, zdq.inputs[0]);
  const ZeroPoint zp = zeroPointOf(zdq, index, type);
  if (zp.type != DataType::kInt8 || zp.value != 0 ||
      (type != DataType::kInt8 && type != DataType::kUndefined))
    return;
  if (index.soleReader(*z) == layerIndex) dequantize->push_back(dq);
  *z = zdq.inputs[0];
  *zScale = zdq.inputs[1];
}

// Gemm and FusedMatMul forms QuantizedMatMul can express.
bool supportedMatMulForm(const Node& layer, LayerKind kind, std::string* whyNot) {
  if (kind == LayerKind::kGemm &&
      (layer.attrFloat("alpha", 1.f) != 1.f || layer.attrInt("transA", 0) != 0 ||
       (layer.hasInput(2) && layer.attrFloat("beta", 1.f) != 1.f))) {
    *whyNot = "Gemm with alpha or beta other than 1 or transA has no INT8 form";
    return false;
  }
  const std::string act = layer.attrString("activation", "none");
  if (kind == LayerKind::kMatMul && act != "none" && act != "relu") {
    *whyNot = "activation '" + act + "' has no INT8 epilogue";
    return false;
  }
  return true;
}

// Rule 3 at `at`: its match, and when `rewrite` its rewrite too (foldQuantizableLayer);
// without `rewrite` nothing changes and true says the layer would fold as an INT8 layer.
bool matchOrFoldLayer(Network& network, const GraphIndex& index, int at, bool rewrite,
                      std::vector<PassApplication>* applied, std::string* whyNot) {
  Graph& g = network.graph;
  const LayerKind kind = kindOf(g.nodes[at]);
  if (kind == LayerKind::kNone) return false;
  const int xdq = dequantizeProducing(g, index, g.nodes[at].inputs[0]);
  if (xdq < 0) return false;
  const Node& dq = g.nodes[xdq];
  if (readsFloat8(g, index, dq))
    return rewrite && foldFp8Layer(network, index, at, applied, whyNot);
  const DataType xType = quantizedTypeOf(g, index, dq.inputs[0]);
  const ZeroPoint xzp = zeroPointOf(dq, index, xType);
  if (!isPerTensor(dq, index) || (xzp.type != DataType::kInt8 && xzp.type != DataType::kUInt8)) {
    *whyNot = "its input is not quantized per tensor to int8/uint8";
    return false;
  }
  const int qIndex = index.producer(dq.inputs[0]);
  const bool calibrated = dq.hasAttr(kCalibratedQuantizeAttribute) ||
                          (qIndex >= 0 && g.nodes[qIndex].hasAttr(kCalibratedQuantizeAttribute));
  if (kind != LayerKind::kConv && !supportedMatMulForm(g.nodes[at], kind, whyNot)) return false;
  const std::string act = g.nodes[at].attrString("activation", "none");
  if (act == "gelu_erf" || act == "gelu_tanh") {  // FusedConv's: no INT8 epilogue has GELU
    *whyNot = "activation '" + act + "' has no INT8 epilogue";
    return false;
  }
  FoldedWeights weights;
  std::vector<int> replaced;
  FoldedInput bias;
  if (!foldWeights(g, index, g.nodes[at], kind, calibrated, at, &weights, whyNot) ||
      !foldBias(g, index, g.nodes[at], kind, at, &bias, &replaced, whyNot))
    return false;
  // A plain MatMul's bias (an export's Linear: MatMul, then Add of a float32 constant [N]
  // that alone reads the product) rides the layer's epilogue like FusedMatMul's bias input.
  std::string output = g.nodes[at].outputs[0];
  const int biasAdd = kind == LayerKind::kMatMul && g.nodes[at].opType == "MatMul"
                          ? matMulBiasAdd(g, index, at, weights, &bias)
                          : -1;
  if (biasAdd >= 0) output = g.nodes[biasAdd].outputs[0];
  if (!rewrite) return true;
  const Node& layer = g.nodes[at];
  if (biasAdd >= 0) replaced.push_back(biasAdd);
  replaced.insert(replaced.end(), weights.dequantize.begin(), weights.dequantize.end());
  if (index.soleReader(layer.inputs[0]) == at) replaced.push_back(xdq);
  replaced.push_back(at);

  Node folded;
  folded.name = layer.displayName();
  folded.domain = kKilnDomain;
  folded.opType = kind == LayerKind::kConv ? kQuantizedConvOp : kQuantizedMatMulOp;
  folded.opset = 1;
  if (kind == LayerKind::kConv) {
    folded.attributes = layer.attributes;
  } else {
    folded.attributes["activation"] = stringAttribute(layer.attrString("activation", "none"));
  }
  folded.attributes.erase(kSourceNodesAttribute);
  folded.attributes.erase(kFusionPassAttribute);
  folded.attributes[kInt8OriginAttribute] =
      stringAttribute(calibrated ? "calibrated (implicit INT8)" : "explicit Q/DQ");
  folded.inputs.assign(kQuantSlots, "");
  folded.inputs[kQuantX] = dq.inputs[0];
  folded.inputs[kQuantW] = weights.weights.commit(g);
  folded.inputs[kQuantBias] = bias.commit(g);
  if (kind == LayerKind::kConv)
    foldResidual(g, index, layer, at, &folded.inputs[kQuantResidual], &folded.inputs[kQuantZScale],
                 &replaced);
  folded.inputs[kQuantXScale] = dq.inputs[1];
  folded.inputs[kQuantXZeroPoint] =
      dq.hasInput(2) ? dq.inputs[2]
                     : addInitializer(g, dq.inputs[1] + "_zero",
                                      Tensor(xzp.type, Shape{}));  // zero of the input's type
  folded.inputs[kQuantWScale] = weights.scale.commit(g);
  folded.outputs = {output};
  // A sole per-tensor Q reader of the output folds in: the layer writes int8.
  const int reader = index.soleReader(output);
  if (reader >= 0 && isQuantize(g.nodes[reader]) && isPerTensor(g.nodes[reader], index)) {
    const Node& q = g.nodes[reader];
    const ZeroPoint yzp = zeroPointOf(q, index, DataType::kUndefined);
    if (yzp.type == DataType::kInt8 || yzp.type == DataType::kUInt8) {
      folded.inputs[kQuantYScale] = q.inputs[1];
      folded.inputs[kQuantYZeroPoint] =
          q.hasInput(2) ? q.inputs[2]
                        : addInitializer(g, q.inputs[1] + "_zero", Tensor(yzp.type, Shape{}));
      folded.outputs = {q.outputs[0]};
      replaced.push_back(reader);
    }
  }
  while (!folded.inputs.empty() && folded.inputs.back().empty()) folded.inputs.pop_back();
  std::sort(replaced.begin(), replaced.end());
  std::vector<std::string> names;
  for (int i : replaced) names.push_back(g.nodes[i].displayName());
  applied->push_back({kFoldQdqName, names, folded.name});
  replaceNodes(g, replaced, std::move(folded), kFoldQdqName);
  return true;
}

}  // namespace

bool foldQuantizableLayer(Network& network, const GraphIndex& index, int at,
                          std::vector<PassApplication>* applied, std::string* whyNot) {
  return matchOrFoldLayer(network, index, at, /*rewrite=*/true, applied, whyNot);
}

bool quantizableLayerFolds(Network& network, const GraphIndex& index, int at) {
  std::string whyNot;
  return matchOrFoldLayer(network, index, at, /*rewrite=*/false, nullptr, &whyNot);
}

}  // namespace kiln::passes
