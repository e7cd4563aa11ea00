// lift_flattened_head_attention: attention whose heads are flattened into the batch
// ([B * H, S, D] batched products around a [B, H, S, Sk] softmax, BLOOM's baddbmm and bmm) in
// the [B, H, S, D] form the attention fusion takes:
//   S3 = MatMul(Q3, K3t)                                  [B*H, S, D] x [B*H, D, Sk]
//   X3 = S3 | Mul(S3, c) | Div(S3, c) | Add(one of those, A3)   (A3 [B*H, 1 or S, Sk])
//   L = Reshape(X3, [B, H, S, Sk]) -> [Add(., M)]* -> Softmax -> P
//   C3 = MatMul(Reshape(P, [B*H, S, Sk]), V3)             [B*H, S, Dv]
// becomes
//   S4 = MatMul(Reshape(Q3, [B, H, S, D]), Reshape(K3t, [B, H, D, Sk]))
//   X4 = the same ops on S4 (A3 as Reshape(A3, [B, H, 1 or S, Sk])) -> L, as before
//   C3 = Reshape(MatMul(P, Reshape(V3, [B, H, Sk, Dv])), [B*H, S, Dv])
// Algebra: a batched MatMul over [B * H] is the same products over [B, H]; Reshapes between
// [B*H, ..] and [B, H, ..] move no bytes (merge_reshapes then joins Q's and V's with the head
// split's, and fuse_attention reads K through its merged reshape), and an elementwise op
// commutes with a Reshape applied to all its operands. BLOOM's attention (the ALiBi bias added
// through baddbmm, then the causal mask) stayed unfused (docs/benchmarks.md, eleventh session);
// with merge_additive_masks it becomes one FusedAttention with a [B, H, S, Sk] mask.
// Conditions: static positive shapes, opset >= 5; c a scalar constant; every value between S3 and
// C3 read by the pattern alone. Runs before masked_fill_as_additive_mask, merge_additive_masks and
// the attention fusion.
#include <optional>
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "lift_flattened_head_attention";

