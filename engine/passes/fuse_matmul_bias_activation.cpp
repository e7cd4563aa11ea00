// fuse_matmul_bias_activation: a GEMM with constant weights, its bias and the
// activation after it as one ai.kiln FusedMatMul (the bias, and ReLU, in cuBLASLt's
// epilogue; every other activation in one Kiln pass over the output):
//   act(Add(MatMul(X, W), b))         = FusedMatMul(X, W, b; act)
//   act(Gemm(X, W, c))                = FusedMatMul(X, W, c; act)
//   act(Gemm(X, Wt, c; transB = 1))   = FusedMatMul(X, Wt^T, c; act)
//   act(Add(Gemm(X, W), b))           = FusedMatMul(X, W, b; act)   (transB either way)
//   act(MatMul(X, W))                 = FusedMatMul(X, W, 0; act)   (a zero bias [N])
//   act(Gemm(X, W))                   = FusedMatMul(X, W, 0; act)   (transB either way)
//   y[..., n] = act(sum over k of X[..., k] * W[k, n] + b[n])
// W a constant [K, N]; Wt a constant [N, K], transposed into a new initializer, which
// needs the Gemm to be its only reader (a weight read elsewhere would be stored twice);
// b a constant [N] and c a constant [N] or [1, N] (reshaped), of W's type. The Gemm
// has alpha = 1 and transA = 0 (opset 7 on: C broadcasts), and beta = 1 when it has
// C. act is optional ("none") after MatMul + bias and after Gemm + Add; a Gemm that
// adds its own C fuses only with an activation (alone it already is one GEMM with
// the bias in its epilogue). act: FusedMatMul's set in activation_tail.h, which is
// FusedConv's (Relu, LeakyRelu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, SiLU,
// decomposed hard-swish) plus Gelu in either approximate mode (fuse_gelu runs first
// and turns the exporters' GELU chains into Gelu nodes) and the raw erf GELU chain.
// Every intermediate value must have the next node as its only reader, so nothing
// outside the chain sees a value that stops existing.
// Row views around it (since 2026-12-03): X = Reshape(X0) flattening X0 [d..., K] to rows
// [M, K] and the result read only by a Reshape back to [d..., N] (transformers' Conv1D in
// GPT-2: x.view(-1, K) @ W + b, then .view(d..., N); not torchvision's attention out_proj,
// whose X0 is the heads' output [S, B * H, D] with D != K) -> the
// FusedMatMul reads X0 and writes the Reshape's output (FusedMatMul takes any leading dims),
// so a residual Add after it sees the GEMM (fuse_prenorm_residual, fuse_matmul_residual); a
// lone Gemm then fuses too. The first Reshape stays for its other readers, if any.
#include <algorithm>

#include "passes/activation_tail.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fuse_matmul_bias_activation";

struct Match {
  std::vector<int> head;  // the MatMul or Gemm, then its bias Add when it has one
  std::string x, w, bias, output;
  bool transposeW = false;  // Gemm transB: W becomes a transposed initializer
  Tensor newBias;           // defined: Gemm's C [1, N] reshaped to [N], or zeros [N]
  ActivationTail tail;
  int rowView = -1;  // the Reshape back to [d..., N] the fused node replaces too
};

// A constant of `n` elements of `type` shaped [n], or also [1, n] when `row`.
const Tensor* biasConstant(const GraphIndex& index, const std::string& name, int64_t n,
                           DataType type, bool row) {
  const Tensor* b = index.constant(name);
  if (!b || b->type() != type || b->numel() != n) return nullptr;
  return b->rank() == 1 || (row && b->rank() == 2 && b->dim(0) == 1) ? b : nullptr;
}

// A constant 2-D floating-point weight.
const Tensor* weightConstant(const GraphIndex& index, const std::string& name) {
  const Tensor* w = index.constant(name);
  return w && w->rank() == 2 && isFloatingPoint(w->type()) ? w : nullptr;
}

