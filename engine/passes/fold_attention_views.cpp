// fold_attention_views: a FusedAttention reads Q, K and V through strides from the tensor
// their head-split chain starts at, so the chain's copies never run (contract of the
// STRIDED layout: ir/fused_attention.h).
//   X -> [Reshape | Transpose | Squeeze | Unsqueeze | Flatten | Identity | Gather(scalar
//         constant index) | Split | Slice(constant, unit steps)]* -> Q (likewise K, V)
//   Y = FusedAttention(Q, K, V, [M]; qkv_layout BSHD | BHSD)
// -> Y = FusedAttention(X_q, X_k, X_v, [M]; qkv_layout STRIDED, q_view, k_view, v_view)
// Algebra: each op of the chain only re-indexes; composed from X's contiguous layout
// (passes/strided_view.h) the chain maps Q[b, h, i, d] to X[o + b s_b + h s_h + i s_s + d]
// whenever the composed B, H, S dims each have one stride and D has stride 1. The exports
// this serves: timm's packed QKV ([B, N, 3, H, D] -> Transpose (2,0,3,1,4) -> Split or
// Gather -> Q, K, V: one Transpose and three copies per block) and nn.MultiheadAttention's
// sequence-first head split ([N, B, 3E] -> ... -> Gather -> [N, B*H, D] -> Transpose ->
// [B, H, N, D]: a Transpose, a Gather and three Transposes per block). Folded only when a
// chain holds an op that copies (Transpose, Gather, Split, Slice): a chain of Reshapes is
// free already (the CUDA runtime aliases them).
// Output: Y in BHSD read by Transpose (2,0,1,3) alone, or in BSHD without the head merge
// read by Transpose (1,0,2,3) alone, is written as SBHD (nn.MultiheadAttention's head merge
// before its out projection) and the Transpose goes.
// Conditions: every shape on the chains static (fixed-shape profiles; a dynamic batch keeps
// the chains); the chain nodes the fused node takes over are read by nothing else (the
// others stay for their other readers, and the fused node reads X anyway).
#include <algorithm>
#include <set>

#include "ir/fused_attention.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"
#include "passes/strided_view.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_attention_views";
constexpr int kMaxChain = 16;

struct Step {
  int node = -1;
  int output = 0;  // which output of the node the chain follows (Split)
};

bool staticShapeOf(const InferredShapes& shapes, const std::string& value, Shape* out) {
  return rewrite::staticShape(shapes, value, out);
}

// The index of `value` among node `n`'s outputs, or -1.
int outputIndex(const Node& n, const std::string& value) {
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] == value) return static_cast<int>(i);
  return -1;
}

bool copies(const Node& n) {
  return n.opType == "Transpose" || n.opType == "Gather" || n.opType == "Split" ||
         n.opType == "Slice";
}

bool isViewOp(const Node& n) {
  static const std::set<std::string> kOps = {"Reshape",   "Transpose", "Squeeze",
                                             "Unsqueeze", "Flatten",   "Identity",
                                             "Gather",    "Split",     "Slice"};
  return isDefaultDomain(n) && kOps.count(n.opType) && !n.inputs.empty() && !n.inputs[0].empty();
}

