// fold_qdq: explicit quantization (TensorRT guide 7.4.3). With Q(x) = saturate(round(x
// / s) + z) and DQ(q) = (q - z) * s, s > 0, three rules rewrite a Q/DQ graph into INT8
// layers without changing its arithmetic beyond the order of float operations:
//  1. DQ propagates forward through layers that commute with it:
//       Op(DQ(q)) = DQ(Op(q))   for Op in MaxPool (DQ is monotone, so the max of the
//       dequantized values is the dequantized max), Reshape, Flatten, Transpose,
//       Squeeze, Unsqueeze (they move values, unchanged)
//     when the DQ is per tensor and Op is its only reader; Op then runs on int8.
//  2. A redundant pair erases: Q(DQ(q, s, z), s, z) = q (same scale, zero point and
//     type), so the Q's readers read q.
//  3. A quantizable layer folds its Q/DQ (fold_qdq_layers.cpp): Conv, FusedConv,
//     MatMul, Gemm, FusedMatMul reading DQ(xq, sx, zx) per tensor, weights DQ(wq, sw, 0)
//     (int8 constants, per tensor or per output channel) and a float or DQ'd int32
//     bias become QuantizedConv / QuantizedMatMul:
//       sum((xq - zx) sx * wq sw[c]) + b[c] = sx sw[c] * sum((xq - zx) wq) + b[c]
//     computed with int32 accumulation; a sole Q reader of the output folds in too
//     (INT8 output), otherwise the output stays float. A FusedConv's residual
//     Z = DQ(zq, sz, 0) (int8, per tensor) is read as zq with z_scale sz: the
//     epilogue adds sz * zq, the DQ's value, so a block's int8 output stays int8.
//     Float8e4m3fn Q/DQ around a GEMM fold into an Fp8MatMul instead
//     (fold_qdq_fp8.cpp: no zero points, float accumulation of exact E4M3 products).
//  4. Q propagates backward through the same layers, before the others apply:
//       Q(Op(v)) = Op(Q(v))     (Q is monotone and per tensor)
//     when v is written by a layer rule 3 folds (as INT8, not FP8) whose only reader
//     is Op, and the Q (int8 or uint8) is Op's only reader: rule 3 then takes the Q
//     as the layer's INT8 output and Op runs on int8. This is the shape of
//     QAT exports that quantize only layer inputs (Conv -> ReLU -> MaxPool -> Q/DQ ->
//     Conv): without it the layer writes float and MaxPool pools floats.
// Rules repeat until none applies. A float layer left between a DQ and a Q gets the
// kiln_int8_fallback attribute (kiln_fp8_fallback after a float8 DQ) saying why it is
// not INT8 (FP8), for the build record.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "ir/fp8_layers.h"
#include "ir/quantized_layers.h"
#include "passes/qdq_rules.h"