// Add(output, b) of a constant b [n]: the bias.
bool takeBiasAdd(const Graph& g, const GraphIndex& index, int64_t n, DataType type, Match* m) {
  const int add = index.soleReader(m->output);
  if (add < 0 || !isOnnxOp(g.nodes[add], "Add", 2)) return false;
  const std::string* b = otherInput(g.nodes[add], m->output);
  if (!b || !biasConstant(index, *b, n, type, false)) return false;
  m->head.push_back(add);
  m->bias = *b;
  m->output = g.nodes[add].outputs[0];
  return true;
}

// The bias Add after the GEMM, else a zero bias [n] (a Linear with bias=False, a zero bias
// remove_no_op_nodes dropped, or the dynamo exporter's Gemm for GPT-2's Conv1D, whose zero
// bias its optimizer drops): such a layer fuses only with an activation (matchAt).
void takeBiasAddOrZero(const Graph& g, const GraphIndex& index, int64_t n, DataType type,
                       Match* m) {
  if (takeBiasAdd(g, index, n, type, m)) return;
  m->newBias = Tensor(type, {n});  // zero-filled
  m->bias = m->w + "_zero_bias";
}

bool matchMatMul(const Graph& g, const GraphIndex& index, int at, Match* m) {
  const Node& mm = g.nodes[at];
  const Tensor* w = isOnnxOp(mm, "MatMul", 2) ? weightConstant(index, mm.inputs[1]) : nullptr;
  if (!w) return false;
  m->head = {at};
  m->x = mm.inputs[0];
  m->w = mm.inputs[1];
  m->output = mm.outputs[0];
  takeBiasAddOrZero(g, index, w->dim(1), w->type(), m);
  return true;
}

bool isGraphInput(const Graph& g, const std::string& value) {
  return std::any_of(g.inputs.begin(), g.inputs.end(),
                     [&](const ValueInfo& v) { return v.name == value; });
}

// The Gemm forms a FusedMatMul expresses: alpha 1, no transA, beta 1 with C.
bool isPlainGemm(const Node& gemm) {
  return gemm.opType == "Gemm" && isDefaultDomain(gemm) && gemm.opset >= 7 &&
         gemm.inputs.size() >= 2 && gemm.inputs.size() <= 3 && !gemm.inputs[0].empty() &&
         gemm.outputs.size() == 1 && !gemm.outputs[0].empty() &&
         gemm.attrFloat("alpha", 1.f) == 1.f && gemm.attrInt("transA", 0) == 0 &&
         (!gemm.hasInput(2) || gemm.attrFloat("beta", 1.f) == 1.f);
}

bool matchGemm(const Graph& g, const GraphIndex& index, int at, Match* m) {
  const Node& gemm = g.nodes[at];
  const Tensor* w = isPlainGemm(gemm) ? weightConstant(index, gemm.inputs[1]) : nullptr;
  if (!w) return false;
  m->transposeW = gemm.attrInt("transB", 0) != 0;
  if (m->transposeW && (index.soleReader(gemm.inputs[1]) != at || isGraphInput(g, gemm.inputs[1])))
    return false;
  const int64_t n = w->dim(m->transposeW ? 0 : 1);
  m->head = {at};
  m->x = gemm.inputs[0];
  m->w = gemm.inputs[1];
  m->output = gemm.outputs[0];
  if (!gemm.hasInput(2)) {
    takeBiasAddOrZero(g, index, n, w->type(), m);
    return true;
  }
  const Tensor* c = biasConstant(index, gemm.inputs[2], n, w->type(), true);
  if (!c) return false;
  m->bias = gemm.inputs[2];
  if (c->rank() == 2) m->newBias = c->reshaped({n});
  return true;
}

// A Reshape of a named input (rewrite::isOnnxOpType: default domain, a named output).
bool isReshape(const Node& node) {
  return rewrite::isOnnxOpType(node, "Reshape") && node.hasInput(0);
}

