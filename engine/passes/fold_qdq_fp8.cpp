// fold_qdq rule 3 for float8 (the algebra is in fold_qdq.cpp): a GEMM whose activation
// and weights are DequantizeLinear of float8e4m3fn values becomes one ai.kiln
// Fp8MatMul (ir/fp8_layers.h). FP8 has no zero point, so with per-tensor scales
//   sum_k (xq[k] sx) (wq[k, n] sw) + b[n] = sx sw * sum_k xq[k] wq[k, n] + b[n]
// where every product xq * wq of two E4M3 values is exact in float. Around the GEMM
// the fold also takes, each when the value before it has that node as its only
// reader:
//   - the QuantizeLinear feeding the activation's DQ with the same scale (the layer
//     then quantizes its float input itself: E4M3(x / sx), saturating, as Q does);
//   - a bias Add of a float constant [N] after a MatMul, then a Relu;
//   - a float8 QuantizeLinear reading the result (FP8 output: E4M3(y / sy)).
// Not folded, with the reason: convolutions, per-channel or blocked scales, a
// non-zero float8 zero point, weights that are not float8 constants, Gemm with
// alpha/beta other than 1 or transA, FusedMatMul activations other than none/relu.
#include <algorithm>
#include <cmath>

#include "ir/fp8_layers.h"
#include "ir/quantized_layers.h"
#include "passes/qdq_rules.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

bool isOnnx(const Node& node) {
  return node.domain.empty() || node.domain == "ai.onnx";
}

// Zero point absent, or a constant whose every value is 0 (the float code +-0).
bool zeroPointIsZero(const Node& qdq, const GraphIndex& index) {
  if (!qdq.hasInput(2)) return true;
  const Tensor* zp = index.constant(qdq.inputs[2]);
  if (!zp) return false;
  for (int64_t i = 0; i < zp->numel(); ++i)
    if (zp->valueAsDouble(i) != 0) return false;
  return true;
}

// One positive finite float32 scale, and a zero point of 0.
bool perTensorFp8(const Node& qdq, const GraphIndex& index, const char* what, std::string* whyNot) {
  if (!isPerTensor(qdq, index)) {
    *whyNot = std::string("its float8 ") + what +
              " has per-axis or blocked scales; FP8 layers take one per-tensor scale";
    return false;
  }
  const float scale = perTensorScale(qdq, index);
  if (!(scale > 0) || !std::isfinite(scale)) {
    *whyNot = std::string("its float8 ") + what + " scale is not a positive finite number";
    return false;
  }
  if (!zeroPointIsZero(qdq, index)) {
    *whyNot = std::string("the zero point of its float8 ") + what +
              " DequantizeLinear is not 0 (FP8 layers have no zero point)";
    return false;
  }
  return true;
}

// What the fold replaces and what the new layer reads and writes.
struct Fp8Fold {
  std::vector<int> replaced;
  std::string x, xScale, weights, wScale, bias, yScale, output;
  Tensor newWeights, newBias;  // defined: added as initializers on success
  std::string activation = "none";
  int64_t n = 0;  // output columns
};

// The activation: DQ(xq) per tensor, and the Q before it when only that DQ reads it.
bool matchInput(const Graph& g, const GraphIndex& index, int at, int xdq, Fp8Fold* f,
                std::string* whyNot) {
  const Node& dq = g.nodes[xdq];
  if (!perTensorFp8(dq, index, "input", whyNot)) return false;
  f->x = dq.inputs[0];
  f->xScale = dq.inputs[1];
  if (index.soleReader(dq.outputs[0]) != at) return true;
  f->replaced.push_back(xdq);
  const int q = index.producer(dq.inputs[0]);
  if (q < 0 || !isQuantize(g.nodes[q]) || index.soleReader(dq.inputs[0]) != xdq) return true;
  const Node& qn = g.nodes[q];
  std::string unused;
  if (!perTensorFp8(qn, index, "input", &unused) || qn.attrInt("saturate", 1) == 0 ||
      perTensorScale(qn, index) != perTensorScale(dq, index))
    return true;
  f->x = qn.inputs[0];  // float: the layer quantizes it as the Q did
  f->replaced.push_back(q);
  return true;
}