namespace kiln::passes {
namespace {

bool isQdqNode(const Node& node, const char* op) {
  return node.opType == op && isDefaultDomain(node) && node.inputs.size() >= 2 &&
         node.inputs.size() <= 3 && node.outputs.size() == 1 && !node.outputs[0].empty() &&
         !node.hasAttr("block_size");
}

bool constantsEqual(const Tensor* a, const Tensor* b) {
  if (!a || !b || a->type() != b->type() || a->numel() != b->numel()) return false;
  for (int64_t i = 0; i < a->numel(); ++i)
    if (a->valueAsDouble(i) != b->valueAsDouble(i)) return false;
  return true;
}

// Rule 2's condition: the Q undoes the DQ exactly.
bool samePair(const Graph& g, const Node& dq, const Node& q, const GraphIndex& index) {
  if (!isPerTensor(dq, index) || !isPerTensor(q, index)) return false;
  if (!constantsEqual(index.constant(dq.inputs[1]), index.constant(q.inputs[1]))) return false;
  const ZeroPoint qz = zeroPointOf(q, index, DataType::kUndefined);
  const ZeroPoint dz = zeroPointOf(dq, index, quantizedTypeOf(g, index, dq.inputs[0]));
  return dz.type != DataType::kUndefined && dz.type == qz.type && dz.value == qz.value;
}

const std::set<std::string>& commutingOps() {
  static const std::set<std::string> ops = {"MaxPool",   "Reshape", "Flatten",
                                            "Transpose", "Squeeze", "Unsqueeze"};
  return ops;
}

// Rule 1 at the DQ node `at`.
bool propagateDequantize(Graph& g, const GraphIndex& index, int at,
                         std::vector<PassApplication>* applied) {
  const Node& dq = g.nodes[at];
  if (!isDequantize(dq) || !isPerTensor(dq, index)) return false;
  const int reader = index.soleReader(dq.outputs[0]);
  if (reader < 0) return false;
  Node& op = g.nodes[reader];
  if (!isDefaultDomain(op) || !commutingOps().count(op.opType) || op.outputs.size() != 1 ||
      op.inputs.empty() || op.inputs[0] != dq.outputs[0])
    return false;
  // Float8 values only move: no kernel pools them.
  if (op.opType == "MaxPool" && readsFloat8(g, index, dq)) return false;
  // The layer now reads the integers and a DQ after it restores the float value.
  const std::string y = op.outputs[0];
  std::string yq = y + "_int8";
  while (index.producer(yq) >= 0 || !index.readers(yq).empty()) yq += "_";
  Node moved = dq;
  op.inputs[0] = dq.inputs[0];
  op.outputs[0] = yq;
  moved.inputs[0] = yq;
  moved.outputs[0] = y;
  applied->push_back({kFoldQdqName, {dq.displayName(), op.displayName()}, op.displayName()});
  g.nodes.insert(g.nodes.begin() + reader + 1, std::move(moved));
  g.nodes.erase(g.nodes.begin() + at);
  return true;
}

// Rule 4 at the Q node `at`.
bool propagateQuantizeBackward(Network& network, const GraphIndex& index, int at,
                               std::vector<PassApplication>* applied) {
  Graph& g = network.graph;
  const Node& q = g.nodes[at];
  if (!isQuantize(q) || !isPerTensor(q, index)) return false;
  const DataType type = zeroPointOf(q, index, DataType::kUndefined).type;
  if (type != DataType::kInt8 && type != DataType::kUInt8) return false;
  const int opIndex = index.producer(q.inputs[0]);
  if (opIndex < 0 || index.soleReader(q.inputs[0]) != at) return false;
  const Node& op = g.nodes[opIndex];
  if (!isDefaultDomain(op) || !commutingOps().count(op.opType) || op.outputs.size() != 1 ||
      op.inputs.empty() || op.inputs[0].empty())
    return false;
  const int layer = index.producer(op.inputs[0]);
  if (layer < 0 || index.soleReader(op.inputs[0]) != opIndex) return false;
  // Only onto a layer that folds (a float layer would gain nothing: the Q would read
  // the larger unpooled tensor).
  if (!quantizableLayerFolds(network, index, layer)) return false;
  // Q now reads the layer's output into a new int8 value that Op reads; Op writes
  // what the Q wrote. The Q stays where it is and Op moves to just after it: the
  // Q's scale and zero point may be written after Op (exporters put their Constant
  // nodes right before the Q), Op's other inputs (a Reshape's shape) are written
  // before Op, and only the Q read Op's output, so the order stays topological.
  const std::string v = op.inputs[0];
  std::string vq = v + "_q";
  while (index.producer(vq) >= 0 || !index.readers(vq).empty()) vq += "_";
  applied->push_back({kFoldQdqName, {q.displayName(), op.displayName()}, op.displayName()});
  Node moved = op;
  moved.inputs[0] = vq;
  moved.outputs[0] = q.outputs[0];
  Node& qNode = g.nodes[at];
  qNode.inputs[0] = v;
  qNode.outputs[0] = vq;
  g.nodes.insert(g.nodes.begin() + at + 1, std::move(moved));
  g.nodes.erase(g.nodes.begin() + opIndex);  // Op comes before the Q: at + 1 is past it
  return true;
}

// Rule 2 at the Q node `at`.
bool erasePair(Graph& g, const GraphIndex& index, int at, std::vector<PassApplication>* applied) {
  const Node& q = g.nodes[at];
  if (!isQuantize(q)) return false;
  const int dqIndex = dequantizeProducing(g, index, q.inputs[0]);
  if (dqIndex < 0 || !samePair(g, g.nodes[dqIndex], q, index)) return false;
  const std::vector<int>& readers = index.readers(q.outputs[0]);
  if (readers.empty() || std::count(readers.begin(), readers.end(), -1) > 0) return false;
  const std::string from = q.outputs[0], to = g.nodes[dqIndex].inputs[0];
  for (int r : readers)
    for (std::string& in : g.nodes[r].inputs)
      if (in == from) in = to;
  applied->push_back({kFoldQdqName, {g.nodes[dqIndex].displayName(), q.displayName()}, ""});
  return true;
}

// Float layers a DQ feeds that did not fold: why each stays float.
void noteFallbacks(Graph& g, const GraphIndex& index, const std::map<int, std::string>& reasons) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& node = g.nodes[i];
    if (isQuantize(node) || isDequantize(node) || isQuantizedLayer(node) || isFp8Layer(node))
      continue;
    std::string why;
    if (auto it = reasons.find(static_cast<int>(i)); it != reasons.end()) why = it->second;
    bool readsDequantized = false, readsFp8 = false;
    for (const std::string& in : node.inputs) {
      const int dq = in.empty() ? -1 : dequantizeProducing(g, index, in);
      readsDequantized = readsDequantized || dq >= 0;
      readsFp8 = readsFp8 || (dq >= 0 && readsFloat8(g, index, g.nodes[dq]));
    }
    if (!readsDequantized) continue;
    if (why.empty())
      why = std::string(readsFp8 ? "no FP8 implementation for " : "no INT8 implementation for ") +
            node.opType + "; it runs in float on its DequantizeLinear inputs";
    node.attributes[readsFp8 ? kFp8FallbackAttribute : kInt8FallbackAttribute] =
        stringAttribute(why);
  }
}

