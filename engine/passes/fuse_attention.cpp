// fuse_attention: multi-head attention, from the head split to the head merge, as one
// ai.kiln FusedAttention node (contract: ir/fused_attention.h). Matched from the
// context MatMul back:
//   S = MatMul(Qh, Kt)
//   P = ScaledMaskedSoftmax(S, [M]; scale = c)            (after fuse_softmax_scale_mask)
//     | Softmax(Add(Mul|Div(S, c), M)) | Softmax(Mul|Div(S, c)) | Softmax(Add(S, M)) | Softmax(S)
//   C = MatMul(P', Vh) [-> Ct = Transpose(C, (0,2,1,3)) [-> Reshape(Ct) to [B, S, H * Dv]]]
//   P' = P, or Where(IsNaN(P), 0, P) (PyTorch's SDPA export: a row with no finite score
//     gives 0, not NaN) -> nan_to_zero = 1
// Scales before the product fold into c: Qh or Kt may each be Mul(X, a) or Div(X, a)
// with a a scalar constant (the SDPA export scales both by sqrt(c)):
//   <a Q, b K> = a b <Q, K>, so c' = c a b.
// in one of two layouts for all three of Q, K, V (when the head transposes match for some
// operands and not others, as for LLaMA's rotary Q and K beside V's plain head split in the
// dynamo export, all three are read as BHSD and the matched head transposes stay outside):
//   BSHD, the exporters' head split (Q4, K4, V4 [B, S, H, D], the Reshape outputs):
//     Qh = Transpose(Q4, (0,2,1,3)), Vh = Transpose(V4, (0,2,1,3)),
//     Kt = Transpose(K4, (0,2,3,1)) or Transpose(Transpose(K4, (0,2,1,3)), (0,1,3,2))
//   BHSD, no head transposes (Q, K, V [B, H, S, D]): Qh = Q, Vh = V, Kt = Transpose(K, (0,1,3,2))
//     or Kt = Reshape(Transpose(Reshape(X, [B * H, S, D]), (0,2,1)), [B, H, D, S]) of any X
//     with those elements (GQA's repeat_kv merged into the dynamo export's K^T): the layer
//     then reads Q, K (X's elements as a contiguous [B, H, S, D]) and V as STRIDED views
// -> Y = FusedAttention(Q4, K4, V4, [M]; scale = c, num_heads = H, qkv_layout,
//                       output_layout = BSHD when Ct is absorbed else BHSD, merge_heads)
// Algebra: Transpose(K4, (0,2,3,1)) = Transpose(Transpose(K4, (0,2,1,3)), (0,1,3,2)) is K
// per head transposed, so S[b,h,i,j] = <Q4[b,i,h,:], K4[b,j,h,:]> and
// C[b,h,i,:] = sum_j P[b,h,i,j] V4[b,j,h,:]; Ct holds the same values in [B, S, H, Dv]
// index order and a Reshape of it to [B, S, H * Dv] keeps its bytes. The kernels read and
// write through those strides, so no transpose moves data any more.
// Shifted-window masks (torchvision's Swin; mask_batch_period): the softmax's input may be
//   Reshape(Add(Reshape(S [+ Bias], [B / P, P, H, Sq, Sk]), W), [B, H, Sq, Sk])
// with W a constant broadcasting to [1, P, H, Sq, Sk] (one mask per window of an image) and
// Bias a constant broadcasting to [1, H, Sq, Sk] (the relative position bias). The batch's
// windows are image-major, so window b of the flattened batch is window b mod P of its
// image: M = Bias + W[0] as one [P, H, Sq, Sk] constant (computed here, in the scores'
// type) with mask_batch_period = P. All shapes static.
// Conditions (inferred shapes): Q, K, V rank 4 with a constant head count (one for all
// three) and K's head size = Q's (V's may differ); batch dims of Q, K, V, V's sequence against K's
// and each mask dim against S's (or 1) equal or not both numbers (symbols that inference could not
// relate are checked by the kernels at run time); M rank <= 4 with S's type; the Reshape absorbed
// only when its output is exactly [B, S, H * Dv]. Every intermediate (the transposes, S, the
// softmax chain, P, C and Ct when absorbed) is read by the next node of the pattern alone.
#include <algorithm>
#include <set>

