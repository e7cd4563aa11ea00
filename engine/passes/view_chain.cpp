// Chains of view ops (contract: view_chain.h).
#include "passes/view_chain.h"

#include <algorithm>

#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

// The steps of index tensor `idx` (row-major over `shape`) when its elements step
// arithmetically along each dim (idx = idx[0] + sum_k i_k steps[k]); false otherwise.
bool progressionSteps(const std::vector<int64_t>& idx, const Shape& shape,
                      std::vector<int64_t>* steps) {
  steps->assign(shape.size(), 0);
  int64_t inner = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] > 1) (*steps)[k] = idx[static_cast<size_t>(inner)] - idx[0];
    inner *= shape[k];
  }
  std::vector<int64_t> at(shape.size(), 0);
  for (size_t e = 0; e < idx.size(); ++e) {
    int64_t expected = idx[0];
    for (size_t k = 0; k < shape.size(); ++k) expected += at[k] * (*steps)[k];
    if (idx[e] != expected) return false;
    for (size_t k = shape.size(); k-- > 0;)  // the next position, row-major
      if (++at[k] < shape[k])
        break;
      else
        at[k] = 0;
  }
  return true;
}

// Gather of one constant index (a select, or a narrow to 1 for a [1] index) or of constant
// indices in arithmetic progression (gatherProgression: an unfold's windows).
bool applyGather(const Node& n, const GraphIndex& index, const Shape& in, const Shape& out,
                 StridedView* view) {
  // An unfold's windows are small; a huge index constant (a hostile model's) is not read.
  constexpr int64_t kMaxWindowIndices = int64_t{1} << 20;
  std::vector<int64_t> idx;
  const Tensor* t = n.inputs.size() == 2 ? index.constant(n.inputs[1]) : nullptr;
  if (!t || t->numel() < 1 || t->numel() > kMaxWindowIndices || !rewrite::constantInts(t, &idx))
    return false;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = n.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  for (int64_t& i : idx)
    if (i < 0) i += in[axis];
  if (idx.size() == 1) {
    const bool ok = t->shape().empty() ? view->select(axis, idx[0]) : view->narrow(axis, idx[0], 1);
    return ok && view->shape() == out;
  }
  std::vector<int64_t> steps;
  return progressionSteps(idx, t->shape(), &steps) &&
         view->gatherProgression(axis, idx[0], t->shape(), steps) && view->shape() == out;
}

// Output `output` of a Split starts where the outputs before it end.
bool applySplit(const Node& n, const InferredShapes& shapes, int output, const Shape& in,
                const Shape& out, StridedView* view) {
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = n.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  int64_t start = 0;
  for (int i = 0; i < output; ++i) {
    Shape before;
    if (!rewrite::staticShape(shapes, n.outputs[i], &before) || before.size() != in.size())
      return false;
    start += before[axis];
  }
  return view->narrow(axis, start, out[axis]) && view->shape() == out;
}

bool applySlice(const Node& n, const GraphIndex& index, const Shape& in, const Shape& out,
                StridedView* view) {
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
  const int64_t rank = static_cast<int64_t>(in.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank) return false;
    const int64_t start =
        std::clamp(starts[i] < 0 ? starts[i] + in[axis] : starts[i], int64_t{0}, in[axis]);
    if (!view->narrow(axis, start, out[axis])) return false;
  }
  return view->shape() == out;
}

}  // namespace

bool isViewOp(const Node& n) {
  static const std::set<std::string> kOps = {"Reshape",   "Transpose", "Squeeze",
                                             "Unsqueeze", "Flatten",   "Identity",
                                             "Gather",    "Split",     "Slice"};
  return isDefaultDomain(n) && kOps.count(n.opType) && !n.inputs.empty() && !n.inputs[0].empty();
}

bool viewOpCopies(const Node& n) {
  return n.opType == "Transpose" || n.opType == "Gather" || n.opType == "Split" ||
         n.opType == "Slice";
}

int outputIndex(const Node& n, const std::string& value) {
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] == value) return static_cast<int>(i);
  return -1;
}

std::vector<ViewStep> viewChainBack(const Graph& g, const GraphIndex& index,
                                    const std::string& value, int maxSteps) {
  std::vector<ViewStep> chain;
  std::string at = value;
  while (static_cast<int>(chain.size()) < maxSteps) {
    const int p = index.producer(at);
    if (p < 0 || !isViewOp(g.nodes[p])) break;
    chain.push_back({p, outputIndex(g.nodes[p], at)});
    at = g.nodes[p].inputs[0];
  }
  return chain;
}

bool applyViewStep(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                   const ViewStep& step, StridedView* view) {
  const Node& n = g.nodes[step.node];
  Shape in, out;
  if (!rewrite::staticShape(shapes, n.inputs[0], &in) ||
      !rewrite::staticShape(shapes, n.outputs[step.output], &out) || view->shape() != in)
    return false;
  if (n.opType == "Transpose") {
    std::vector<int64_t> perm = n.attrInts("perm");
    if (perm.empty())
      for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) perm.push_back(i);
    return view->transpose(perm) && view->shape() == out;
  }
  if (n.opType == "Gather") return applyGather(n, index, in, out, view);
  if (n.opType == "Split") return applySplit(n, shapes, step.output, in, out, view);
  if (n.opType == "Slice") return applySlice(n, index, in, out, view);
  return view->reshape(out);  // Reshape, Squeeze, Unsqueeze, Flatten, Identity
}

bool composeViewChain(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                      const std::string& base, const std::vector<ViewStep>& steps,
                      StridedView* view) {
  Shape baseShape;
  if (!rewrite::staticShape(shapes, base, &baseShape) || !StridedView::contiguous(baseShape, view))
    return false;
  for (const ViewStep& step : steps)
    if (!applyViewStep(g, index, shapes, step, view)) return false;
  return true;
}

std::vector<int> nodesTakenOver(const Graph& g, const GraphIndex& index, std::set<int> candidates,
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

}  // namespace kiln::passes