// X the rows of X0 [d..., K] and the output read only by a Reshape to [d..., N] (inferred
// shapes, same types): m reads X0 and writes that Reshape's output.
void takeRowViews(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, Match* m) {
  const int flatten = index.producer(m->x);
  const int unflatten = index.soleReader(m->output);
  if (flatten < 0 || unflatten < 0 || !isReshape(g.nodes[flatten]) ||
      !isReshape(g.nodes[unflatten]) || g.nodes[unflatten].inputs[0] != m->output)
    return;
  const std::string& x0 = g.nodes[flatten].inputs[0];
  const std::string& y0 = g.nodes[unflatten].outputs[0];
  const SymbolicShape* rows = shapeOf(shapes, m->x);
  const SymbolicShape* x = shapeOf(shapes, x0);
  const SymbolicShape* product = shapeOf(shapes, m->output);
  const SymbolicShape* y = shapeOf(shapes, y0);
  if (!rows || !x || !product || !y || rows->size() != 2 || x->size() < 2 ||
      y->size() != x->size() || product->empty() || x->back() != rows->back() ||
      y->back() != product->back() || typeOf(shapes, x0) != typeOf(shapes, m->x) ||
      typeOf(shapes, y0) != typeOf(shapes, m->output) || typeOf(shapes, x0) == DataType::kUndefined)
    return;
  for (size_t i = 0; i + 1 < x->size(); ++i)
    if ((*x)[i] != (*y)[i]) return;
  m->x = x0;
  m->output = y0;
  m->rowView = unflatten;
}

bool matchAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at,
             Match* m) {
  const bool gemm = g.nodes[at].opType == "Gemm";
  if (!(gemm ? matchGemm(g, index, at, m) : matchMatMul(g, index, at, m))) return false;
  const bool activation = matchActivationTail(g, index, m->output, &m->tail);
  if (activation) m->output = m->tail.output;
  takeRowViews(g, index, shapes, m);
  return activation || m->head.size() > 1 || m->rowView >= 0;
}

// TensorRT-style: "MatMul_1 + Add_2 + PWN(Div_3, Erf_4, ...)", the activation's ONNX
// nodes inside PWN (those behind a Gelu node fuse_gelu made, too).
std::string fusedName(const Graph& g, const Match& m) {
  std::string name;
  for (int i : m.head) name += (name.empty() ? "" : " + ") + g.nodes[i].displayName();
  if (m.tail.nodes.empty()) return name;
  const std::vector<std::string> sources = sourceNodesOf(g, m.tail.nodes);
  name += " + PWN(";
  for (size_t i = 0; i < sources.size(); ++i) name += (i ? ", " : "") + sources[i];
  return name + ")";
}

// The rewrite's new initializers: W^T (replacing W, which only the Gemm read) and
// the reshaped C. Returns the weight and bias inputs.
std::pair<std::string, std::string> commitConstants(Graph& g, const GraphIndex& index,
                                                    const Match& m) {
  std::string w = m.w, bias = m.bias;
  if (m.transposeW) {
    w = rewrite::freshName(g, m.w + "_kn");
    g.initializers[w] = rewrite::transposedMatrix(*index.constant(m.w));
    g.initializers.erase(m.w);  // a Constant node instead stays for remove_dead_nodes
  }
  if (m.newBias.defined()) {
    bias = rewrite::freshName(g, m.bias + "_n");
    g.initializers[bias] = m.newBias;
  }
  return {w, bias};
}

std::optional<Fusion> fuseAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  Match m;
  if (!matchAt(g, index, shapes, at, &m)) return std::nullopt;
  Node fused;
  fused.name = fusedName(g, m);
  fused.opType = "FusedMatMul";
  fused.domain = kKilnDomain;
  fused.opset = 1;
  const auto [w, bias] = commitConstants(g, index, m);
  fused.inputs = {m.x, w, bias};
  fused.outputs = {m.output};
  setActivationAttributes(m.tail, &fused);
  std::vector<int> nodes = m.head;
  nodes.insert(nodes.end(), m.tail.nodes.begin(), m.tail.nodes.end());
  if (m.rowView >= 0) {
    nodes.push_back(m.rowView);
    fused.name += " + " + g.nodes[m.rowView].displayName();
  }
  std::sort(nodes.begin(), nodes.end());
  return Fusion{nodes, std::move(fused)};
}

}  // namespace

std::unique_ptr<Pass> makeFuseMatMulBiasActivation() {
  return makeFusionPass({kName,
                         "act(MatMul(X, W) + b), act(Gemm(X, W, c)) -> one FusedMatMul "
                         "(cuBLASLt bias/ReLU epilogue, other activations in one pass)",
                         1},
                        fuseAt);
}

}  // namespace kiln::passes
