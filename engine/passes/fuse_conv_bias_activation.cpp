// fuse_conv_bias_activation: a convolution and the pointwise tail that follows it as
// one ai.kiln FusedConv, whose epilogue runs on the convolution's output while it is
// still in registers (cuDNN's fused graph) or in one pass over it (Kiln's epilogue):
//   act(Add(Add(Conv(X, W, B0), b), Z)) = FusedConv(X, W, B0 + b, Z; act)
//   y[n, m, ...] = act(sum over c, k of W[m, c, k] * X[n, c, ...] + B0[m] + b[m] + Z[n, m, ...])
// with every part but the Conv optional (at least one present), in that order:
//   b: Add of a constant [M, 1, ...] or [1, M, 1, ...] (per output channel m; the rank
//      of the output or one less): folded into the Conv's bias B0 (a new initializer;
//      both float32 when B0 exists too),
//   Z: Add of a value with exactly the output's (inferred) shape: the residual,
//   act: Relu, LeakyRelu, Clip (constant bounds), Sigmoid, Tanh, HardSigmoid,
//        HardSwish, SiLU written as Mul(x, Sigmoid(x)), hard-swish written as
//        Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6) (Paddle's export), or GELU (the node, or
//        its erf chain: wav2vec2's and Whisper's 1-D feature convolutions); matched by
//        activation_tail.h, which fuse_matmul_bias_activation shares.
// Every intermediate value must have the next node as its only reader (SiLU's x its
// Sigmoid and Mul), so nothing outside the chain sees a value that stops existing.
// The fused node lists the ONNX nodes behind the Conv too (fold_batch_norm's).
#include <algorithm>

#include "passes/activation_tail.h"
#include "passes/fusion_passes.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fuse_conv_bias_activation";

struct Match {
  std::vector<int> nodes;  // conv, bias Add, residual Add (ascending)
  std::string bias;        // the fused bias input ("" for none)
  Tensor newBias;          // defined when the bias is a new initializer
  std::string residual, output;
  ActivationTail tail;  // activation "none" and no nodes when none follows
};

// The conv's output channels M and output rank, from W or the inferred output shape.
bool outputLayout(const Node& conv, const GraphIndex& index, const InferredShapes& shapes,
                  int64_t* m, size_t* rank) {
  if (const Tensor* w = index.constant(conv.inputs[1]); w && w->rank() >= 3) {
    *m = w->dim(0);
    *rank = static_cast<size_t>(w->rank());
    return true;
  }
  const SymbolicShape* s = shapeOf(shapes, conv.outputs[0]);
  if (!s || s->size() < 3 || !(*s)[1].isConst()) return false;
  *m = (*s)[1].constValue();
  *rank = s->size();
  return true;
}

// A constant holding one value per output channel, shaped to broadcast along axis 1.
bool isChannelBias(const Tensor* t, int64_t m, size_t rank) {
  if (!t || !isFloatingPoint(t->type()) || t->numel() != m) return false;
  const size_t r = static_cast<size_t>(t->rank());
  if (r != rank && r + 1 != rank) return false;
  const size_t channelAxis = r == rank ? 1 : 0;
  for (size_t d = 0; d < r; ++d)
    if (t->dim(static_cast<int>(d)) != (d == channelAxis ? m : 1)) return false;
  return true;
}

// The Conv's data type (W's when constant, else X's inferred one): the bias's type.
DataType convType(const Node& conv, const GraphIndex& index, const InferredShapes& shapes) {
  if (const Tensor* w = index.constant(conv.inputs[1])) return w->type();
  auto it = shapes.find(conv.inputs[0]);
  return it == shapes.end() ? DataType::kUndefined : it->second.type;
}

// Takes Add(value, b) into m->bias (combined with the Conv's own bias).
bool takeBias(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
              const Node& conv, int add, const std::string& value, Match* m) {
  const std::string* other = otherInput(g.nodes[add], value);
  int64_t channels = 0;
  size_t rank = 0;
  if (!other || *other == value || !outputLayout(conv, index, shapes, &channels, &rank))
    return false;
  const Tensor* b = index.constant(*other);
  if (!isChannelBias(b, channels, rank) || b->type() != convType(conv, index, shapes)) return false;
  const bool ownBias = conv.hasInput(2);
  if (!ownBias) {
    m->newBias = b->clone().reshaped({channels});
  } else {
    const Tensor* b0 = index.constant(conv.inputs[2]);
    if (!b0 || b0->type() != DataType::kFloat32 || b->type() != DataType::kFloat32 ||
        b0->numel() != channels)
      return false;
    m->newBias = Tensor(DataType::kFloat32, {channels});
    for (int64_t i = 0; i < channels; ++i)
      m->newBias.data<float>()[i] = b0->data<float>()[i] + b->data<float>()[i];
  }
  m->nodes.push_back(add);
  m->output = g.nodes[add].outputs[0];
  return true;
}