// The float weights and biases a fold replaced: nothing reads them any more, and a
// plan should not carry them.
void dropUnreadInitializers(Graph& g, const GraphIndex& index) {
  std::set<std::string> keep;
  for (const ValueInfo& v : g.inputs) keep.insert(v.name);
  for (auto it = g.initializers.begin(); it != g.initializers.end();) {
    if (!keep.count(it->first) && index.readers(it->first).empty())
      it = g.initializers.erase(it);
    else
      ++it;
  }
}

class FoldQdq final : public Pass {
 public:
  PassInfo info() const override {
    return {kFoldQdqName,
            "Q/DQ pairs fold into INT8 layers: DQ commutes forward (Q backward, onto a "
            "foldable layer) through MaxPool and reshapes, Q(DQ(q)) = q, DQ -> Conv/MatMul/Gemm "
            "[-> Q] -> QuantizedConv/MatMul "
            "(float8e4m3fn: DQ -> MatMul/Gemm [-> Q] -> Fp8MatMul)",
            0};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const size_t before = applied->size();
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size();) {  // rule 4 first: before rule 3 folds layers
      if (propagateQuantizeBackward(network, *index, static_cast<int>(at), applied)) {
        index = std::make_unique<GraphIndex>(g);
        at = 0;
        continue;
      }
      ++at;
    }
    for (size_t at = 0; at < g.nodes.size();) {
      const int i = static_cast<int>(at);
      std::string unused;
      if (propagateDequantize(g, *index, i, applied) || erasePair(g, *index, i, applied) ||
          foldQuantizableLayer(network, *index, i, applied, &unused)) {
        index = std::make_unique<GraphIndex>(g);  // indices moved
        at = 0;
        continue;
      }
      ++at;
    }
    // Nothing folds any more: what each remaining layer with a DQ input says about why.
    std::map<int, std::string> reasons;
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      std::string whyNot;
      if (!foldQuantizableLayer(network, *index, static_cast<int>(at), applied, &whyNot) &&
          !whyNot.empty())
        reasons[static_cast<int>(at)] = whyNot;
    }
    if (applied->size() > before) {
      network.opsets[kKilnDomain] = 1;
      dropUnreadInitializers(g, *index);
    }
    noteFallbacks(g, *index, reasons);
    return Status::ok();
  }
};

}  // namespace