#include "ir/fused_attention.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fuse_attention";
using Perm = std::vector<int64_t>;

const Perm kHeads = {0, 2, 1, 3};        // [B, S, H, D] <-> [B, H, S, D]
const Perm kKeyFromBshd = {0, 2, 3, 1};  // [B, S, H, D] -> [B, H, D, S]
const Perm kLastTwo = {0, 1, 3, 2};      // [B, H, S, D] -> [B, H, D, S]

// The Transpose with `perm` that writes `value` for node `reader` alone, or -1.
int transposeInto(const Graph& g, const GraphIndex& index, const std::string& value, int reader,
                  const Perm& perm) {
  const int at = index.producer(value);
  if (at < 0 || index.soleReader(value) != reader) return -1;
  const Node& t = g.nodes[at];
  return isOnnxOp(t, "Transpose", 1) && t.attrInts("perm") == perm ? at : -1;
}

// Q, K or V as the fused node reads it: the value before its head transposes.
struct Operand {
  std::string value;
  bool bshd = false;
  std::vector<int> nodes;
  // Set for a K read through a merged reshape (keyThroughMergedReshape): the [B, H, S, D]
  // dims of `value`'s elements read contiguously; the layer then reads Q, K, V as STRIDED.
  Shape dims;
};

// Qh or Vh: Transpose(X4, (0,2,1,3)) reads X4 in BSHD; anything else is X in BHSD.
Operand queryOrValue(const Graph& g, const GraphIndex& index, const std::string& value,
                     int reader) {
  const int t = transposeInto(g, index, value, reader, kHeads);
  if (t < 0) return {value, false, {}};
  return {g.nodes[t].inputs[0], true, {t}};
}

// `o` read as BHSD: the head transpose it absorbed stays outside and its output is the
// operand (Q or V: Transpose(X4, (0,2,1,3)); K: the inner (0,2,1,3) of its two
// transposes, the (0,1,3,2) still absorbed). False for K's single (0,2,3,1) transpose,
// which has no BHSD form.
bool readAsBhsd(const Graph& g, bool key, Operand* o) {
  if (!o->bshd) return true;
  if (!key) {
    *o = {g.nodes[o->nodes.front()].outputs[0], false, {}};
    return true;
  }
  if (o->nodes.size() != 2) return false;
  *o = {g.nodes[o->nodes[0]].outputs[0], false, {o->nodes[1]}};
  return true;
}

bool keyOperand(const Graph& g, const GraphIndex& index, const std::string& kt, int reader,
                Operand* out) {
  int t = transposeInto(g, index, kt, reader, kKeyFromBshd);
  if (t >= 0) {
    *out = {g.nodes[t].inputs[0], true, {t}};
    return true;
  }
  t = transposeInto(g, index, kt, reader, kLastTwo);
  if (t < 0) return false;
  const std::string& kh = g.nodes[t].inputs[0];
  const int inner = transposeInto(g, index, kh, t, kHeads);
  *out = inner < 0 ? Operand{kh, false, {t}} : Operand{g.nodes[inner].inputs[0], true, {inner, t}};
  return true;
}

// K^T as Reshape(Transpose(Reshape(x, [B * H, S, D]), (0,2,1)), [B, H, D, S]), K's head split
// merged into the reshape before the product: the dynamo exporter's K^T when K is GQA's
// repeat_kv (Expand to [B, Hkv, H / Hkv, S, D]) and no Transpose folds. K is then x's
// elements read as a contiguous [B, H, S, D]. Static shapes only.
bool keyThroughMergedReshape(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             const std::string& kt, int reader, Operand* out) {
  const int r2 = index.producer(kt);
  if (r2 < 0 || index.soleReader(kt) != reader || !isOnnxOp(g.nodes[r2], "Reshape", 2))
    return false;
  const std::string& transposed = g.nodes[r2].inputs[0];
  const int t = index.producer(transposed);
  if (t < 0 || index.soleReader(transposed) != r2 || !isOnnxOp(g.nodes[t], "Transpose", 1) ||
      g.nodes[t].attrInts("perm") != Perm{0, 2, 1})
    return false;
  const std::string& merged = g.nodes[t].inputs[0];
  const int r1 = index.producer(merged);
  if (r1 < 0 || index.soleReader(merged) != t || !isOnnxOp(g.nodes[r1], "Reshape", 2)) return false;
  Shape m, y;
  if (!rewrite::staticShape(shapes, merged, &m) || !rewrite::staticShape(shapes, kt, &y) ||
      m.size() != 3 || y.size() != 4 || y[0] * y[1] != m[0] || y[2] != m[2] || y[3] != m[1])
    return false;
  *out = {g.nodes[r1].inputs[0], false, {r1, t, r2}, {y[0], y[1], m[1], m[2]}};
  return true;
}