struct Lift {
  int scores = -1;            // S3's MatMul
  std::vector<int> scoreOps;  // the Mul / Div and the Add on S3, in order
  int bias = -1;              // the Add's A3 slot in scoreOps.back(), or -1
  int split = -1;             // Reshape(X3, [B, H, S, Sk])
  int merge = -1;             // Reshape(P, [B*H, S, Sk])
  int context = -1;           // C3's MatMul
  Shape heads;                // [B, H, S, Sk]
  int64_t d = 0, dv = 0;
};

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, Lift* m) {
  const Node& c3 = g.nodes[at];
  if (!isOnnxOp(c3, "MatMul", 2) || c3.opset < 5) return false;  // Reshape's shape an input
  const int merge = soleProducer(index, c3.inputs[0], at);
  if (merge < 0 || !isOnnxOp(g.nodes[merge], "Reshape", 2)) return false;
  const int softmax = soleProducer(index, g.nodes[merge].inputs[0], merge);
  if (softmax < 0 || !isOnnxOp(g.nodes[softmax], "Softmax", 1) ||
      g.nodes[softmax].attrInt("axis", -1) != -1)
    return false;
  // Back from the softmax through the masks' Adds to the Reshape that splits the heads.
  std::string value = g.nodes[softmax].inputs[0];
  int reader = softmax, split = -1;
  for (int hops = 0; hops < 4 && split < 0; ++hops) {
    const int p = soleProducer(index, value, reader);
    if (p < 0) return false;
    const Node& n = g.nodes[p];
    if (isOnnxOp(n, "Reshape", 2)) {
      split = p;
    } else if (isOnnxOp(n, "Add", 2)) {
      // A mask: follow the operand with L's shape that a Reshape or another Add writes.
      int side = -1;
      for (int k = 0; k < 2 && side < 0; ++k) {
        const int q = index.producer(n.inputs[k]);
        if (q >= 0 && (isOnnxOp(g.nodes[q], "Reshape", 2) || isOnnxOp(g.nodes[q], "Add", 2)) &&
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
  if (split < 0) return false;
  Shape heads, x3, p3, v3;
  const std::string& x = g.nodes[split].inputs[0];
  if (!staticShape(shapes, g.nodes[split].outputs[0], &heads) || heads.size() != 4 ||
      heads[0] <= 0 || heads[1] <= 0 || heads[2] <= 0 || heads[3] <= 0 ||
      !staticShape(shapes, x, &x3) || x3.size() != 3 || x3[0] != heads[0] * heads[1] ||
      x3[1] != heads[2] || x3[2] != heads[3] ||
      !staticShape(shapes, g.nodes[merge].outputs[0], &p3) || p3 != x3 ||
      !staticShape(shapes, c3.inputs[1], &v3) || v3.size() != 3 || v3[0] != x3[0] || v3[1] != x3[2])
    return false;
  // X3 back to S3: [Add(., A3)] then [Mul | Div by a scalar constant].
  std::vector<int> ops;
  int bias = -1;
  value = x;
  reader = split;
  int p = soleProducer(index, value, reader);
  if (p >= 0 && isOnnxOp(g.nodes[p], "Add", 2)) {
    const Node& add = g.nodes[p];
    for (int side = 0; side < 2 && bias < 0; ++side) {
      Shape a3;
      if (!staticShape(shapes, add.inputs[1 - side], &a3) || a3.size() != 3 || a3[0] != x3[0] ||
          (a3[1] != 1 && a3[1] != x3[1]) || a3[2] != x3[2] ||
          !sameShapeAndType(shapes, add.inputs[side], add.outputs[0]))
        continue;
      bias = 1 - side;
      value = add.inputs[side];
    }
    if (bias < 0) return false;
    ops.insert(ops.begin(), p);
    reader = p;
    p = soleProducer(index, value, reader);
  }
  if (p >= 0 && (isOnnxOp(g.nodes[p], "Mul", 2) || isOnnxOp(g.nodes[p], "Div", 2))) {
    const Node& scale = g.nodes[p];
    double c = 0.0;
    if (!scalarValue(index.constant(scale.inputs[1]), &c)) return false;
    ops.insert(ops.begin(), p);
    value = scale.inputs[0];
    reader = p;
    p = soleProducer(index, value, reader);
  }
  if (p < 0 || !isOnnxOp(g.nodes[p], "MatMul", 2)) return false;
  Shape q3;
  if (!staticShape(shapes, g.nodes[p].inputs[0], &q3) || q3.size() != 3 || q3[0] != x3[0])
    return false;
  *m = {p, ops, bias, split, merge, at, heads, q3[2], v3[2]};
  return true;
}

class LiftFlattenedHeadAttention final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "attention over [B*H, S, D] (heads flattened into the batch, a [B, H, S, Sk] softmax "
            "between) in the [B, H, S, D] form the attention fusion takes (BLOOM)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // A rewrite gives the values it makes fresh names and keeps C3's (or its view's) name and
    // shape: one inference serves every match; the index is rebuilt after each.
    const Shapes shapes = inferredShapesOrNone(network);
    for (bool changed = true; changed;) {
      changed = false;
      const GraphIndex index(g);
      for (int at = 0; at < static_cast<int>(g.nodes.size()) && !changed; ++at) {
        Lift m;
        if (!matchAt(g, index, shapes, at, &m)) continue;
        rewrite(g, index, shapes, m, applied);
        changed = true;
      }
    }
    return Status::ok();
  }

 private:
  // A Reshape of `value` to `dims`, appended to `made` (named after `like`); its output.
  static std::string reshapeBefore(Graph& g, std::vector<Node>* made, const Node& like,
                                   const std::string& value, const std::vector<int64_t>& dims,
                                   const std::string& what) {
    const std::string target = addInt64Initializer(g, like.displayName() + "_" + what, dims);
    Node r = madeNode(g, like, like.displayName() + " (" + what + ")", "Reshape", {value, target},
                      {like.displayName()}, kName);
    made->push_back(r);
    return r.outputs[0];
  }

  // The [B, H, ..] value `flat` ([B*H, ..], read by node `reader` alone) was reshaped from,
  // when its producer is such a Reshape; "" otherwise.
  static std::string headsBefore(const Graph& g, const GraphIndex& index, const Shapes& shapes,
                                 const std::string& flat, int reader, const Shape& dims) {
    const int p = index.soleReader(flat) == reader ? index.producer(flat) : -1;
    if (p < 0 || !isOnnxOp(g.nodes[p], "Reshape", 2)) return "";
    Shape in;
    return staticShape(shapes, g.nodes[p].inputs[0], &in) && in == dims ? g.nodes[p].inputs[0] : "";
  }

  static void rewrite(Graph& g, const GraphIndex& index, const Shapes& shapes, const Lift& m,
                      std::vector<PassApplication>* applied) {
    const int64_t b = m.heads[0], h = m.heads[1], s = m.heads[2], sk = m.heads[3];
    // Nodes inserted right before the node they feed; each list keyed by that node's index.
    std::vector<std::vector<Node>> before(g.nodes.size());
    Node& scores = g.nodes[m.scores];
    // Q: the head split's [B, H, S, D] value itself where Q3 is its Reshape, else a Reshape.
    std::string q4 = headsBefore(g, index, shapes, scores.inputs[0], m.scores, {b, h, s, m.d});
    if (q4.empty())
      q4 = reshapeBefore(g, &before[m.scores], scores, scores.inputs[0], {b, h, s, m.d},
                         "query heads");
    // K^T: Transpose(K4, (0, 1, 3, 2)) where K3t = Transpose(Reshape(K4), (0, 2, 1)).
    std::string kt4;
    const int kt =
        index.soleReader(scores.inputs[1]) == m.scores ? index.producer(scores.inputs[1]) : -1;
    if (kt >= 0 && isOnnxOp(g.nodes[kt], "Transpose", 1) &&
        g.nodes[kt].attrInts("perm") == std::vector<int64_t>{0, 2, 1}) {
      const std::string k4 =
          headsBefore(g, index, shapes, g.nodes[kt].inputs[0], kt, {b, h, sk, m.d});
      if (!k4.empty()) {
        Node t = madeNode(g, g.nodes[kt], g.nodes[kt].displayName() + " (key heads)", "Transpose",
                          {k4}, {g.nodes[kt].displayName()}, kName);
        t.attributes["perm"] = intsAttribute({0, 1, 3, 2});
        kt4 = t.outputs[0];
        before[m.scores].push_back(std::move(t));
      }
    }
    if (kt4.empty())
      kt4 = reshapeBefore(g, &before[m.scores], scores, scores.inputs[1], {b, h, m.d, sk},
                          "key heads");
    scores.inputs = {q4, kt4};
    scores.outputs[0] = freshName(g, scores.outputs[0] + "_heads");
    std::string value = scores.outputs[0];
    for (size_t i = 0; i < m.scoreOps.size(); ++i) {
      Node& op = g.nodes[m.scoreOps[i]];
      if (i + 1 == m.scoreOps.size() && m.bias >= 0) {
        const std::string a = op.inputs[m.bias];
        op.inputs[m.bias] =
            reshapeBefore(g, &before[m.scoreOps[i]], op, a, {b, h, -1, sk}, "bias heads");
        op.inputs[1 - m.bias] = value;
      } else {
        op.inputs[0] = value;
      }
      op.outputs[0] = freshName(g, op.outputs[0] + "_heads");
      value = op.outputs[0];
    }
    // The split Reshape goes: its reader reads X4.
    const std::string l = g.nodes[m.split].outputs[0];
    for (Node& n : g.nodes)
      for (std::string& in : n.inputs)
        if (in == l) in = value;
    // The merge Reshape goes: C4 = MatMul(P, V4).
    Node& context = g.nodes[m.context];
    const std::string c3 = context.outputs[0];
    context.inputs[0] = g.nodes[m.merge].inputs[0];
    std::string v4 = headsBefore(g, index, shapes, context.inputs[1], m.context, {b, h, sk, m.dv});
    if (v4.empty())
      v4 = reshapeBefore(g, &before[m.context], context, context.inputs[1], {b, h, sk, m.dv},
                         "value heads");
    context.inputs[1] = v4;
    // C3's reader, when it views C3 as [B, H, S, Dv] again (BLOOM's head merge), gives way to
    // C4 under its output's name; else C3 = Reshape(C4).
    const int view = index.soleReader(c3);
    Shape viewed;
    const bool viewedAsHeads = view >= 0 && isOnnxOp(g.nodes[view], "Reshape", 2) &&
                               staticShape(shapes, g.nodes[view].outputs[0], &viewed) &&
                               viewed == Shape{b, h, s, m.dv};
    std::optional<Node> back;
    if (viewedAsHeads) {
      context.outputs[0] = g.nodes[view].outputs[0];
    } else {
      context.outputs[0] = freshName(g, c3 + "_heads");
      const std::string target =
          addInt64Initializer(g, context.displayName() + "_merged", {b * h, s, m.dv});
      back = madeNode(g, context, context.displayName() + " (heads merged)", "Reshape",
                      {context.outputs[0], target}, {context.displayName()}, kName);
      back->outputs = {c3};
    }
    const std::vector<std::string> served = {g.nodes[m.scores].displayName(),
                                             g.nodes[m.split].displayName(),
                                             g.nodes[m.merge].displayName(), context.displayName()};
    const std::string layer = context.outputs[0];
    std::vector<Node> nodes;
    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      for (Node& n : before[i]) nodes.push_back(std::move(n));
      if (i == m.split || i == m.merge || (viewedAsHeads && i == view)) continue;
      nodes.push_back(std::move(g.nodes[i]));
      if (i == m.context && back) nodes.push_back(*back);
    }
    g.nodes = std::move(nodes);
    applied->push_back({kName, served, viewedAsHeads ? layer : c3});
  }
};

}  // namespace

std::unique_ptr<Pass> makeLiftFlattenedHeadAttention() {
  return std::make_unique<LiftFlattenedHeadAttention>();
}

}  // namespace kiln::passes
