// fold_sequence_first_transposes: nn.MultiheadAttention(batch_first=True) computes in
// sequence-first order, so its export copies the block's input [B, S, E] to [S, B, E] before
// the packed in-projection and the out-projection's [S, B, E] back to [B, S, E] (two
// Transposes per block, torchvision's ViT: 0.435 ms of 5.3 at batch 64 on an H200). A GEMM
// with a constant [K, N] weight treats its rows independently: it computes the same rows in
// either order, so both copies can go.
// Input side (after fold_attention_views made the STRIDED reads):
//   X = GEMM(Transpose(x, p), W[, b]),  X read only as the STRIDED base of FusedAttention
//   -> X' = GEMM(x, W[, b]); every view over X re-expressed over X' (X = Transpose(X', p)).
// Output side:
//   Y = FusedAttention(...; output_layout SBHD) -> [Reshape to [S*B, C] | GEMM]* ->
//       Reshape [S, B, C] -> Transpose (1, 0, 2) -> Z [B, S, C]
//   -> the attention writes BSHD, the rows between run in (b, s) order and the last Reshape
//      writes Z [B, S, C] itself.
// GEMM: MatMul, ai.kiln FusedMatMul or Gemm (transA = 0) whose weight is a constant matrix
// and whose bias is a constant row (rows independent). p keeps the last axis (only rows move). A
// view is re-expressed when each of its dims steps inside one dim of X without a carry (then X's
// index of every element is known, and so is X''s); otherwise that attention keeps its
// input and the Transpose stays. Static shapes only; X and every value on the output side
// read by the next node alone (no graph output).
#include <algorithm>
#include <set>

#include "ir/fused_attention.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"
#include "passes/strided_view.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_sequence_first_transposes";

bool isAttention(const Node& n) {
  return n.opType == kFusedAttentionOp && n.domain == kKilnDomain && n.inputs.size() >= 3 &&
         !n.outputs.empty();
}

// MatMul(A, W), FusedMatMul(A, W, b) or Gemm(A, W[, c]; transA = 0) with W a constant
// matrix, b a constant and c a constant row ([N] or [1, N]: a full [M, N] C is per row).
bool isRowWiseGemm(const Node& n, const GraphIndex& index) {
  const bool matmul = isOnnxOp(n, "MatMul", 2);
  const bool fused = n.opType == "FusedMatMul" && n.domain == kKilnDomain && n.inputs.size() == 3 &&
                     n.outputs.size() == 1 && index.constant(n.inputs[2]);
  bool gemm = false;
  if (isDefaultDomain(n) && n.opType == "Gemm" && n.outputs.size() == 1 &&
      (n.inputs.size() == 2 || n.inputs.size() == 3) && n.attrInt("transA", 0) == 0) {
    const Tensor* c =
        n.inputs.size() == 3 && !n.inputs[2].empty() ? index.constant(n.inputs[2]) : nullptr;
    gemm = n.inputs.size() == 2 || n.inputs[2].empty() ||
           (c && (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1)));
  }
  if (!matmul && !fused && !gemm) return false;
  const Tensor* w = index.constant(n.inputs[1]);
  return w && w->rank() == 2 && n.inputs[0] != n.inputs[1];
}

std::vector<int64_t> contiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

}  // namespace

