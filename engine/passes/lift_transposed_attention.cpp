// lift_transposed_attention: attention computed on transposed heads (timm's LeViT in conv mode:
// q, k, v are [B, H, d, N] splits of a 1x1 convolution's output) in the form the attention
// fusion takes:
//   S = MatMul(Qh, Kt)                                  Kt [B, H, D, Sk], not a Transpose's output
//   L = S | Mul(S, c) | Div(S, c), then Add(., M)* -> P = Softmax(L, last axis)
//   Y = MatMul(Vt, Transpose(P, (0,1,3,2)))             Vt [B, H, Dv, Sk], Y [B, H, Dv, Sq]
// becomes
//   S = MatMul(Qh, Transpose(K4, (0,1,3,2))), K4 = Transpose(Kt, (0,1,3,2))
//   Y = Transpose(MatMul(P, Transpose(Vt, (0,1,3,2))), (0,1,3,2))
// Algebra: Transpose(Transpose(Kt)) is Kt; Vt P^T = (P Vt^T)^T. fuse_attention then takes
// the block in its BHSD form (Kt = Transpose(K, (0,1,3,2)), V = Vt^T), so the [B, H, Sq, Sk]
// probabilities are never written: K4, V's transpose and Y's transpose are copies of the
// [B, H, N, d] heads instead (LeViT-conv 128S: 11 attentions, each with a [B, 4, 196, 196]
// probability tensor written, transposed and read again before).
// Conditions: static rank-4 shapes, Kt's and Vt's last dim Sk, P's Transpose read by Y's
// MatMul alone and P by that Transpose alone, every value between S and P read by the next
// node alone; a Softmax of opset >= 13 over the last axis. Runs before the softmax and attention
// fusions, after lift_flattened_head_attention. Where fuse_attention then does not take the
// block (a mask it cannot read), K's two transposes stay: two copies of the [B, H, D, Sk] keys,
// beside the [B, H, Sq, Sk] transpose of P the rewrite removed.
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "lift_transposed_attention";
const std::vector<int64_t> kSwapLast = {0, 1, 3, 2};

struct Match {
  int scores = -1;     // S's MatMul
  int transpose = -1;  // Transpose(P, (0,1,3,2))
  int context = -1;    // Y's MatMul
};

bool isSwapLast(const Node& n) {
  return isOnnxOp(n, "Transpose", 1) && n.attrInts("perm") == kSwapLast;
}

bool rank4(const Shapes& shapes, const std::string& value, Shape* out) {
  return staticShape(shapes, value, out) && out->size() == 4;
}

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, Match* m) {
  const Node& context = g.nodes[at];
  if (!isOnnxOp(context, "MatMul", 2)) return false;
  const int transpose = soleProducer(index, context.inputs[1], at);
  if (transpose < 0 || !isSwapLast(g.nodes[transpose])) return false;
  const int softmax = soleProducer(index, g.nodes[transpose].inputs[0], transpose);
  if (softmax < 0 || !isOnnxOp(g.nodes[softmax], "Softmax", 1) || g.nodes[softmax].opset < 13)
    return false;
  const int64_t axis = g.nodes[softmax].attrInt("axis", -1);
  if (axis != -1 && axis != 3) return false;
  // Back from the softmax through the masks' Adds and the scale to the scores' MatMul.
  std::string value = g.nodes[softmax].inputs[0];
  int reader = softmax, scores = -1;
  for (int hops = 0; hops < 5 && scores < 0; ++hops) {
    const int p = soleProducer(index, value, reader);
    if (p < 0) return false;
    const Node& n = g.nodes[p];
    if (isOnnxOp(n, "MatMul", 2)) {
      scores = p;
    } else if (isOnnxOp(n, "Add", 2) || isOnnxOp(n, "Mul", 2) || isOnnxOp(n, "Div", 2)) {
      // The operand with the output's shape that a MatMul or another of these ops writes (a
      // Div's divisor is never the scores).
      int side = -1;
      for (int k = 0; k < (n.opType == "Div" ? 1 : 2) && side < 0; ++k) {
        const int q = index.producer(n.inputs[k]);
        if (q >= 0 &&
            (isOnnxOp(g.nodes[q], "MatMul", 2) || isOnnxOp(g.nodes[q], "Add", 2) ||
             isOnnxOp(g.nodes[q], "Mul", 2) || isOnnxOp(g.nodes[q], "Div", 2)) &&
            sameShapeAndType(shapes, n.inputs[k], n.outputs[0]))
          side = k;
      }
      if (side < 0) return false;
      value = n.inputs[side];
      reader = p;
    } else {
      return false;
    }
  }
  if (scores < 0) return false;
  // K^T already the output of a key transpose: fuse_attention's own forms.
  const int kt = index.producer(g.nodes[scores].inputs[1]);
  if (kt >= 0 && isOnnxOp(g.nodes[kt], "Transpose", 1)) return false;
  Shape q, k, v, s, y;
  if (!rank4(shapes, g.nodes[scores].inputs[0], &q) ||
      !rank4(shapes, g.nodes[scores].inputs[1], &k) || !rank4(shapes, context.inputs[0], &v) ||
      !rank4(shapes, g.nodes[scores].outputs[0], &s) || !rank4(shapes, context.outputs[0], &y))
    return false;
  // Q [B, H, Sq, D], Kt [B, H, D, Sk], Vt [B, H, Dv, Sk], Y [B, H, Dv, Sq].
  if (k[3] != s[3] || v[3] != s[3] || q[3] != k[2] || y[2] != v[2] || y[3] != s[2]) return false;
  *m = {scores, transpose, at};
  return true;
}

