// sum_stacked_branches: a sum over the axis that stacked its branches is the sum of the
// branches, and a weighted one the sum of each branch times its weight:
//   ReduceSum(Concat(Unsqueeze(X_0, a), .., Unsqueeze(X_k, a); axis a), [a], keepdims 0)
//     = X_0 + .. + X_k
//   ReduceSum(Mul(Concat(..), W), [a], keepdims 0)
//     = X_0 * Gather(W, 0, axis a) + .. + X_k * Gather(W, k, axis a)
// (W's dim a is k + 1, or 1: then index 0 for every branch; W on either side of the Mul).
// A Reshape that splits X's axis a into (k + 1, d) stacks the branches as well, X's slices:
//   ReduceSum([Mul(] Reshape(X, [.., k + 1, d, ..]) [, W)], [a], keepdims 0)
//     = Slice(X, [0, d), a) [* Gather(W, 0, a)] + .. + Slice(X, [k d, (k + 1) d), a) [* ..]
// (ResNeSt's split attention: its radix groups of channels summed, and summed under their
// softmax weights).
// With 16-bit branches and three or more of them the partial sums round to the branches' type
// one Add at a time; two branches (SKNet's) give the same values.
// Selective-kernel convolutions (timm's SKNet, SelectiveKernel) write both: the branches'
// sum for the attention's pool, and the softmax-weighted sum of the branches after it. The
// stacked form copies every branch into a 5-D tensor that the channels-last region cannot
// hold; the sum form is 4-D elementwise work the pointwise fusion joins. Conditions: the
// branches' shapes known and equal, float types, one reduced axis, keepdims 0, opset >= 7
// (numpy broadcasting), the Mul read by the ReduceSum alone (it goes with it); Unsqueeze and Concat
// stay for their other readers (or go as dead nodes). Runs after the constant fold (axes are
// constants then), before reduce_as_global_pool and channels_last_layout.
#include <map>
#include <utility>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "sum_stacked_branches";

struct Match {
  std::vector<std::string> branches;  // X_0 .. X_k (empty names: slices of `sliced`, made)
  std::string sliced;                 // a Reshape's X whose axis the stack split, or ""
  int64_t sliceWidth = 0;             // d
  std::string weights;                // W, "" for the plain sum
  bool weightsFirst = false;          // Mul(W, C)
  int64_t axis = 0;
  bool oneWeight = false;  // W's dim a is 1
  int mul = -1;            // the Mul of the weighted sum
};

// The branches X_i of Concat output `stacked` along `axis` (each an Unsqueeze at that axis).
bool stackedBranches(const Graph& g, const GraphIndex& index, const Shapes& shapes,
                     const std::string& stacked, int64_t axis, int64_t rank, Match* m) {
  const int c = index.producer(stacked);
  if (c >= 0 && isOnnxOpType(g.nodes[c], "Reshape") && g.nodes[c].hasInput(0)) {
    // X [.., k + 1 times d, ..] viewed [.., k + 1, d, ..] at `axis`: k + 1 slices of X.
    const std::string& x = g.nodes[c].inputs[0];
    const SymbolicShape* in = shapeOf(shapes, x);
    const SymbolicShape* out = shapeOf(shapes, stacked);
    if (!in || !out || static_cast<int64_t>(in->size()) != rank - 1 ||
        static_cast<int64_t>(out->size()) != rank || axis + 1 >= rank ||
        !isStorageFloat(typeOf(shapes, x)))
      return false;
    for (int64_t d = 0; d < rank - 1; ++d) {
      if (d == axis) continue;
      if (!((*in)[d] == (*out)[d < axis ? d : d + 1])) return false;
    }
    const DimExpr &n = (*out)[axis], &w = (*out)[axis + 1], &whole = (*in)[axis];
    if (!n.isConst() || !w.isConst() || !whole.isConst() || n.constValue() < 2 ||
        n.constValue() * w.constValue() != whole.constValue())
      return false;
    m->sliced = x;
    m->sliceWidth = w.constValue();
    m->branches.assign(static_cast<size_t>(n.constValue()), std::string());
    return true;
  }
  if (c < 0 || !isOnnxOpType(g.nodes[c], "Concat")) return false;
  const Node& concat = g.nodes[c];
  int64_t concatAxis = concat.attrInt("axis", 0);
  if (concatAxis < 0) concatAxis += rank;
  if (concatAxis != axis || concat.inputs.size() < 2) return false;
  m->branches.clear();
  for (const std::string& in : concat.inputs) {
    const int u = in.empty() ? -1 : index.producer(in);
    if (u < 0 || !isOnnxOpType(g.nodes[u], "Unsqueeze") || !g.nodes[u].hasInput(0)) return false;
    if (singleAxis(g.nodes[u], index, 13, rank) != axis) return false;
    const std::string& x = g.nodes[u].inputs[0];
    const SymbolicShape* s = shapeOf(shapes, x);
    if (!s || static_cast<int64_t>(s->size()) != rank - 1 || !isStorageFloat(typeOf(shapes, x)))
      return false;
    if (!m->branches.empty() && !sameShapeAndType(shapes, m->branches[0], x)) return false;
    m->branches.push_back(x);
  }
  return true;
}

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, const Node& sum,
             Match* m) {
  // From opset 7 on Add and Mul broadcast as numpy does, which the sums below rely on.
  if (!isOnnxOpType(sum, "ReduceSum") || sum.opset < 7 || sum.outputs.size() != 1 ||
      !sum.hasInput(0) || sum.attrInt("keepdims", 1) != 0)
    return false;
  const SymbolicShape* s = shapeOf(shapes, sum.inputs[0]);
  if (!s || s->size() < 2) return false;
  const int64_t rank = static_cast<int64_t>(s->size());
  m->axis = singleAxis(sum, index, 13, rank);
  if (m->axis < 0) return false;
  if (stackedBranches(g, index, shapes, sum.inputs[0], m->axis, rank, m)) return true;
  // The weighted sum: a Mul, read by this ReduceSum alone, of the stack and W.
  const int mul = index.producer(sum.inputs[0]);
  if (mul < 0 || !isOnnxOp(g.nodes[mul], "Mul", 2) || index.soleReader(g.nodes[mul].outputs[0]) < 0)
    return false;
  const Node& product = g.nodes[mul];
  for (int side = 0; side < 2; ++side) {
    if (!stackedBranches(g, index, shapes, product.inputs[side], m->axis, rank, m)) continue;
    m->weights = product.inputs[1 - side];
    m->weightsFirst = side == 1;
    const SymbolicShape* w = shapeOf(shapes, m->weights);
    if (!w || static_cast<int64_t>(w->size()) != rank || !(*w)[m->axis].isConst() ||
        !isStorageFloat(typeOf(shapes, m->weights)))
      return false;
    const int64_t n = (*w)[m->axis].constValue();
    m->oneWeight = n == 1;
    m->mul = mul;
    return n == 1 || n == static_cast<int64_t>(m->branches.size());
  }
  return false;
}