struct Scores {
  std::vector<int> nodes;
  std::string scores, mask;
  double scale = 1.0;
  int64_t maskPeriod = 0;  // > 0: `windowMask` is the mask (an initializer fuseAt adds)
  Tensor windowMask;
};

// A product operand and the node reading it.
struct Read {
  std::string value;
  int reader = -1;
};

// `in.value` scaled by a scalar constant for node `in.reader` alone: Mul(X, a), Mul(a, X)
// or Div(X, a). Returns X read by that node, multiplies *scale by a (or 1 / a) and adds
// the node to `nodes`; returns `in` unchanged otherwise.
Read unscaled(const Graph& g, const GraphIndex& index, const Read& in, double* scale,
              std::vector<int>* nodes) {
  const int at = index.producer(in.value);
  if (at < 0 || index.soleReader(in.value) != in.reader) return in;
  const Node& n = g.nodes[at];
  const bool mul = isOnnxOp(n, "Mul", 2), div = isOnnxOp(n, "Div", 2);
  if (!mul && !div) return in;
  for (int side = 0; side < (mul ? 2 : 1); ++side) {
    double a = 0.0;
    if (!rewrite::scalarValue(index.constant(n.inputs[1 - side]), &a) || a == 0.0) continue;
    *scale *= div ? 1.0 / a : a;
    nodes->push_back(at);
    return {n.inputs[side], at};
  }
  return in;
}

// P' = Where(IsNaN(P), 0, P) read by node `reader` alone, P read by those two nodes
// alone: fills the two nodes and returns P; "" when `value` is not such a guard.
std::string nanGuarded(const Graph& g, const GraphIndex& index, const std::string& value,
                       int reader, std::vector<int>* nodes) {
  const int where = index.producer(value);
  if (where < 0 || index.soleReader(value) != reader || !isOnnxOp(g.nodes[where], "Where", 3))
    return "";
  const Node& w = g.nodes[where];
  const int isNan = index.producer(w.inputs[0]);
  if (isNan < 0 || !isOnnxOp(g.nodes[isNan], "IsNaN", 1) ||
      index.soleReader(w.inputs[0]) != where || g.nodes[isNan].inputs[0] != w.inputs[2] ||
      !rewrite::allElementsEqual(index.constant(w.inputs[1]), 0.0) ||
      !rewrite::readOnlyBy(index, w.inputs[2], {where, isNan}))
    return "";
  nodes->insert(nodes->end(), {isNan, where});
  return w.inputs[2];
}

// P's softmax, read by the nodes `readers` alone, in any of the forms above.
bool matchSoftmax(const Graph& g, const GraphIndex& index, const std::string& p,
                  const std::set<int>& readers, Scores* s) {
  const int at = index.producer(p);
  if (at < 0 || !rewrite::readOnlyBy(index, p, readers) ||
      index.readers(p).size() != readers.size())
    return false;
  const Node& n = g.nodes[at];
  if (n.opType == "ScaledMaskedSoftmax" && n.domain == kKilnDomain) {
    if (n.inputs.empty() || n.inputs.size() > 2 || n.inputs[0].empty() ||
        n.attrInt("axis", -1) != -1 || n.attrInt("mask_replaces", 0) != 0)
      return false;  // a replacing mask (masked_fill) is no additive attention mask
    *s = {{at}, n.inputs[0], n.inputs.size() > 1 ? n.inputs[1] : "", n.attrFloat("scale", 1.f)};
    return true;
  }
  SoftmaxChain chain;
  if (matchSoftmaxChain(g, index, at, &chain)) {
    *s = {chain.nodes, chain.x, chain.mask, chain.scale};
    return true;
  }
  if (!isOnnxOp(n, "Softmax", 1) || n.attrInt("axis", n.opset < 13 ? 1 : -1) != -1) return false;
  *s = {{at}, n.inputs[0], "", 1.0};
  return true;
}