// A STRIDED view [offset, B, H, S, D, s_b, s_h, s_s] over X (shape `x`), re-expressed over
// X' with X = Transpose(X', perm): each view dim must step inside one dim of X, and the
// steps of all view dims together must stay inside it (no carry), so the element's index in
// X, and through perm in X', is known. False (view unchanged) otherwise.
bool viewOverTransposedBase(const Shape& x, const std::vector<int64_t>& perm,
                            std::vector<int64_t>* view) {
  const size_t rank = x.size();
  if (view->size() != kAttentionViewLength || perm.size() != rank || !rewrite::isPermutation(perm))
    return false;
  Shape xPrime(rank);
  for (size_t k = 0; k < rank; ++k) xPrime[perm[k]] = x[k];
  const std::vector<int64_t> xStride = contiguousStrides(x),
                             primeStride = contiguousStrides(xPrime);
  int64_t numel = 1;
  for (int64_t d : x) numel *= d;
  const int64_t offset = (*view)[0];
  if (offset < 0 || offset >= numel) return false;
  std::vector<int64_t> reach(rank);  // the largest index each dim of X reaches
  for (size_t k = 0; k < rank; ++k) reach[k] = offset / xStride[k] % x[k];
  std::vector<int64_t> out = *view;
  int64_t newOffset = 0;
  for (size_t k = 0; k < rank; ++k) newOffset += reach[k] * primeStride[perm[k]];
  out[0] = newOffset;
  // (size, stride) of the four view dims: b, h, s and d (stride 1).
  const int64_t sizes[4] = {(*view)[1], (*view)[2], (*view)[3], (*view)[4]};
  const int64_t strides[4] = {(*view)[5], (*view)[6], (*view)[7], 1};
  for (int i = 0; i < 4; ++i) {
    if (sizes[i] < 1 || strides[i] < 0) return false;
    if (sizes[i] == 1) continue;
    size_t k = 0;
    while (k < rank && xStride[k] > strides[i]) ++k;
    if (k == rank || strides[i] % xStride[k] != 0) return false;
    const int64_t step = strides[i] / xStride[k];
    reach[k] += step * (sizes[i] - 1);
    if (reach[k] >= x[k]) return false;
    const int64_t moved = step * primeStride[perm[k]];
    if (i < 3)
      out[5 + i] = moved;
    else if (moved != 1)
      return false;  // the feature dim must stay the innermost
  }
  *view = out;
  return true;
}