class SumStackedBranches final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "ReduceSum([Mul(] Concat(Unsqueeze(X_i, a)) | Reshape(X) [, W)], a) -> X_0 [* W_0] + "
            ".. + X_k [* W_k] (X_i: the branches, or X's slices along a)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    // New values are only ever read by the nodes made with them: one inference serves all.
    const Shapes shapes = inferredShapesOrNone(network);
    Graph& g = network.graph;
    auto index = std::make_unique<GraphIndex>(g);
    // The slices made so far, (X, i) -> the Slice's output: the plain and the weighted sum
    // of one split read the same ones (made before the first of them, so before both).
    std::map<std::pair<std::string, size_t>, std::string> slices;
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      Match m;
      if (!matchAt(g, *index, shapes, g.nodes[at], &m)) continue;
      const Node sum = g.nodes[at];
      const std::string base = sum.displayName();
      std::vector<int> replaced = {static_cast<int>(at)};
      if (m.mul >= 0) replaced.insert(replaced.begin(), m.mul);
      const std::vector<std::string> sources = sourceNodesOf(g, replaced);
      std::vector<Node> made;
      std::vector<std::string> terms;
      for (size_t i = 0; i < m.branches.size(); ++i) {
        if (!m.sliced.empty() && slices.count({m.sliced, i})) {
          m.branches[i] = slices[{m.sliced, i}];
        } else if (!m.sliced.empty()) {  // X's slice [i d, (i + 1) d) along the axis
          const std::string tag = std::to_string(i);
          Node slice =
              madeNode(g, sum, base + " (slice " + tag + ")", "Slice", {m.sliced}, sources, kName);
          const std::vector<int64_t> starts = {static_cast<int64_t>(i) * m.sliceWidth},
                                     ends = {static_cast<int64_t>(i + 1) * m.sliceWidth},
                                     axes = {m.axis};
          if (sum.opset < 10) {
            slice.attributes["starts"] = intsAttribute(starts);
            slice.attributes["ends"] = intsAttribute(ends);
            slice.attributes["axes"] = intsAttribute(axes);
          } else {
            for (const auto& [part, values] :
                 {std::pair<const char*, const std::vector<int64_t>*>{"starts", &starts},
                  {"ends", &ends},
                  {"axes", &axes}}) {
              const std::string name = freshName(g, base + "_slice" + tag + "_" + part);
              g.initializers[name] = Tensor::int64Vector(*values);
              slice.inputs.push_back(name);
            }
          }
          m.branches[i] = slices[{m.sliced, i}] = slice.outputs[0];
          made.push_back(slice);
        }
        if (m.weights.empty()) {
          terms.push_back(m.branches[i]);
          continue;
        }
        const std::string tag = std::to_string(i);
        const std::string idx = freshName(g, base + "_branch" + tag);
        g.initializers[idx] = Tensor::scalarInt64(m.oneWeight ? 0 : static_cast<int64_t>(i));
        Node gather = madeNode(g, sum, base + " (weight " + tag + ")", "Gather", {m.weights, idx},
                               sources, kName);
        gather.attributes["axis"] = intAttribute(m.axis);
        made.push_back(gather);
        std::vector<std::string> operands = {m.branches[i], gather.outputs[0]};
        if (m.weightsFirst) std::swap(operands[0], operands[1]);
        Node mul =
            madeNode(g, sum, base + " (branch " + tag + ")", "Mul", operands, sources, kName);
        terms.push_back(mul.outputs[0]);
        made.push_back(mul);
      }
      std::string total = terms[0];
      for (size_t i = 1; i < terms.size(); ++i) {
        Node add = madeNode(g, sum, base + " (sum " + std::to_string(i) + ")", "Add",
                            {total, terms[i]}, sources, kName);
        if (i + 1 == terms.size()) add.outputs[0] = sum.outputs[0];
        total = add.outputs[0];
        made.push_back(add);
      }
      applied->push_back({kName, sources, made.back().name});
      // The ReduceSum goes, and the weighted sum's Mul (read by it alone) with it; the Concat
      // and Unsqueezes stay for their other readers or go with remove_dead_nodes.
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(at));
      size_t place = at;
      if (m.mul >= 0) {
        g.nodes.erase(g.nodes.begin() + m.mul);  // written before the ReduceSum read it
        --place;
      }
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(place), made.begin(),
                     made.end());
      at = place + made.size() - 1;
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeSumStackedBranches() {
  return std::make_unique<SumStackedBranches>();
}

}  // namespace kiln::passes