// `value` = Add(X, C) or Add(C, X) for node `reader` alone, C a constant: the Add's index,
// X and C; -1 otherwise.
int addOfConstant(const Graph& g, const GraphIndex& index, const std::string& value, int reader,
                  std::string* x, const Tensor** c) {
  const int at = index.producer(value);
  if (at < 0 || index.soleReader(value) != reader || !isOnnxOp(g.nodes[at], "Add", 2)) return -1;
  for (int side = 0; side < 2; ++side) {
    const Tensor* t = index.constant(g.nodes[at].inputs[1 - side]);
    if (!t || !isFloatingPoint(t->type())) continue;
    *x = g.nodes[at].inputs[side];
    *c = t;
    return at;
  }
  return -1;
}

// `t` broadcasts (numpy, right-aligned) to `full`: each dim is 1 or `full`'s.
bool broadcastsTo(const Tensor& t, const Shape& full) {
  const Shape& s = t.shape();
  if (s.size() > full.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i], f = full[full.size() - 1 - i];
    if (d != 1 && d != f) return false;
  }
  return true;
}

// The element of `t` that lands at coordinate `at` of `full` when broadcast to it.
double broadcastValue(const Tensor& t, const Shape& full, const std::vector<int64_t>& at) {
  const Shape& s = t.shape();
  int64_t offset = 0, stride = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t axis = s.size() - 1 - i;
    const int64_t coordinate = at[full.size() - 1 - i];
    if (s[axis] != 1) offset += coordinate * stride;
    stride *= s[axis];
  }
  return t.valueAsDouble(offset);
}

// The shifted-window form above, at the Softmax `p` is written by (read by `readers`
// alone): fills s with the scores S, the nodes from the inner Add (or Reshape) to the
// Softmax, the combined [P, H, Sq, Sk] mask and P.
bool matchWindowSoftmax(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                        const std::string& p, const std::set<int>& readers, Scores* s) {
  const int softmax = index.producer(p);
  if (softmax < 0 || !rewrite::readOnlyBy(index, p, readers) ||
      index.readers(p).size() != readers.size())
    return false;
  const Node& sm = g.nodes[softmax];
  if (!isOnnxOp(sm, "Softmax", 1) || sm.attrInt("axis", sm.opset < 13 ? 1 : -1) != -1) return false;
  const int outer = index.producer(sm.inputs[0]);
  if (outer < 0 || index.soleReader(sm.inputs[0]) != softmax ||
      !isOnnxOp(g.nodes[outer], "Reshape", 2))
    return false;
  std::string windowed, inner5;
  const Tensor* windowMask = nullptr;
  const int windowAdd =
      addOfConstant(g, index, g.nodes[outer].inputs[0], outer, &windowed, &windowMask);
  if (windowAdd < 0) return false;
  const int split = index.producer(windowed);
  if (split < 0 || index.soleReader(windowed) != windowAdd ||
      !isOnnxOp(g.nodes[split], "Reshape", 2))
    return false;
  Shape full4, full5;
  if (!rewrite::staticShape(shapes, sm.inputs[0], &full4) || full4.size() != 4 ||
      !rewrite::staticShape(shapes, windowed, &full5) || full5.size() != 5)
    return false;
  const int64_t period = full5[1];
  if (period < 1 || full5[0] * period != full4[0] || full5[2] != full4[1] || full5[3] != full4[2] ||
      full5[4] != full4[3])
    return false;
  if (!broadcastsTo(*windowMask, full5) ||
      (windowMask->shape().size() == 5 && windowMask->shape()[0] != 1))
    return false;
  std::vector<int> nodes = {softmax, outer, windowAdd, split};
  std::string scores = g.nodes[split].inputs[0];
  const Tensor* bias = nullptr;
  std::string beforeBias;
  const int biasAdd = addOfConstant(g, index, scores, split, &beforeBias, &bias);
  const Shape biasFull = {1, full4[1], full4[2], full4[3]};
  if (biasAdd >= 0 && broadcastsTo(*bias, biasFull)) {
    nodes.push_back(biasAdd);
    scores = beforeBias;
  } else {
    bias = nullptr;
  }
  Shape scoreShape;
  if (!rewrite::staticShape(shapes, scores, &scoreShape) || scoreShape != full4) return false;
  const DataType type = typeOf(shapes, scores);
  if (type == DataType::kUndefined || windowMask->type() != type || (bias && bias->type() != type))
    return false;
  // M[w, h, i, j] = W[0, w, h, i, j] + Bias[0, h, i, j], in double, then the scores' type.
  const Shape maskShape = {period, full4[1], full4[2], full4[3]};
  Tensor combined(DataType::kFloat64, maskShape);
  std::vector<int64_t> at5(5, 0), at4(4, 0);
  int64_t i = 0;
  for (int64_t w = 0; w < period; ++w)
    for (int64_t h = 0; h < full4[1]; ++h)
      for (int64_t r = 0; r < full4[2]; ++r)
        for (int64_t c = 0; c < full4[3]; ++c, ++i) {
          at5 = {0, w, h, r, c};
          at4 = {0, h, r, c};
          double v = broadcastValue(*windowMask, full5, at5);
          if (bias) v += broadcastValue(*bias, biasFull, at4);
          combined.data<double>()[i] = v;
        }
  s->nodes = nodes;
  s->scores = scores;
  s->mask.clear();
  s->scale = 1.0;
  s->maskPeriod = period;
  s->windowMask = castTensor(combined, type);
  return true;
}

