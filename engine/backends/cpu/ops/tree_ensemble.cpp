// TreeEnsemble (ai.onnx.ml opset 5): the unified regressor/classifier tree format.
//
// Nodes are parallel arrays (nodes_*); a node compares X[row, featureid] with its split
// (modes LEQ, LT, GTE, GT, EQ, NEQ, MEMBER) and continues at truenodeids/falsenodeids,
// which index leaves instead when trueleafs/falseleafs is set. A leaf adds its weight to
// its target; the trees' contributions combine by aggregate_function, then
// post_transform applies to each row. MEMBER nodes take their sets from membership_values
// in node order, each set ended by a NaN. A NaN feature goes the true way where
// nodes_missing_value_tracks_true says so.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

enum class Mode : int64_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember };
enum class Aggregate : int64_t { kAverage = 0, kSum, kMin, kMax };
enum class PostTransform : int64_t { kNone = 0, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

struct TreeNode {
  Mode mode = Mode::kLeq;
  int64_t feature = 0;
  double split = 0;
  bool missingTracksTrue = false;
  int64_t next[2] = {0, 0};  // [false, true]
  bool nextIsLeaf[2] = {false, false};
  std::vector<double> members;  // sorted, for kMember
};

struct Ensemble {
  std::vector<TreeNode> nodes;
  std::vector<int64_t> roots;
  std::vector<double> leafWeights;
  std::vector<int64_t> leafTargets;
  int64_t targets = 0;
  Aggregate aggregate = Aggregate::kSum;
  PostTransform post = PostTransform::kNone;
};

std::vector<double> tensorAttrDoubles(const Node& node, const char* name) {
  std::vector<double> out;
  if (const Tensor* t = node.attrTensor(name)) {
    for (int64_t i = 0; i < t->numel(); ++i) out.push_back(t->valueAsDouble(i));
  }
  return out;
}

Status readNodes(const KernelContext& ctx, Ensemble* e) {
  const Node& node = ctx.node();
  const std::vector<double> splits = tensorAttrDoubles(node, "nodes_splits");
  const std::vector<double> modes = tensorAttrDoubles(node, "nodes_modes");
  const std::vector<int64_t> features = node.attrInts("nodes_featureids");
  const std::vector<int64_t> trueIds = node.attrInts("nodes_truenodeids");
  const std::vector<int64_t> falseIds = node.attrInts("nodes_falsenodeids");
  const std::vector<int64_t> trueLeafs = node.attrInts("nodes_trueleafs");
  const std::vector<int64_t> falseLeafs = node.attrInts("nodes_falseleafs");
  const std::vector<int64_t> missing = node.attrInts("nodes_missing_value_tracks_true");
  const size_t n = features.size();
  if (splits.size() != n || modes.size() != n || trueIds.size() != n || falseIds.size() != n ||
      trueLeafs.size() != n || falseLeafs.size() != n ||
      (!missing.empty() && missing.size() != n)) {
    return ctx.error("the nodes_* attributes must all have one entry per node");
  }
  const std::vector<double> members = tensorAttrDoubles(node, "membership_values");
  size_t memberPos = 0;
  e->nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TreeNode& t = e->nodes[i];
    // Negated so a NaN mode is refused too: its cast to int64 was undefined.
    if (!(modes[i] >= 0 && modes[i] <= 6))
      return ctx.error("nodes_modes[" + std::to_string(i) + "] holds an unknown mode");
    t.mode = static_cast<Mode>(static_cast<int64_t>(modes[i]));
    t.feature = features[i];
    t.split = splits[i];
    t.missingTracksTrue = !missing.empty() && missing[i] != 0;
    t.next[0] = falseIds[i];
    t.next[1] = trueIds[i];
    t.nextIsLeaf[0] = falseLeafs[i] != 0;
    t.nextIsLeaf[1] = trueLeafs[i] != 0;
    if (t.mode == Mode::kMember) {
      if (memberPos >= members.size()) return ctx.error("membership_values has too few sets");
      while (memberPos < members.size() && !std::isnan(members[memberPos]))
        t.members.push_back(members[memberPos++]);
      ++memberPos;  // the NaN
      std::sort(t.members.begin(), t.members.end());
    }
  }
  return Status::ok();
}