// Takes Add(value, Z) with Z of the output's shape into m->residual.
bool takeResidual(const Graph& g, const InferredShapes& shapes, int add, const std::string& value,
                  Match* m) {
  const std::string* z = otherInput(g.nodes[add], value);
  if (!z || *z == value) return false;
  const SymbolicShape* y = shapeOf(shapes, value);
  const SymbolicShape* zs = shapeOf(shapes, *z);
  if (!y || !zs || *y != *zs) return false;
  m->residual = *z;
  m->nodes.push_back(add);
  m->output = g.nodes[add].outputs[0];
  return true;
}

bool matchAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at,
             Match* m) {
  const Node& conv = g.nodes[at];
  if (conv.opType != "Conv" || !(conv.domain.empty() || conv.domain == "ai.onnx") ||
      conv.inputs.size() < 2 || conv.inputs.size() > 3 || conv.inputs[0].empty() ||
      conv.inputs[1].empty() || conv.outputs.size() != 1 || conv.outputs[0].empty())
    return false;
  m->nodes = {at};
  m->output = conv.outputs[0];
  m->bias = conv.hasInput(2) ? conv.inputs[2] : "";
  int next = index.soleReader(m->output);
  if (next >= 0 && isOnnxOp(g.nodes[next], "Add", 2) &&
      takeBias(g, index, shapes, conv, next, m->output, m))
    next = index.soleReader(m->output);
  if (next >= 0 && isOnnxOp(g.nodes[next], "Add", 2)) takeResidual(g, shapes, next, m->output, m);
  if (matchActivationTail(g, index, m->output, &m->tail)) m->output = m->tail.output;
  std::sort(m->nodes.begin(), m->nodes.end());
  return m->nodes.size() + m->tail.nodes.size() > 1;
}

// TensorRT-style: "Conv_0 + BatchNormalization_1 + Add_5 + Relu_6"; a decomposed
// activation as "PWN(Sigmoid_3, Mul_4)".
std::string fusedName(const Graph& g, const Match& m) {
  std::string name;
  for (int i : m.nodes) name += (name.empty() ? "" : " + ") + g.nodes[i].displayName();
  if (!m.tail.decomposed) {
    for (int i : m.tail.nodes) name += " + " + g.nodes[i].displayName();
    return name;
  }
  name += " + PWN(";
  for (size_t i = 0; i < m.tail.nodes.size(); ++i)
    name += (i ? ", " : "") + g.nodes[m.tail.nodes[i]].displayName();
  return name + ")";
}

std::string freshName(const Graph& g, const std::string& base) {
  std::string name = base + "_fused_bias";
  for (int i = 1; g.initializers.count(name); ++i) name = base + "_fused_bias" + std::to_string(i);
  return name;
}

Node fusedNode(Graph& g, const Match& m) {
  const Node& conv = g.nodes[m.nodes[0]];
  Node fused;
  fused.name = fusedName(g, m);
  fused.opType = "FusedConv";
  fused.domain = kKilnDomain;
  fused.opset = 1;
  fused.attributes = conv.attributes;
  fused.attributes.erase(kSourceNodesAttribute);
  fused.attributes.erase(kFusionPassAttribute);
  std::string bias = m.bias;
  if (m.newBias.defined()) {
    bias = freshName(g, conv.inputs[1]);
    g.initializers[bias] = m.newBias;
  }
  fused.inputs = {conv.inputs[0], conv.inputs[1]};
  if (!bias.empty() || !m.residual.empty()) fused.inputs.push_back(bias);
  if (!m.residual.empty()) fused.inputs.push_back(m.residual);
  fused.outputs = {m.output};
  setActivationAttributes(m.tail, &fused);
  return fused;
}

// Without shapes no residual qualifies (bias and activation need no shapes).
std::optional<Fusion> fuseAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  Match m;
  if (!matchAt(g, index, shapes, at, &m)) return std::nullopt;
  Node fused = fusedNode(g, m);
  std::vector<int> nodes = m.nodes;
  nodes.insert(nodes.end(), m.tail.nodes.begin(), m.tail.nodes.end());
  std::sort(nodes.begin(), nodes.end());
  return Fusion{nodes, std::move(fused)};
}

}  // namespace

std::unique_ptr<Pass> makeFuseConvBiasActivation() {
  return makeFusionPass(
      {kName,
       "act(Conv(X, W, B) + b + Z) -> one FusedConv (cuDNN fused graph or conv + one "
       "epilogue pass)",
       1},
      fuseAt);
}

}  // namespace kiln::passes