// Applies node `step` (whose input 0 `view` describes) to `view`.
bool apply(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, const Step& step,
           StridedView* view) {
  const Node& n = g.nodes[step.node];
  Shape in, out;
  if (!staticShapeOf(shapes, n.inputs[0], &in) ||
      !staticShapeOf(shapes, n.outputs[step.output], &out) || view->shape() != in)
    return false;
  const int64_t rank = static_cast<int64_t>(in.size());
  auto axisOf = [&](int64_t axis) { return axis < 0 ? axis + rank : axis; };
  if (n.opType == "Transpose") {
    std::vector<int64_t> perm = n.attrInts("perm");
    if (perm.empty())
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return view->transpose(perm) && view->shape() == out;
  }
  if (n.opType == "Gather") {
    std::vector<int64_t> idx;
    const Tensor* t = n.inputs.size() == 2 ? index.constant(n.inputs[1]) : nullptr;
    if (!t || t->numel() != 1 || !rewrite::constantInts(t, &idx) || idx.size() != 1) return false;
    const int64_t axis = axisOf(n.attrInt("axis", 0));
    if (axis < 0 || axis >= rank) return false;
    const int64_t at = idx[0] < 0 ? idx[0] + in[axis] : idx[0];
    const bool ok = t->shape().empty() ? view->select(axis, at) : view->narrow(axis, at, 1);
    return ok && view->shape() == out;
  }
  if (n.opType == "Split") {
    const int64_t axis = axisOf(n.attrInt("axis", 0));
    if (axis < 0 || axis >= rank) return false;
    int64_t start = 0;
    for (int i = 0; i < step.output; ++i) {
      Shape before;
      if (!staticShapeOf(shapes, n.outputs[i], &before) || before.size() != in.size()) return false;
      start += before[axis];
    }
    return view->narrow(axis, start, out[axis]) && view->shape() == out;
  }
  if (n.opType == "Slice") {
    std::vector<int64_t> starts, axes, steps;
    if (n.inputs.size() < 3 || !rewrite::constantInts(index.constant(n.inputs[1]), &starts))
      return false;
    if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
      if (!rewrite::constantInts(index.constant(n.inputs[3]), &axes)) return false;
    } else {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (n.inputs.size() > 4 && !n.inputs[4].empty() &&
        (!rewrite::constantInts(index.constant(n.inputs[4]), &steps) ||
         std::any_of(steps.begin(), steps.end(), [](int64_t s) { return s != 1; })))
      return false;
    if (axes.size() != starts.size()) return false;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t axis = axisOf(axes[i]);
      if (axis < 0 || axis >= rank) return false;
      const int64_t start =
          std::clamp(starts[i] < 0 ? starts[i] + in[axis] : starts[i], int64_t{0}, in[axis]);
      if (!view->narrow(axis, start, out[axis])) return false;
    }
    return view->shape() == out;
  }
  return view->reshape(out);  // Reshape, Squeeze, Unsqueeze, Flatten, Identity
}

// One operand's view: the chain back from `value` (at most kMaxChain view ops) and the
// furthest tensor X from which composing the chain gives the operand in `layout`.
struct Folded {
  std::string base;
  std::vector<int64_t> view;  // [offset, B, H, S, D, s_b, s_h, s_s]
  std::vector<int> nodes;     // the chain from X on
  bool copies = false;
};

// [offset, B, H, S, D, s_b, s_h, s_s] of `view` read in `layout`, or false.
bool operandView(const StridedView& view, bool bshd, std::vector<int64_t>* out) {
  int64_t size[4], stride[4];
  const int64_t axes[4] = {0, bshd ? 2 : 1, bshd ? 1 : 2, 3};  // b, h, s, d
  for (int i = 0; i < 4; ++i)
    if (!view.simpleDim(axes[i], &size[i], &stride[i])) return false;
  if (size[3] > 1 && stride[3] != 1) return false;
  *out = {view.offset(), size[0], size[1], size[2], size[3], stride[0], stride[1], stride[2]};
  return true;
}

bool foldOperand(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                 const std::string& value, bool bshd, Folded* out) {
  std::vector<Step> chain;  // from the operand back
  std::string at = value;
  while (static_cast<int>(chain.size()) < kMaxChain) {
    const int p = index.producer(at);
    if (p < 0 || !isViewOp(g.nodes[p])) break;
    chain.push_back({p, outputIndex(g.nodes[p], at)});
    at = g.nodes[p].inputs[0];
  }
  // The furthest start that composes; the operand itself (no chain) always does.
  for (size_t start = chain.size() + 1; start-- > 0;) {
    const std::string base = start == 0 ? value : g.nodes[chain[start - 1].node].inputs[0];
    Shape baseShape;
    StridedView view;
    if (!staticShapeOf(shapes, base, &baseShape) || !StridedView::contiguous(baseShape, &view))
      continue;
    bool ok = true;
    for (size_t i = start; i-- > 0 && ok;) ok = apply(g, index, shapes, chain[i], &view);
    std::vector<int64_t> v;
    if (!ok || !operandView(view, bshd, &v)) continue;
    *out = {base, v, {}, false};
    for (size_t i = 0; i < start; ++i) {
      out->nodes.push_back(chain[i].node);
      out->copies = out->copies || copies(g.nodes[chain[i].node]);
    }
    return true;
  }
  return false;
}