bool isQuantize(const Node& node) {
  return isQdqNode(node, "QuantizeLinear");
}
bool isDequantize(const Node& node) {
  return isQdqNode(node, "DequantizeLinear");
}

bool isPerTensor(const Node& qdq, const GraphIndex& index) {
  const Tensor* scale = index.constant(qdq.inputs[1]);
  if (!scale || scale->type() != DataType::kFloat32 || scale->numel() != 1) return false;
  if (!qdq.hasInput(2)) return true;
  const Tensor* zp = index.constant(qdq.inputs[2]);
  return zp && zp->numel() == 1;
}

float perTensorScale(const Node& qdq, const GraphIndex& index) {
  return index.constant(qdq.inputs[1])->data<float>()[0];
}

ZeroPoint zeroPointOf(const Node& qdq, const GraphIndex& index, DataType inputType) {
  if (qdq.hasInput(2)) {
    const Tensor* zp = index.constant(qdq.inputs[2]);
    if (!zp || zp->numel() < 1) return {};
    return {zp->valueAsInt64(0), zp->type()};
  }
  if (qdq.hasAttr("output_dtype")) {
    return {0, static_cast<DataType>(qdq.attrInt("output_dtype", 2))};
  }
  return {0, isQuantize(qdq) ? DataType::kUInt8 : inputType};
}

DataType quantizedTypeOf(const Graph& graph, const GraphIndex& index, const std::string& value) {
  if (const Tensor* c = index.constant(value)) return c->type();
  const int p = index.producer(value);
  if (p < 0) return DataType::kUndefined;
  const Node& node = graph.nodes[p];
  if (isQuantize(node)) return zeroPointOf(node, index, DataType::kUndefined).type;
  if (isFp8Layer(node)) return node.hasInput(kFp8YScale) ? DataType::kFp8E4M3 : DataType::kFloat32;
  if (isQuantizedLayer(node)) {
    if (!node.hasInput(kQuantYScale)) return DataType::kFloat32;
    if (!node.hasInput(kQuantYZeroPoint)) return DataType::kInt8;
    const Tensor* zp = index.constant(node.inputs[kQuantYZeroPoint]);
    return zp ? zp->type() : DataType::kUndefined;
  }
  if (isDefaultDomain(node) && commutingOps().count(node.opType) && !node.inputs.empty())
    return quantizedTypeOf(graph, index, node.inputs[0]);
  return DataType::kUndefined;
}

int dequantizeProducing(const Graph& graph, const GraphIndex& index, const std::string& value) {
  const int p = index.producer(value);
  return p >= 0 && isDequantize(graph.nodes[p]) ? p : -1;
}

std::string addInitializer(Graph& graph, const std::string& base, Tensor value) {
  std::string name = base;
  for (int i = 1; graph.initializers.count(name) || graph.findValueInfo(name); ++i)
    name = base + "_" + std::to_string(i);
  graph.initializers[name] = std::move(value);
  return name;
}

std::unique_ptr<Pass> makeFoldQdq() {
  return std::make_unique<FoldQdq>();
}

}  // namespace kiln::passes