// W = DQ(wq, sw) of a float8 constant [K, N] (Gemm transB: [N, K], transposed here).
bool matchWeights(const Graph& g, const GraphIndex& index, int at, bool transB, Fp8Fold* f,
                  std::string* whyNot) {
  const std::string& w = g.nodes[at].inputs[1];
  const int dq = dequantizeProducing(g, index, w);
  const Tensor* wq = dq >= 0 ? index.constant(g.nodes[dq].inputs[0]) : nullptr;
  if (!wq || !isFp8Type(wq->type())) {
    *whyNot = "its weights are not a DequantizeLinear of float8e4m3fn constants";
    return false;
  }
  if (wq->rank() != 2) {
    *whyNot = "its float8 weights are not a 2-D matrix";
    return false;
  }
  if (!perTensorFp8(g.nodes[dq], index, "weight", whyNot)) return false;
  f->weights = g.nodes[dq].inputs[0];
  f->n = wq->dim(transB ? 0 : 1);
  if (transB) {
    f->weights += "_kn";
    f->newWeights = rewrite::transposedMatrix(*wq);
  }
  f->wScale = g.nodes[dq].inputs[1];
  if (index.soleReader(w) == at) f->replaced.push_back(dq);
  return true;
}

// A float32 constant of N values, [N] or [1, N], as an [N] bias; false otherwise.
bool constantBias(const GraphIndex& index, const std::string& name, int64_t n, Fp8Fold* f) {
  const Tensor* b = index.constant(name);
  if (!b || b->type() != DataType::kFloat32 || b->numel() != n) return false;
  if (b->rank() == 1) {
    f->bias = name;
  } else {
    f->bias = name + "_1d";
    f->newBias = b->clone().reshaped({n});
  }
  return true;
}

// Gemm (alpha = beta = 1, no transA) and FusedMatMul (none/relu) forms, with the bias
// they carry.
bool matchLayerForm(const Node& layer, const GraphIndex& index, Fp8Fold* f, std::string* whyNot) {
  if (layer.opType == "Gemm") {
    if (layer.attrFloat("alpha", 1.f) != 1.f || layer.attrInt("transA", 0) != 0 ||
        (layer.hasInput(2) && layer.attrFloat("beta", 1.f) != 1.f)) {
      *whyNot = "Gemm with alpha or beta other than 1 or transA has no FP8 form";
      return false;
    }
  }
  if (layer.opType == "FusedMatMul") {
    f->activation = layer.attrString("activation", "none");
    if (f->activation != "none" && f->activation != "relu") {
      *whyNot = "activation '" + f->activation + "' has no FP8 epilogue";
      return false;
    }
  }
  if (layer.opType != "MatMul" && layer.hasInput(2) &&
      !constantBias(index, layer.inputs[2], f->n, f)) {
    *whyNot = "its bias is not a float32 constant of one value per output column";
    return false;
  }
  return true;
}

