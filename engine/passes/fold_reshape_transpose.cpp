// fold_reshape_transpose: a Transpose written as Reshape, lower-rank Transpose, Reshape
// (the dynamo exporter's K^T in scaled_dot_product_attention: [B, H, S, D] -> [B*H, S, D]
// -> (0,2,1) -> [B, H, D, S]) is one Transpose of x:
//   Reshape(Transpose(Reshape(x, m), p), y) = Transpose(x, P)
// when the first Reshape only merges runs of adjacent axes of x (groups), the Transpose
// moves whole groups, and the second Reshape splits each group back into its axes in
// their order: then every element moves as the axes of x do under P (the groups' axes in
// the transposed group order). Axes of size 1 hold no data and may sit anywhere: they are
// set aside, and the output's 1s are filled with x's 1s (their count must agree).
// Conditions: static inferred shapes for x, m and y, rank(y) = rank(x); the first output
// read by the Transpose alone, the Transpose's by the second Reshape alone.
#include <algorithm>
#include <optional>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_reshape_transpose";
using Perm = std::vector<int64_t>;

// The axes of `shape` larger than 1, in order.
std::vector<int64_t> dataAxes(const Shape& shape) {
  std::vector<int64_t> axes;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

// For each data axis of `merged`, the run of data axes of `x` whose product it is; empty
// when `merged` is not such a merge of `x`.
std::vector<std::vector<int64_t>> groups(const Shape& x, const Shape& merged) {
  const std::vector<int64_t> xAxes = dataAxes(x), mAxes = dataAxes(merged);
  std::vector<std::vector<int64_t>> out;
  size_t i = 0;
  for (int64_t m : mAxes) {
    std::vector<int64_t> run;
    int64_t product = 1;
    while (i < xAxes.size() && product < merged[m]) {
      product *= x[xAxes[i]];
      run.push_back(xAxes[i++]);
    }
    if (product != merged[m]) return {};
    out.push_back(std::move(run));
  }
  return i == xAxes.size() ? out : std::vector<std::vector<int64_t>>{};
}

// P, or nothing when the chain is not a transpose of x (see the file comment).
std::optional<Perm> composite(const Shape& x, const Shape& merged, const Perm& p, const Shape& y) {
  if (y.size() != x.size() || p.size() != merged.size()) return std::nullopt;
  const std::vector<std::vector<int64_t>> runs = groups(x, merged);
  if (runs.empty() && !dataAxes(merged).empty()) return std::nullopt;
  // The data axes of merged in the Transpose's output order, as runs of x's axes.
  std::vector<int64_t> runOfMergedAxis(merged.size(), -1);
  const std::vector<int64_t> mAxes = dataAxes(merged);
  for (size_t r = 0; r < mAxes.size(); ++r) runOfMergedAxis[mAxes[r]] = static_cast<int64_t>(r);
  std::vector<int64_t> order;  // x's data axes as the output holds them
  for (int64_t axis : p) {
    if (axis < 0 || axis >= static_cast<int64_t>(merged.size())) return std::nullopt;
    const int64_t r = runOfMergedAxis[axis];
    if (r >= 0) order.insert(order.end(), runs[r].begin(), runs[r].end());
  }
  const std::vector<int64_t> yAxes = dataAxes(y);
  if (yAxes.size() != order.size()) return std::nullopt;
  for (size_t i = 0; i < order.size(); ++i)
    if (y[yAxes[i]] != x[order[i]]) return std::nullopt;
  Perm perm(y.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) perm[yAxes[i]] = order[i];
  std::vector<int64_t> ones;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] == 1) ones.push_back(static_cast<int64_t>(i));
  size_t next = 0;
  for (int64_t& axis : perm) {
    if (axis >= 0) continue;
    if (next >= ones.size()) return std::nullopt;
    axis = ones[next++];
  }
  return next == ones.size() ? std::optional<Perm>(perm) : std::nullopt;
}

std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  const Node& t = g.nodes[at];
  if (!isOnnxOp(t, "Transpose", 1) || !t.hasAttr("perm")) return std::nullopt;
  const int r1 = index.producer(t.inputs[0]);
  const int r2 = index.soleReader(t.outputs[0]);
  if (r1 < 0 || r2 < 0 || index.soleReader(t.inputs[0]) != at ||
      !isOnnxOp(g.nodes[r1], "Reshape", 2) || !isOnnxOp(g.nodes[r2], "Reshape", 2) ||
      g.nodes[r2].inputs[0] != t.outputs[0])
    return std::nullopt;
  Shape x, merged, y;
  const std::string& input = g.nodes[r1].inputs[0];
  if (!rewrite::staticShape(shapes, input, &x) ||
      !rewrite::staticShape(shapes, t.inputs[0], &merged) ||
      !rewrite::staticShape(shapes, g.nodes[r2].outputs[0], &y))
    return std::nullopt;
  const std::optional<Perm> perm = composite(x, merged, t.attrInts("perm"), y);
  if (!perm) return std::nullopt;
  Node fused;
  for (const std::string& s : sourceNodesOf(g, {r1, at, r2}))
    fused.name += (fused.name.empty() ? "" : " + ") + s;
  fused.opType = "Transpose";
  fused.opset = t.opset;
  fused.inputs = {input};
  fused.outputs = {g.nodes[r2].outputs[0]};
  fused.attributes["perm"] = rewrite::intsAttribute(*perm);
  std::vector<int> nodes = {r1, at, r2};
  std::sort(nodes.begin(), nodes.end());
  return Fusion{nodes, std::move(fused)};
}

}  // namespace

std::unique_ptr<Pass> makeFoldReshapeTranspose() {
  return makeFusionPass(
      {kName, "Reshape(Transpose(Reshape(x, merge), p), split) -> Transpose(x, P)", 1}, foldAt);
}

}  // namespace kiln::passes