// The nodes of `candidates` whose every output is read only inside the set or by `at`
// (and is no graph output), to a fixpoint.
std::vector<int> takenOver(const Graph& g, const GraphIndex& index, std::set<int> candidates,
                           int at) {
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = candidates.begin(); it != candidates.end();) {
      bool inside = true;
      for (const std::string& out : g.nodes[*it].outputs)
        for (int r : index.readers(out)) inside = inside && (r == at || candidates.count(r));
      if (inside) {
        ++it;
      } else {
        it = candidates.erase(it);
        changed = true;
      }
    }
  }
  return {candidates.begin(), candidates.end()};
}

// Y's head merge as a sequence-first write: the Transpose read alone after Y, or -1.
int sequenceFirstTranspose(const Graph& g, const GraphIndex& index, const Node& n) {
  const std::string layout = n.attrString("output_layout", "BSHD");
  const bool merge = n.attrInt("merge_heads", 0) != 0;
  const int t = index.soleReader(n.outputs[0]);
  if (t < 0 || !isOnnxOp(g.nodes[t], "Transpose", 1)) return -1;
  const std::vector<int64_t> perm = g.nodes[t].attrInts("perm");
  if (layout == "BHSD" && perm == std::vector<int64_t>{2, 0, 1, 3}) return t;
  if (layout == "BSHD" && !merge && perm == std::vector<int64_t>{1, 0, 2, 3}) return t;
  return -1;
}

std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  const Node& n = g.nodes[at];
  if (n.opType != kFusedAttentionOp || n.domain != kKilnDomain || n.inputs.size() < 3 ||
      n.outputs.empty())
    return std::nullopt;
  const std::string layout = n.attrString("qkv_layout", "BSHD");
  if (layout != "BSHD" && layout != "BHSD") return std::nullopt;
  Folded operands[3];
  bool anyCopy = false;
  for (int i = 0; i < 3; ++i) {
    if (!foldOperand(g, index, shapes, n.inputs[i], layout == "BSHD", &operands[i]))
      return std::nullopt;
    anyCopy = anyCopy || operands[i].copies;
  }
  const int outputTranspose = sequenceFirstTranspose(g, index, n);
  if (!anyCopy && outputTranspose < 0) return std::nullopt;
  Node fused = n;
  std::set<int> candidates;
  if (anyCopy) {
    fused.attributes["qkv_layout"] = stringAttribute("STRIDED");
    for (int i = 0; i < 3; ++i) {
      fused.inputs[i] = operands[i].base;
      fused.attributes[kAttentionViewAttributes[i]] = rewrite::intsAttribute(operands[i].view);
      candidates.insert(operands[i].nodes.begin(), operands[i].nodes.end());
    }
  }
  std::vector<int> nodes = takenOver(g, index, candidates, at);
  nodes.push_back(at);
  if (outputTranspose >= 0) {
    fused.attributes["output_layout"] = stringAttribute("SBHD");
    fused.outputs[0] = g.nodes[outputTranspose].outputs[0];
    nodes.push_back(outputTranspose);
  }
  std::sort(nodes.begin(), nodes.end());
  fused.name.clear();
  for (const std::string& s : sourceNodesOf(g, nodes))
    fused.name += (fused.name.empty() ? "" : " + ") + s;
  return Fusion{nodes, fused};
}

}  // namespace

std::unique_ptr<Pass> makeFoldAttentionViews() {
  return makeFusionPass(
      {kName,
       "FusedAttention(view(X_q), view(X_k), view(X_v)) with view a chain of Reshape, "
       "Transpose, Gather, Split, Slice -> FusedAttention(X_q, X_k, X_v) read through "
       "strides (STRIDED), and Transpose(Y) -> Y written sequence-first (SBHD)",
       1},
      foldAt);
}

}  // namespace kiln::passes