// The MatMul writing the scores for the softmax chain alone, or -1. With scale 1 the
// chain's X + M is symmetric, so the scores may be either of the two.
int scoresMatMul(const Graph& g, const GraphIndex& index, Scores* s) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int at = index.producer(s->scores);
    const int reader = index.soleReader(s->scores);
    if (at >= 0 && isOnnxOp(g.nodes[at], "MatMul", 2) &&
        std::find(s->nodes.begin(), s->nodes.end(), reader) != s->nodes.end())
      return at;
    if (s->scale != 1.0 || s->mask.empty()) return -1;
    std::swap(s->scores, s->mask);
  }
  return -1;
}

// Equal, or not both numbers: exporters derive batch and sequence through Shape nodes
// that inference may name with different symbols; the kernels check them at run time.
bool mayBeEqual(const DimExpr& a, const DimExpr& b) {
  return a == b || !a.isConst() || !b.isConst();
}

// M broadcasts to the scores' shape [B, H, Sq, Sk] dim by dim, with their type: each
// dim is 1, the scores' dim, or a symbol inference could not relate to it (a mask built
// from the inputs' shapes often carries its own symbol for the batch); the kernels check
// those at run time and refuse, naming both shapes, a mask that does not broadcast.
bool maskFits(const InferredShapes& shapes, const std::string& mask, const std::string& scores) {
  const SymbolicShape* m = shapeOf(shapes, mask);
  const SymbolicShape* s = shapeOf(shapes, scores);
  if (!m || !s || s->size() != 4 || m->size() > 4) return false;
  if (typeOf(shapes, mask) != typeOf(shapes, scores)) return false;
  for (size_t i = 0; i < m->size(); ++i) {
    const DimExpr& dim = (*m)[i];
    const DimExpr& full = (*s)[4 - m->size() + i];
    if (!(dim.isConst() && dim.constValue() == 1) && !mayBeEqual(dim, full)) return false;
  }
  return true;
}

struct Match {
  std::vector<int> nodes;  // ascending after sort
  Operand q, k, v;
  Scores scores;
  std::vector<int> extra;  // the NaN guard and the Q / K scales
  std::string output, outputLayout = "BHSD";
  bool mergeHeads = false, nanToZero = false;
  int64_t heads = 0;
};

