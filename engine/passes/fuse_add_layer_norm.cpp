// fuse_add_layer_norm: the residual add and the LayerNormalization or RMSNormalization
// after it as one row kernel that reads A and B once and never writes the sum unless it is
// needed.
//   LayerNormalization(S = Add(A, B), gamma, [beta]; axis = -1, epsilon) -> Y
//     = AddLayerNorm(A, B, gamma, [beta]; epsilon, axis = -1) -> Y [, S]
//   Y = (S - mean(S)) / sqrt(var(S) + epsilon) * gamma + beta over the last axis
//   RMSNormalization(S = Add(A, B), gamma; axis = -1, epsilon) -> Y (T5's and LLaMA's
//   pre-norm residual blocks; fuse_rms_norm writes it from the exporters' chains)
//     = AddLayerNorm(A, B, gamma; epsilon, axis = -1, rms = 1) -> Y [, S]
//   Y = S / sqrt(mean(S^2) + epsilon) * gamma
// A and B broadcast to S as Add broadcasts them (a residual of the same shape, or a
// bias along the last dim). gamma and beta must be 1-D with the normalized length
// (LayerNormalization also lets a [1] scale broadcast; that stays unfused). When S
// is read elsewhere (a residual stream, a graph output) the fused node also writes
// it as its second output. LayerNormalization's Mean and InvStdDev outputs must have
// no readers: the fused node does not compute them.
// The post-norm residual (SwinV2's x + norm(attn(x)), x + norm(mlp(x))) the same way:
//   Add(R, LayerNormalization(X, gamma, [beta])) -> AddLayerNorm(X, R, gamma, [beta];
//     residual_after = 1): Y = norm(X) + R in one pass (X and R read once, Y written once,
//     where the norm wrote its output and the Add read it back)
// when the Add alone reads the norm's output and X has the Add's output shape.
#include "passes/fusion_passes.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fuse_add_layer_norm";

struct Match {
  int add = -1, norm = -1;
  bool emitSum = false;     // S has readers besides the LayerNormalization
  bool placeAtAdd = false;  // one of them comes before the LayerNormalization
};

// gamma/beta [n]: one-dimensional, n known, and n the normalized length (or, when
// that length is unknown, n > 1, which a valid LayerNormalization makes equal to it).
bool isNormalizedVector(const InferredShapes& shapes, const std::string& value,
                        const SymbolicShape& s) {
  const SymbolicShape* p = shapeOf(shapes, value);
  if (!p || p->size() != 1 || !(*p)[0].isConst()) return false;
  const int64_t n = (*p)[0].constValue();
  if (s.back().isConst()) return n == s.back().constValue();
  return n > 1;
}

bool normalizesLastAxis(const Node& norm, const SymbolicShape& s) {
  const int64_t axis = norm.attrInt("axis", -1);
  return axis == -1 || axis == static_cast<int64_t>(s.size()) - 1;
}

// Mean and InvStdDev, when named, must have no reader.
bool statisticsUnread(const Node& norm, const GraphIndex& index) {
  for (size_t i = 1; i < norm.outputs.size(); ++i)
    if (!norm.outputs[i].empty() && !index.readers(norm.outputs[i]).empty()) return false;
  return true;
}

// A default-domain Add of two named inputs with one output.
bool isPlainAdd(const Node& add) {
  return add.opType == "Add" && isDefaultDomain(add) && add.inputs.size() == 2 &&
         !add.inputs[0].empty() && !add.inputs[1].empty() && add.outputs.size() == 1 &&
         !add.outputs[0].empty();
}

// A LayerNormalization or RMSNormalization AddLayerNorm can take: ai.kiln's forms too (written
// by fuse_layer_norm and fuse_rms_norm into models that import an older opset), X and gamma
// named, RMSNormalization without a bias input or statistics outputs, no statistics read.
bool isFusableNorm(const Node& norm, const GraphIndex& index) {
  const bool rms = norm.opType == "RMSNormalization";
  return (norm.opType == "LayerNormalization" || rms) &&
         (isDefaultDomain(norm) || norm.domain == kKilnDomain) && norm.inputs.size() >= 2 &&
         norm.inputs.size() <= (rms ? 2u : 3u) && !norm.outputs.empty() &&
         !norm.outputs[0].empty() && !(rms && norm.outputs.size() != 1) &&
         !norm.inputs[0].empty() && !norm.inputs[1].empty() && statisticsUnread(norm, index);
}

// The norm over the last axis of rows shaped `s` of `type`, gamma and beta [n]. RMSNormalization
// lets the scale have its own type (Y takes it); AddLayerNorm's gamma has the rows' type, as
// LayerNormalization's always does.
bool normFitsRows(const Node& norm, const InferredShapes& shapes, const SymbolicShape& s,
                  DataType type) {
  if (s.empty() || !normalizesLastAxis(norm, s)) return false;
  if (norm.opType == "RMSNormalization" && typeOf(shapes, norm.inputs[1]) != type) return false;
  for (size_t i = 1; i < norm.inputs.size(); ++i)
    if (!norm.inputs[i].empty() && !isNormalizedVector(shapes, norm.inputs[i], s)) return false;
  return true;
}

