// fold_attention_views: a FusedAttention reads Q, K and V through strides from the tensor
// their head-split chain starts at, so the chain's copies never run (contract of the
// STRIDED layout: ir/fused_attention.h).
//   X -> [Reshape | Transpose | Squeeze | Unsqueeze | Flatten | Identity | Gather(scalar
//         constant index) | Split | Slice(constant, unit steps)]* -> Q (likewise K, V)
//   Y = FusedAttention(Q, K, V, [M]; qkv_layout BSHD | BHSD)
// -> Y = FusedAttention(X_q, X_k, X_v, [M]; qkv_layout STRIDED, q_view, k_view, v_view)
// Algebra: each op of the chain only re-indexes; composed from X's contiguous layout
// (passes/view_chain.h) the chain maps Q[b, h, i, d] to X[o + b s_b + h s_h + i s_s + d]
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
#include "passes/view_chain.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_attention_views";

// One operand's view: the chain back from `value` (at most kMaxViewChain view ops) and the
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
  const std::vector<ViewStep> chain = viewChainBack(g, index, value);  // from the operand back
  // The furthest start that composes; the operand itself (no chain) always does.
  for (size_t start = chain.size() + 1; start-- > 0;) {
    const std::string base = start == 0 ? value : g.nodes[chain[start - 1].node].inputs[0];
    const std::vector<ViewStep> fromBase(chain.rend() - start, chain.rend());
    StridedView view;
    std::vector<int64_t> v;
    if (!composeViewChain(g, index, shapes, base, fromBase, &view) || !operandView(view, bshd, &v))
      continue;
    *out = {base, v, {}, false};
    for (size_t i = 0; i < start; ++i) {
      out->nodes.push_back(chain[i].node);
      out->copies = out->copies || viewOpCopies(g.nodes[chain[i].node]);
    }
    return true;
  }
  return false;
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
  std::vector<int> nodes = nodesTakenOver(g, index, candidates, at);
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