// Q, K, V in one layout, rank 4, one batch, constant heads, matching head size and sequence.
bool operandsFit(const InferredShapes& shapes, Match* m) {
  if (m->q.bshd != m->k.bshd || m->q.bshd != m->v.bshd) return false;
  const SymbolicShape* q = shapeOf(shapes, m->q.value);
  SymbolicShape keyView;
  for (int64_t d : m->k.dims) keyView.push_back(DimExpr(d));
  const SymbolicShape* k = m->k.dims.empty() ? shapeOf(shapes, m->k.value) : &keyView;
  const SymbolicShape* v = shapeOf(shapes, m->v.value);
  if (!q || !k || !v || q->size() != 4 || k->size() != 4 || v->size() != 4) return false;
  const size_t headAxis = m->q.bshd ? 2 : 1, seqAxis = m->q.bshd ? 1 : 2;
  const DimExpr& heads = (*q)[headAxis];
  if (!heads.isConst() || heads.constValue() <= 0) return false;
  for (const SymbolicShape* s : {k, v})
    if (!mayBeEqual((*s)[0], (*q)[0]) || (*s)[headAxis] != heads) return false;
  if ((*k)[3] != (*q)[3] || !mayBeEqual((*v)[seqAxis], (*k)[seqAxis])) return false;
  m->heads = heads.constValue();
  return true;
}

// Q or V read as a contiguous [B, H, S, D] view of itself (beside a K read through a
// merged reshape): its static dims, or false.
bool contiguousDims(const InferredShapes& shapes, Operand* o) {
  Shape dims;
  if (!rewrite::staticShape(shapes, o->value, &dims) || dims.size() != 4) return false;
  o->dims = dims;
  return true;
}

// C's head merge: Transpose(C, (0,2,1,3)) and a Reshape of that to [B, S, H * Dv].
void absorbHeadMerge(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                     Match* m) {
  const int t = index.soleReader(m->output);
  if (t < 0 || !isOnnxOp(g.nodes[t], "Transpose", 1) || g.nodes[t].attrInts("perm") != kHeads)
    return;
  m->nodes.push_back(t);
  m->output = g.nodes[t].outputs[0];
  m->outputLayout = "BSHD";
  const int r = index.soleReader(m->output);
  if (r < 0 || !isOnnxOp(g.nodes[r], "Reshape", 2)) return;
  const SymbolicShape* in = shapeOf(shapes, m->output);
  const SymbolicShape* out = shapeOf(shapes, g.nodes[r].outputs[0]);
  if (!in || !out || in->size() != 4 || out->size() != 3 || (*out)[0] != (*in)[0] ||
      (*out)[1] != (*in)[1] || (*out)[2] != (*in)[2] * (*in)[3])
    return;
  m->nodes.push_back(r);
  m->output = g.nodes[r].outputs[0];
  m->mergeHeads = true;
}

bool matchAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at,
             Match* m) {
  const Node& pv = g.nodes[at];
  if (!isOnnxOp(pv, "MatMul", 2)) return false;
  std::string p = nanGuarded(g, index, pv.inputs[0], at, &m->extra);
  m->nanToZero = !p.empty();
  const std::set<int> pReaders =
      m->nanToZero ? std::set<int>(m->extra.begin(), m->extra.end()) : std::set<int>{at};
  const std::string probs = m->nanToZero ? p : pv.inputs[0];
  if (!matchWindowSoftmax(g, index, shapes, probs, pReaders, &m->scores) &&
      !matchSoftmax(g, index, probs, pReaders, &m->scores))
    return false;
  const int qk = scoresMatMul(g, index, &m->scores);
  if (qk < 0) return false;
  const Read kt = unscaled(g, index, {g.nodes[qk].inputs[1], qk}, &m->scores.scale, &m->extra);
  if (!keyOperand(g, index, kt.value, kt.reader, &m->k) &&
      !keyThroughMergedReshape(g, index, shapes, kt.value, kt.reader, &m->k))
    return false;
  const Read qh = unscaled(g, index, {g.nodes[qk].inputs[0], qk}, &m->scores.scale, &m->extra);
  m->q = queryOrValue(g, index, qh.value, qh.reader);
  m->v = queryOrValue(g, index, pv.inputs[1], at);
  const bool mixed = m->q.bshd != m->k.bshd || m->q.bshd != m->v.bshd;
  if (mixed &&
      !(readAsBhsd(g, false, &m->q) && readAsBhsd(g, true, &m->k) && readAsBhsd(g, false, &m->v)))
    return false;
  if (!operandsFit(shapes, m)) return false;
  if (!m->k.dims.empty() && !(contiguousDims(shapes, &m->q) && contiguousDims(shapes, &m->v)))
    return false;
  if (!m->scores.mask.empty() && !maskFits(shapes, m->scores.mask, m->scores.scores)) return false;
  m->nodes = {qk, at};
  for (const Operand* o : {&m->q, &m->k, &m->v})
    m->nodes.insert(m->nodes.end(), o->nodes.begin(), o->nodes.end());
  m->nodes.insert(m->nodes.end(), m->scores.nodes.begin(), m->scores.nodes.end());
  m->nodes.insert(m->nodes.end(), m->extra.begin(), m->extra.end());
  m->output = pv.outputs[0];
  absorbHeadMerge(g, index, shapes, m);
  std::sort(m->nodes.begin(), m->nodes.end());
  return true;
}

