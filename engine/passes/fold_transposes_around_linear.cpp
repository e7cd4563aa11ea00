// fold_transposes_around_linear: Linear layers applied over an axis that is not the last, through
// a Transpose that moves it last and one that moves it back, computed in place:
//   Transpose(X, p) -> [MatMul(., W) -> Add(., b)? -> act?]+ -> Transpose(., p^-1)
//   => [MatMul(W^T, X') -> Add(., b as [N, 1])? -> act?]+ (X' = X, or X viewed as [.., K, R])
// p moves axis a of X [d0, .., d(r-1)] last and keeps the others' order; W a constant [K, N]
// (K = d(a)), b a constant of N elements (or one) along the last axis; act a one-input
// positionwise op (the op table's). Algebra: with the transposes, output[.., n, ..] = sum_k X[..,
// k, ..] W[k, n] over axis a, which is W^T X when X is viewed as [d0, .., d(a-1), K, R] (R the
// product of the dims after a; a Reshape, which moves no bytes, when there are several), the bias a
// column, and an elementwise op the same in either order. gMLP's spatial gating unit (a
// Linear over the tokens), MLP-Mixer's token mixing (two, a GELU between) and CaiT's talking
// heads (a Linear over the heads of [B, H, N, N] scores) each paid two Transposes of the
// whole tensor per Linear (docs/benchmarks.md, twelfth session: gMLP-S16's Transposes 31% of
// its time). Conditions: static positive shapes, opset >= 5 (Reshape's shape an input); every value
// of the chain read by the next node alone; at least one MatMul; not tokens going back into an
// image through a Reshape, nor an image's channels moved last (below). Runs after fuse_gelu (a GELU
// is then one node) and before the GEMM fusion, which would otherwise take each MatMul, its bias
// and activation in the transposed layout.
#include <set>
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_transposes_around_linear";

// The axis `perm` moves last, the others in order; -1 for any other permutation.
int movedAxis(const std::vector<int64_t>& perm) {
  const int r = static_cast<int>(perm.size());
  if (r < 2) return -1;
  const int a = static_cast<int>(perm[r - 1]);
  if (a < 0 || a >= r - 1) return -1;
  for (int i = 0, j = 0; i < r - 1; ++i, ++j) {
    if (j == a) ++j;
    if (perm[i] != j) return -1;
  }
  return a;
}

// A one-input positionwise op (Relu, Gelu, Erf, Sigmoid, ...): the same in either layout.
bool isActivation(const Node& n) {
  return isPositionwise(n) && n.inputs.size() == 1 && n.outputs.size() == 1;
}

// A 4-D X with axis 1 moved last is an image going NHWC, which a channels-last engine stores
// as it is (ConvNeXt's permute before its Linear: a free view there), unless it is attention
// scores or probabilities [B, H, N, N] (CaiT's talking heads): Q K^T (scaled or not) or a
// Softmax.
bool scoresOrProbabilities(const Graph& g, const GraphIndex& index, const std::string& x) {
  const int p = index.producer(x);
  return attentionScores(g, index, x) || (p >= 0 && isOnnxOpType(g.nodes[p], "Softmax"));
}

// One node of the chain and what it becomes.
struct Step {
  int node = -1;
  enum Kind { kMatMul, kBias, kActivation } kind = kActivation;
  int slot = 0;                      // the chain value's input slot (Add)
  const Tensor* constant = nullptr;  // W [K, N] or b
};

struct Chain {
  int first = -1, last = -1;  // the two Transposes
  int axis = -1;
  Shape x;  // X's static shape
  std::vector<Step> steps;
};

// The chain starting at Transpose `at`, or false.
bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, Chain* c) {
  const Node& t1 = g.nodes[at];
  if (!isOnnxOp(t1, "Transpose", 1)) return false;
  const std::vector<int64_t> perm = t1.attrInts("perm");
  c->axis = movedAxis(perm);
  if (c->axis < 0 || t1.opset < 5 || !staticShape(shapes, t1.inputs[0], &c->x) ||
      c->x.size() != perm.size())
    return false;
  for (int64_t d : c->x)
    if (d <= 0) return false;  // a 0 in a Reshape's target would copy, not size

  if (c->x.size() == 4 && c->axis == 1 && !scoresOrProbabilities(g, index, t1.inputs[0]))
    return false;
  int64_t width = c->x[c->axis];  // the moved axis' size along the chain
  std::string value = t1.outputs[0];
  bool anyMatMul = false;
  for (int hops = 0; hops < 16; ++hops) {
    const int reader = index.soleReader(value);
    if (reader < 0) return false;
    const Node& n = g.nodes[reader];
    Step step;
    step.node = reader;
    if (isOnnxOp(n, "Transpose", 1)) {
      std::vector<int64_t> back = n.attrInts("perm"), inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
      if (back != inverse || !anyMatMul) return false;
      // Tokens [B, N, C] back to [B, C, N] for a Reshape into an image [B, C, H, W]: SegFormer's
      // decoder. On a channels-last engine that Transpose and Reshape are a free view of the
      // GEMM's output (fold_view_chains), so the Linear stays a GEMM with its bias epilogue.
      const int view = index.soleReader(n.outputs[0]);
      const SymbolicShape* image = view >= 0 && isOnnxOp(g.nodes[view], "Reshape", 2)
                                       ? shapeOf(shapes, g.nodes[view].outputs[0])
                                       : nullptr;
      if (c->x.size() == 3 && image && image->size() == 4) return false;
      c->first = at;
      c->last = reader;
      return true;
    }
    if (isOnnxOp(n, "MatMul", 2) && n.inputs[0] == value) {
      const Tensor* w = index.constant(n.inputs[1]);
      if (!w || w->rank() != 2 || w->dim(0) != width) return false;
      step.kind = Step::kMatMul;
      step.constant = w;
      width = w->dim(1);
      anyMatMul = true;
    } else if (isOnnxOp(n, "Add", 2)) {
      step.kind = Step::kBias;
      step.slot = n.inputs[0] == value ? 0 : 1;
      const Tensor* b = index.constant(n.inputs[1 - step.slot]);
      if (!b || n.inputs[1 - step.slot] == value) return false;
      // b broadcasts along the last axis only: [.., 1, width] or one element.
      const Shape& s = b->shape();
      for (size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] != 1) return false;
      if (!(b->numel() == 1 || (!s.empty() && s.back() == width)) || s.size() > perm.size())
        return false;
      step.constant = b;
    } else if (isActivation(n)) {
      step.kind = Step::kActivation;
    } else {
      return false;
    }
    if (!sameShapeAndType(shapes, value, n.outputs[0]) && step.kind != Step::kMatMul) return false;
    c->steps.push_back(step);
    value = n.outputs[0];
  }
  return false;
}