Status readEnsemble(const KernelContext& ctx, int64_t features, Ensemble* e) {
  const Node& node = ctx.node();
  KILN_RETURN_IF_ERROR(readNodes(ctx, e));
  e->roots = node.attrInts("tree_roots");
  e->leafWeights = tensorAttrDoubles(node, "leaf_weights");
  e->leafTargets = node.attrInts("leaf_targetids");
  e->targets = node.attrInt("n_targets", 0);
  e->aggregate = static_cast<Aggregate>(node.attrInt("aggregate_function", 1));
  e->post = static_cast<PostTransform>(node.attrInt("post_transform", 0));
  if (static_cast<int64_t>(e->aggregate) < 0 || static_cast<int64_t>(e->aggregate) > 3) {
    return ctx.error("unknown aggregate_function");
  }
  if (static_cast<int64_t>(e->post) < 0 || static_cast<int64_t>(e->post) > 4)
    return ctx.error("unknown post_transform");
  if (e->targets <= 0) return ctx.error("n_targets must be positive");
  if (e->leafWeights.size() != e->leafTargets.size())
    return ctx.error("leaf_weights and leaf_targetids differ in length");
  for (int64_t t : e->leafTargets) {
    if (t < 0 || t >= e->targets)
      return ctx.error("leaf_targetids holds a target outside n_targets");
  }
  const int64_t nodeCount = static_cast<int64_t>(e->nodes.size());
  const int64_t leafCount = static_cast<int64_t>(e->leafWeights.size());
  for (const TreeNode& t : e->nodes) {
    if (t.feature < 0 || t.feature >= features)
      return ctx.error("nodes_featureids exceeds X's feature count");
    for (int b = 0; b < 2; ++b) {
      if (t.next[b] < 0 || t.next[b] >= (t.nextIsLeaf[b] ? leafCount : nodeCount)) {
        return ctx.error("a node branches to a node or leaf index out of range");
      }
    }
  }
  for (int64_t r : e->roots) {
    if (r < 0 || r >= nodeCount) return ctx.error("tree_roots holds a node index out of range");
  }
  return Status::ok();
}

bool goesTrue(const TreeNode& t, double x) {
  if (std::isnan(x) && t.missingTracksTrue) return true;
  switch (t.mode) {
    case Mode::kLeq:
      return x <= t.split;
    case Mode::kLt:
      return x < t.split;
    case Mode::kGte:
      return x >= t.split;
    case Mode::kGt:
      return x > t.split;
    case Mode::kEq:
      return x == t.split;
    case Mode::kNeq:
      return x != t.split;
    case Mode::kMember:
      return std::binary_search(t.members.begin(), t.members.end(), x);
  }
  return false;
}

// The leaf a row reaches from `root`, or -1 when the walk loops.
int64_t findLeaf(const Ensemble& e, int64_t root, const double* row) {
  int64_t index = root;
  for (size_t steps = 0; steps <= e.nodes.size(); ++steps) {
    const TreeNode& t = e.nodes[index];
    const int b = goesTrue(t, row[t.feature]) ? 1 : 0;
    if (t.nextIsLeaf[b]) return t.next[b];
    index = t.next[b];
  }
  return -1;
}

// erf^-1(y): Winitzki's closed form, then Newton steps on erf to full precision.
double erfInverse(double y) {
  if (y <= -1) return -INFINITY;
  if (y >= 1) return INFINITY;
  constexpr double kA = 0.147;
  const double ln = std::log((1 - y) * (1 + y));
  const double t = 2 / (M_PI * kA) + ln / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - ln / kA) - t), y);
  for (int k = 0; k < 3; ++k) x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