// AddLayerNorm(a, b, the norm's gamma [and beta]; its epsilon [, rms]) writing `outputs`.
Node addLayerNormNode(const Node& norm, std::string name, const std::string& a,
                      const std::string& b, std::vector<std::string> outputs) {
  Node fused;
  fused.name = std::move(name);
  fused.opType = "AddLayerNorm";
  fused.domain = kKilnDomain;
  fused.opset = 1;
  fused.inputs = {a, b, norm.inputs[1]};
  if (norm.inputs.size() > 2 && !norm.inputs[2].empty()) fused.inputs.push_back(norm.inputs[2]);
  fused.outputs = std::move(outputs);
  fused.attributes["epsilon"] = floatAttribute(norm.attrFloat("epsilon", 1e-5f));
  fused.attributes["axis"] = intAttribute(-1);
  if (norm.opType == "RMSNormalization") fused.attributes["rms"] = intAttribute(1);
  return fused;
}

bool matchAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at,
             Match* m) {
  const Node& norm = g.nodes[at];
  if (!isFusableNorm(norm, index)) return false;
  const int addAt = index.producer(norm.inputs[0]);
  if (addAt < 0 || !isPlainAdd(g.nodes[addAt])) return false;
  const Node& add = g.nodes[addAt];
  const SymbolicShape* s = shapeOf(shapes, add.outputs[0]);
  if (!s || !normFitsRows(norm, shapes, *s, typeOf(shapes, add.outputs[0]))) return false;
  m->add = addAt;
  m->norm = at;
  for (int reader : index.readers(add.outputs[0])) {
    if (reader == at) continue;
    m->emitSum = true;
    m->placeAtAdd = m->placeAtAdd || (reader >= 0 && reader < at);
  }
  if (!m->placeAtAdd) return true;
  // At the Add's place gamma and beta must already exist.
  for (size_t i = 1; i < norm.inputs.size(); ++i) {
    if (!norm.inputs[i].empty() && index.producer(norm.inputs[i]) > m->add) return false;
  }
  return true;
}

Node fusedNode(const Graph& g, const Match& m) {
  const Node& add = g.nodes[m.add];
  const Node& norm = g.nodes[m.norm];
  std::vector<std::string> outputs = {norm.outputs[0]};
  if (m.emitSum) outputs.push_back(add.outputs[0]);
  return addLayerNormNode(norm, add.displayName() + " + " + norm.displayName(), add.inputs[0],
                          add.inputs[1], std::move(outputs));
}

// The post-norm residual at Add node `at`: Add(R, LayerNormalization(X)) (either order)
// whose norm output only this Add reads, X of the Add's output shape (so the rows normalized
// are the output's) and type: AddLayerNorm(X, R, gamma, [beta]; residual_after = 1) -> the
// Add's output, placed where the Add was (X, gamma and beta exist before the norm, R before
// the Add).
std::optional<Fusion> residualAfterAt(const Graph& g, const GraphIndex& index,
                                      const InferredShapes& shapes, int at) {
  const Node& add = g.nodes[at];
  if (!isPlainAdd(add)) return std::nullopt;
  const SymbolicShape* out = shapeOf(shapes, add.outputs[0]);
  if (!out) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const std::string& normed = add.inputs[side];
    const std::string& residual = add.inputs[1 - side];
    const int normAt = index.producer(normed);
    if (normAt < 0 || normed == residual || index.readers(normed).size() != 1) continue;
    const Node& norm = g.nodes[normAt];
    if (!isFusableNorm(norm, index) || norm.outputs[0] != normed) continue;
    const SymbolicShape* x = shapeOf(shapes, norm.inputs[0]);
    const DataType type = typeOf(shapes, norm.inputs[0]);
    if (!x || *x != *out || type != typeOf(shapes, residual) ||
        !normFitsRows(norm, shapes, *x, type))
      continue;
    Node fused = addLayerNormNode(norm, norm.displayName() + " + " + add.displayName(),
                                  norm.inputs[0], residual, {add.outputs[0]});
    fused.attributes["residual_after"] = intAttribute(1);
    // The norm writes its output before the Add reads it: normAt < at.
    return Fusion{{normAt, at}, std::move(fused), false};
  }
  return std::nullopt;
}

// Without shapes nothing matches (the normalized axis is checked on them). The fused
// node goes where the LayerNormalization was, unless a reader of S comes before that:
// then where the Add was. Else the post-norm residual at an Add (residualAfterAt).
std::optional<Fusion> fuseAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  Match m;
  if (!matchAt(g, index, shapes, at, &m)) return residualAfterAt(g, index, shapes, at);
  return Fusion{{m.add, m.norm}, fusedNode(g, m), m.placeAtAdd};
}

}  // namespace

std::unique_ptr<Pass> makeFuseAddLayerNorm() {
  return makeFusionPass(
      {kName,
       "LayerNormalization or RMSNormalization (last axis) of Add(A, B), or Add(R, norm(X)) "
       "-> one AddLayerNorm row kernel",
       1},
      fuseAt);
}

}  // namespace kiln::passes