// TensorRT-style name: the ONNX nodes behind the match (a ScaledMaskedSoftmax stands
// for its chain) joined by " + ".
Node fusedNode(const Graph& g, const Match& m) {
  Node fused;
  for (const std::string& s : sourceNodesOf(g, m.nodes))
    fused.name += (fused.name.empty() ? "" : " + ") + s;
  fused.opType = kFusedAttentionOp;
  fused.domain = kKilnDomain;
  fused.opset = 1;
  fused.inputs = {m.q.value, m.k.value, m.v.value};
  if (!m.scores.mask.empty()) fused.inputs.push_back(m.scores.mask);
  if (m.scores.maskPeriod > 0)
    fused.attributes["mask_batch_period"] = intAttribute(m.scores.maskPeriod);
  fused.outputs = {m.output};
  fused.attributes["scale"] = floatAttribute(static_cast<float>(m.scores.scale));
  fused.attributes["num_heads"] = intAttribute(m.heads);
  fused.attributes["qkv_layout"] = stringAttribute(m.q.bshd ? "BSHD" : "BHSD");
  if (!m.k.dims.empty()) {  // K through a merged reshape: each operand as a contiguous view
    fused.attributes["qkv_layout"] = stringAttribute("STRIDED");
    const Operand* operands[3] = {&m.q, &m.k, &m.v};
    for (int i = 0; i < 3; ++i) {
      const Shape& d = operands[i]->dims;  // [B, H, S, D]
      fused.attributes[kAttentionViewAttributes[i]] = rewrite::intsAttribute(
          {0, d[0], d[1], d[2], d[3], d[1] * d[2] * d[3], d[2] * d[3], d[3]});
    }
  }
  fused.attributes["output_layout"] = stringAttribute(m.outputLayout);
  fused.attributes["merge_heads"] = intAttribute(m.mergeHeads ? 1 : 0);
  if (m.nanToZero) fused.attributes["nan_to_zero"] = intAttribute(1);
  return fused;
}

// Without shapes nothing matches (the head count comes from them).
std::optional<Fusion> fuseAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  Match m;
  if (!matchAt(g, index, shapes, at, &m)) return std::nullopt;
  if (m.scores.maskPeriod > 0) {  // the combined window mask becomes an initializer
    m.scores.mask = rewrite::freshName(g, g.nodes[at].name + "_window_mask");
    g.initializers[m.scores.mask] = m.scores.windowMask;
  }
  return Fusion{m.nodes, fusedNode(g, m)};
}

}  // namespace

std::unique_ptr<Pass> makeFuseAttention() {
  return makeFusionPass(
      {kName,
       "MatMul(softmax(MatMul(a Q, b K^T) * c + M) [NaN -> 0], V) with the head transposes "
       "(and the head merge) -> one FusedAttention (flash-style kernel)",
       1},
      fuseAt);
}

}  // namespace kiln::passes