class FoldTransposesAroundLinear final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Transpose -> [MatMul(W) -> bias -> act]+ -> Transpose back, a Linear over an inner "
            "axis, as MatMul(W^T, X) in place (gMLP, MLP-Mixer, CaiT's talking heads)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    std::set<std::string> replaced;
    // A rewrite gives every value it makes a fresh name and keeps the last Transpose's output
    // (same shape): one inference serves every match; the index is rebuilt after each.
    const Shapes shapes = inferredShapesOrNone(network);
    for (bool changed = true; changed;) {
      changed = false;
      const GraphIndex index(g);
      for (int at = 0; at < static_cast<int>(g.nodes.size()) && !changed; ++at) {
        Chain c;
        if (!matchAt(g, index, shapes, at, &c)) continue;
        rewrite(g, c, &replaced, applied);
        changed = true;
      }
    }
    dropUnreadInitializers(g, replaced);
    return Status::ok();
  }

 private:
  static void rewrite(Graph& g, const Chain& c, std::set<std::string>* replaced,
                      std::vector<PassApplication>* applied) {
    const Node first = g.nodes[c.first], last = g.nodes[c.last];
    const int a = c.axis;
    const int64_t r = static_cast<int64_t>(c.x.size());
    int64_t rest = 1;  // R: the dims after the moved axis
    for (int64_t i = a + 1; i < r; ++i) rest *= c.x[i];
    const bool viewed = r - 1 - a != 1;  // X seen as [d0, .., d(a-1), K, R]
    std::vector<Node> made;
    std::string value = first.inputs[0];
    auto shapeWith = [&](int64_t width, bool flat) {
      std::vector<int64_t> dims(c.x.begin(), c.x.begin() + a);
      dims.push_back(width);
      if (flat)
        dims.push_back(rest);
      else
        dims.insert(dims.end(), c.x.begin() + a + 1, c.x.end());
      return dims;
    };
    int64_t width = c.x[a];
    if (viewed) {
      const std::string target =
          addInt64Initializer(g, first.displayName() + "_view", shapeWith(width, true));
      Node view = madeNode(g, first, first.displayName() + " (as a view)", "Reshape",
                           {value, target}, {first.displayName()}, kName);
      value = view.outputs[0];
      made.push_back(std::move(view));
    }
    std::vector<std::string> served = {first.displayName()};
    for (const Step& step : c.steps) {
      Node n = g.nodes[step.node];
      served.push_back(n.displayName());
      if (step.kind == Step::kMatMul) {
        const std::string w = n.inputs[1];
        const std::string wt = freshName(g, w + "_t");
        g.initializers[wt] = transposedMatrix(*step.constant);
        replaced->insert(w);
        n.inputs = {wt, value};
        width = step.constant->dim(1);
      } else if (step.kind == Step::kBias) {
        const std::string b = n.inputs[1 - step.slot];
        std::string column = b;
        if (step.constant->numel() != 1) {
          column = freshName(g, b + "_column");
          const Shape shape = {width, 1};
          g.initializers[column] = step.constant->reshaped(shape);
          replaced->insert(b);
        }
        n.inputs = {value, column};
      } else {
        n.inputs = {value};
      }
      n.outputs = {freshName(g, n.outputs[0] + "_in_place")};
      value = n.outputs[0];
      made.push_back(std::move(n));
    }
    if (viewed) {
      const std::string target =
          addInt64Initializer(g, last.displayName() + "_view", shapeWith(width, false));
      Node back = madeNode(g, last, last.displayName() + " (as a view)", "Reshape", {value, target},
                           {last.displayName()}, kName);
      made.push_back(std::move(back));
    }
    served.push_back(last.displayName());
    made.back().outputs = last.outputs;
    // The chain's nodes leave; the new ones take the last Transpose's place: X and every
    // constant the chain read (a Constant node's included) come before their readers, and
    // the chain's values are read by the chain alone.
    std::set<int> gone = {c.first, c.last};
    for (const Step& step : c.steps) gone.insert(step.node);
    std::vector<Node> nodes;
    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      if (i == c.last)
        for (Node& n : made) nodes.push_back(std::move(n));
      if (!gone.count(i)) nodes.push_back(std::move(g.nodes[i]));
    }
    g.nodes = std::move(nodes);
    applied->push_back({kName, served, last.outputs[0]});
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldTransposesAroundLinear() {
  return std::make_unique<FoldTransposesAroundLinear>();
}

}  // namespace kiln::passes