class LiftTransposedAttention final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "attention on transposed heads (Q^T K, then V P^T: LeViT's conv mode) in the form "
            "the attention fusion takes",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // A rewrite gives the values it makes fresh names and keeps Y's name and shape: one
    // inference serves every match; the index is rebuilt after each.
    const Shapes shapes = inferredShapesOrNone(network);
    for (bool changed = true; changed;) {
      changed = false;
      const GraphIndex index(g);
      for (int at = 0; at < static_cast<int>(g.nodes.size()) && !changed; ++at) {
        Match m;
        if (!matchAt(g, index, shapes, at, &m)) continue;
        rewrite(g, m, applied);
        changed = true;
      }
    }
    return Status::ok();
  }

 private:
  static Node swapLast(const Graph& g, const Node& like, const std::string& value,
                       const std::string& what) {
    Node t = madeNode(g, like, like.displayName() + " (" + what + ")", "Transpose", {value},
                      {like.displayName()}, kName);
    t.attributes["perm"] = intsAttribute(kSwapLast);
    return t;
  }

  static void rewrite(Graph& g, const Match& m, std::vector<PassApplication>* applied) {
    Node& scores = g.nodes[m.scores];
    // K4 = Kt^T, then S reads K4^T: the key transpose fuse_attention absorbs.
    Node keys = swapLast(g, scores, scores.inputs[1], "key heads");
    Node keysT = swapLast(g, scores, keys.outputs[0], "keys transposed");
    scores.inputs[1] = keysT.outputs[0];
    // Y = (P V)^T with V = Vt^T; Y keeps its name.
    Node& context = g.nodes[m.context];
    Node values = swapLast(g, context, context.inputs[0], "value heads");
    const std::string y = context.outputs[0];
    context.inputs = {g.nodes[m.transpose].inputs[0], values.outputs[0]};
    context.outputs[0] = freshName(g, y + "_heads");
    Node back = swapLast(g, context, context.outputs[0], "output transposed");
    back.outputs[0] = y;
    const std::vector<std::string> served = {
        scores.displayName(), g.nodes[m.transpose].displayName(), context.displayName()};
    std::vector<Node> nodes;
    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      if (i == m.transpose) continue;
      if (i == m.scores) {
        nodes.push_back(keys);
        nodes.push_back(keysT);
      }
      if (i == m.context) nodes.push_back(values);
      nodes.push_back(std::move(g.nodes[i]));
      if (i == m.context) nodes.push_back(back);
    }
    g.nodes = std::move(nodes);
    applied->push_back({kName, served, y});
  }
};

}  // namespace

std::unique_ptr<Pass> makeLiftTransposedAttention() {
  return std::make_unique<LiftTransposedAttention>();
}

}  // namespace kiln::passes