namespace {

// ---- Input side -------------------------------------------------------------------------

struct InputMatch {
  int gemm = -1, transpose = -1;
  std::vector<int> attentions;
  std::map<int, std::vector<std::pair<int, std::vector<int64_t>>>> views;  // node -> (slot, view)
};

bool matchInput(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at,
                InputMatch* m) {
  const Node& gemm = g.nodes[at];
  if (!isRowWiseGemm(gemm, index)) return false;
  const std::string& x = gemm.outputs[0];
  const int t = index.producer(gemm.inputs[0]);
  if (t < 0 || !isOnnxOp(g.nodes[t], "Transpose", 1)) return false;
  const std::vector<int64_t> perm = g.nodes[t].attrInts("perm");
  Shape xShape;
  if (!staticShape(shapes, x, &xShape) || xShape.size() < 3 || perm.size() != xShape.size() ||
      !isPermutation(perm) || perm.back() != static_cast<int64_t>(perm.size()) - 1)
    return false;
  const std::vector<int>& readers = index.readers(x);
  if (readers.empty()) return false;
  for (int r : readers) {
    if (r < 0 || !isAttention(g.nodes[r]) || g.nodes[r].attrString("qkv_layout", "") != "STRIDED")
      return false;
    if (std::find(m->attentions.begin(), m->attentions.end(), r) != m->attentions.end()) continue;
    m->attentions.push_back(r);
    for (int slot = 0; slot < 3; ++slot) {
      if (g.nodes[r].inputs[slot] != x) continue;
      std::vector<int64_t> view = g.nodes[r].attrInts(kAttentionViewAttributes[slot]);
      if (!viewOverTransposedBase(xShape, perm, &view)) return false;
      m->views[r].push_back({slot, view});
    }
  }
  m->gemm = at;
  m->transpose = t;
  return true;
}

void rewriteInput(Graph& g, const InputMatch& m, std::vector<PassApplication>* applied) {
  Node& gemm = g.nodes[m.gemm];
  const std::string xPrime = freshName(g, gemm.outputs[0] + "_batch_first");
  PassApplication record{kName, {g.nodes[m.transpose].displayName(), gemm.displayName()}, ""};
  gemm.inputs[0] = g.nodes[m.transpose].inputs[0];
  gemm.outputs[0] = xPrime;
  for (const auto& [node, slots] : m.views) {
    Node& a = g.nodes[node];
    for (const auto& [slot, view] : slots) {
      a.inputs[slot] = xPrime;
      a.attributes[kAttentionViewAttributes[slot]] = intsAttribute(view);
    }
  }
  record.layer = gemm.displayName();
  applied->push_back(std::move(record));
}

// ---- Output side ------------------------------------------------------------------------

struct OutputMatch {
  int attention = -1, lastReshape = -1, transpose = -1;
  Shape batchFirst;  // Z's shape [B, S, C]
};

bool matchOutput(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at,
                 OutputMatch* m) {
  const Node& a = g.nodes[at];
  if (!isAttention(a) || a.attrString("output_layout", "") != "SBHD") return false;
  Shape y;
  if (!staticShape(shapes, a.outputs[0], &y) || y.size() < 3) return false;
  const int64_t seq = y[0], batch = y[1], rows = seq * batch;
  std::string v = a.outputs[0];
  for (int steps = 0; steps < 8; ++steps) {
    const int r = index.soleReader(v);
    if (r < 0) return false;
    const Node& n = g.nodes[r];
    Shape out;
    if (n.outputs.empty() || !staticShape(shapes, n.outputs[0], &out)) return false;
    if (n.inputs[0] != v) return false;
    if (isOnnxOp(n, "Reshape", 2) && out.size() == 3 && out[0] == seq && out[1] == batch) {
      const int t = index.soleReader(n.outputs[0]);
      if (t < 0 || !isOnnxOp(g.nodes[t], "Transpose", 1) ||
          g.nodes[t].attrInts("perm") != std::vector<int64_t>{1, 0, 2})
        return false;
      m->attention = at;
      m->lastReshape = r;
      m->transpose = t;
      m->batchFirst = {batch, seq, out[2]};
      return true;
    }
    const bool rows2d = out.size() == 2 && out[0] == rows;
    if (!rows2d) return false;
    if (!isOnnxOp(n, "Reshape", 2) && !isRowWiseGemm(n, index)) return false;
    v = n.outputs[0];
  }
  return false;
}

void rewriteOutput(Graph& g, const OutputMatch& m, std::vector<PassApplication>* applied) {
  Node& a = g.nodes[m.attention];
  const std::string y = a.outputs[0];
  const std::string yBatchFirst = freshName(g, y + "_batch_first");
  PassApplication record{kName, {a.displayName(), g.nodes[m.transpose].displayName()}, ""};
  a.attributes["output_layout"] = stringAttribute("BSHD");
  a.outputs[0] = yBatchFirst;
  const int reader = GraphIndex(g).soleReader(y);
  for (std::string& in : g.nodes[reader].inputs)
    if (in == y) in = yBatchFirst;
  Node& reshape = g.nodes[m.lastReshape];
  reshape.inputs[1] = addInt64Initializer(g, reshape.inputs[1] + "_batch_first", m.batchFirst);
  reshape.outputs[0] = g.nodes[m.transpose].outputs[0];
  g.nodes.erase(g.nodes.begin() + m.transpose);
  record.layer = a.displayName();
  applied->push_back(std::move(record));
}

class FoldSequenceFirstTransposes final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "GEMM(Transpose(x, p)) read as FusedAttention's strided base -> GEMM(x) read "
            "through permuted strides; FusedAttention(SBHD) -> row GEMMs -> Transpose(1,0,2) "
            "-> FusedAttention(BSHD) -> row GEMMs (nn.MultiheadAttention, batch_first)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // Once: a rewrite gives every value whose shape it changes a new name.
    const InferredShapes shapes = inferredShapesOrNone(network);
    for (bool changed = true; changed;) {
      changed = false;
      const GraphIndex index(g);
      for (size_t at = 0; at < g.nodes.size() && !changed; ++at) {
        InputMatch in;
        OutputMatch out;
        if (matchInput(g, index, shapes, static_cast<int>(at), &in)) {
          rewriteInput(g, in, applied);
          changed = true;
        } else if (matchOutput(g, index, shapes, static_cast<int>(at), &out)) {
          rewriteOutput(g, out, applied);
          changed = true;
        }
      }
    }
    rewrite::removeUnreadTransposes(g);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldSequenceFirstTransposes() {
  return std::make_unique<FoldSequenceFirstTransposes>();
}

}  // namespace kiln::passes