// The nodes after the GEMM that fold in: [Add(bias)] [Relu] [Q float8]; sets the
// value the layer writes.
void matchTail(const Graph& g, const GraphIndex& index, int at, Fp8Fold* f) {
  std::string y = g.nodes[at].outputs[0];
  int reader = index.soleReader(y);
  if (g.nodes[at].opType == "MatMul" && reader >= 0 && isOnnxOp(g.nodes[reader], "Add", 2)) {
    const std::string* other = otherInput(g.nodes[reader], y);
    if (other && constantBias(index, *other, f->n, f)) {
      f->replaced.push_back(reader);
      y = g.nodes[reader].outputs[0];
      reader = index.soleReader(y);
    }
  }
  if (f->activation == "none" && reader >= 0 && isOnnxOp(g.nodes[reader], "Relu", 1)) {
    f->activation = "relu";
    f->replaced.push_back(reader);
    y = g.nodes[reader].outputs[0];
    reader = index.soleReader(y);
  }
  f->output = y;
  if (reader < 0 || !isQuantize(g.nodes[reader]) || g.nodes[reader].attrInt("saturate", 1) == 0)
    return;
  const Node& q = g.nodes[reader];
  std::string unused;
  if (!isFp8Type(zeroPointOf(q, index, DataType::kUndefined).type) ||
      !perTensorFp8(q, index, "output", &unused))
    return;
  f->yScale = q.inputs[1];
  f->output = q.outputs[0];
  f->replaced.push_back(reader);
}

Node fp8Node(const Node& layer, const Fp8Fold& f) {
  Node node;
  node.name = layer.displayName();
  node.domain = kKilnDomain;
  node.opType = kFp8MatMulOp;
  node.opset = 1;
  node.attributes["activation"] = stringAttribute(f.activation);
  node.inputs.assign(kFp8Slots, "");
  node.inputs[kFp8X] = f.x;
  node.inputs[kFp8W] = f.weights;
  node.inputs[kFp8Bias] = f.bias;
  node.inputs[kFp8XScale] = f.xScale;
  node.inputs[kFp8WScale] = f.wScale;
  node.inputs[kFp8YScale] = f.yScale;
  while (node.inputs.back().empty()) node.inputs.pop_back();
  node.outputs = {f.output};
  return node;
}

}  // namespace

bool readsFloat8(const Graph& graph, const GraphIndex& index, const Node& dq) {
  DataType type = quantizedTypeOf(graph, index, dq.inputs[0]);
  if (type == DataType::kUndefined && index.producer(dq.inputs[0]) < 0)
    if (const ValueInfo* v = graph.findValueInfo(dq.inputs[0])) type = v->type;
  if (type == DataType::kUndefined && dq.hasInput(2))
    if (const Tensor* zp = index.constant(dq.inputs[2])) type = zp->type();
  return isFp8Type(type);
}

bool foldFp8Layer(Network& network, const GraphIndex& index, int at,
                  std::vector<PassApplication>* applied, std::string* whyNot) {
  Graph& g = network.graph;
  const Node& layer = g.nodes[at];
  const bool gemm = isOnnx(layer) && (layer.opType == "MatMul" || layer.opType == "Gemm");
  if (!gemm && !(layer.domain == kKilnDomain && layer.opType == "FusedMatMul")) {
    *whyNot = "FP8 folds into GEMMs only (MatMul, Gemm, FusedMatMul): no FP8 " + layer.opType;
    return false;
  }
  const bool transB = layer.opType == "Gemm" && layer.attrInt("transB", 0) != 0;
  Fp8Fold f;
  if (!matchInput(g, index, at, dequantizeProducing(g, index, layer.inputs[0]), &f, whyNot) ||
      !matchWeights(g, index, at, transB, &f, whyNot))
    return false;
  if (!matchLayerForm(layer, index, &f, whyNot)) return false;
  f.replaced.push_back(at);
  matchTail(g, index, at, &f);
  // Commit: nothing above touched the graph.
  if (f.newWeights.defined()) f.weights = addInitializer(g, f.weights, f.newWeights);
  if (f.newBias.defined()) f.bias = addInitializer(g, f.bias, f.newBias);
  std::sort(f.replaced.begin(), f.replaced.end());
  Node folded = fp8Node(g.nodes[at], f);
  std::vector<std::string> names;
  for (int i : f.replaced) names.push_back(g.nodes[i].displayName());
  applied->push_back({kFoldQdqName, names, folded.name});
  replaceNodes(g, f.replaced, std::move(folded), kFoldQdqName);
  return true;
}

}  // namespace kiln::passes