void postTransform(PostTransform post, double* scores, int64_t n) {
  switch (post) {
    case PostTransform::kNone:
      return;
    case PostTransform::kLogistic:
      for (int64_t i = 0; i < n; ++i) scores[i] = 1.0 / (1.0 + std::exp(-scores[i]));
      return;
    case PostTransform::kSoftmax:
    case PostTransform::kSoftmaxZero: {
      // SOFTMAX_ZERO leaves zero scores at zero and normalizes over the rest.
      const bool skipZero = post == PostTransform::kSoftmaxZero;
      double maxValue = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i) {
        if (!skipZero || scores[i] != 0) maxValue = std::max(maxValue, scores[i]);
      }
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        scores[i] = skipZero && scores[i] == 0 ? 0 : std::exp(scores[i] - maxValue);
        sum += scores[i];
      }
      for (int64_t i = 0; i < n; ++i) scores[i] = sum > 0 ? scores[i] / sum : 0;
      return;
    }
    case PostTransform::kProbit:
      for (int64_t i = 0; i < n; ++i) scores[i] = std::sqrt(2.0) * erfInverse(2 * scores[i] - 1);
      return;
  }
}

Status treeEnsembleKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kFloat32 && x.type() != DataType::kFloat64 &&
      x.type() != DataType::kFloat16) {
    return ctx.unsupported(std::string("input X of type ") + dataTypeName(x.type()));
  }
  if (x.rank() != 2) return ctx.error("input X must be [N, F], got " + shapeToString(x.shape()));
  Ensemble e;
  KILN_RETURN_IF_ERROR(readEnsemble(ctx, x.dim(1), &e));
  const int64_t rows = x.dim(0), features = x.dim(1);
  // Checked before the score buffer is sized by it: n_targets 2^62 made that vector throw
  // (or allocate terabytes) and overflowed r * n_targets.
  KILN_RETURN_IF_ERROR(checkTensorSize(x.type(), {rows, e.targets},
                                       ctx.node().describe() + " output Y (n_targets)"));
  std::vector<double> row(static_cast<size_t>(features));
  std::vector<double> scores(static_cast<size_t>(e.targets));
  const double init = e.aggregate == Aggregate::kMin   ? std::numeric_limits<double>::max()
                      : e.aggregate == Aggregate::kMax ? std::numeric_limits<double>::lowest()
                                                       : 0.0;
  Tensor& y = ctx.allocateOutput(0, x.type(), {rows, e.targets});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t f = 0; f < features; ++f) row[f] = x.valueAsDouble(r * features + f);
    std::fill(scores.begin(), scores.end(), init);
    for (int64_t root : e.roots) {
      const int64_t leaf = findLeaf(e, root, row.data());
      if (leaf < 0)
        return ctx.error("tree rooted at node " + std::to_string(root) + " has a cycle");
      double& s = scores[e.leafTargets[leaf]];
      const double w = e.leafWeights[leaf];
      if (e.aggregate == Aggregate::kMin)
        s = std::min(s, w);
      else if (e.aggregate == Aggregate::kMax)
        s = std::max(s, w);
      else
        s += e.aggregate == Aggregate::kAverage ? w / static_cast<double>(e.roots.size()) : w;
    }
    postTransform(e.post, scores.data(), e.targets);
    Status st = dispatchFloatTypes(x.type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t t = 0; t < e.targets; ++t) {
        y.data<T>()[r * e.targets + t] = static_cast<T>(static_cast<ComputeType<T>>(scores[t]));
      }
      return Status::ok();
    });
    KILN_RETURN_IF_ERROR(st);
  }
  return Status::ok();
}

}  // namespace

void registerTreeEnsembleKernels(KernelRegistry& registry) {
  registry.add("TreeEnsemble", 5, 1000, &treeEnsembleKernel, "ai.onnx.ml");
}

}  // namespace kiln::cpu
