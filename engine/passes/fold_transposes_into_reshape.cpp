// fold_transposes_into_reshape: a Transpose, a reshape and a Transpose that together move
// no element are one Reshape:
//   Transpose(Reshape(Transpose(x, p1), s), p2) = Reshape(x, shape of the result)
// when every element keeps its place in memory. Vision transformers with convolutions
// (SegFormer's Mix-FFN and spatial-reduction attention, PVT, MobileViT) turn tokens into
// an image with `x.transpose(1, 2).reshape(B, C, H, W)` before a convolution and back with
// `flatten(2).transpose(1, 2)`; channels_last_layout then reformats that NCHW image to NHWC,
// which is the tokens' own layout: [B, N, C] -> [B, C, N] -> [B, C, H, W] -> [B, H, W, C]
// moves nothing. The check: split both sides of the reshape into their common factors (a
// dim of one side is a product of consecutive dims of the other), read x's factors in
// memory order through p1 and the result's through p2; the orders must be the same
// (factors of size 1 aside). A symbolic dim must meet an equal dim on the other side, and
// at most one dim of the result may be symbolic (it becomes the Reshape's -1). The middle
// node is a Reshape, Flatten, Squeeze or Unsqueeze; each intermediate is read by the next
// node alone. Runs after channels_last_layout and merge_layout_transposes, which make and
// join the reformats it meets.
#include <algorithm>
#include <optional>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_transposes_into_reshape";
using Perm = std::vector<int64_t>;
using Factors = std::vector<std::vector<int>>;  // per axis, its factors' ids in order

bool isReshapeLike(const Node& node) {
  return isDefaultDomain(node) && !node.inputs.empty() && node.outputs.size() == 1 &&
         (node.opType == "Reshape" || node.opType == "Flatten" || node.opType == "Squeeze" ||
          node.opType == "Unsqueeze");
}

bool transposePerm(const Node& node, size_t rank, Perm* perm) {
  if (!isOnnxOp(node, "Transpose", 1) || node.outputs.size() != 1) return false;
  if (node.hasAttr("perm")) {
    *perm = node.attrInts("perm");
  } else {
    perm->clear();
    for (int64_t i = static_cast<int64_t>(rank) - 1; i >= 0; --i) perm->push_back(i);
  }
  return perm->size() == rank && isPermutation(*perm);
}

bool isOne(const DimExpr& d) {
  return d.isConst() && d.constValue() == 1;
}

// The common factors of two shapes of one tensor: a[i] and b[j] as lists of factor ids.
bool commonFactors(const SymbolicShape& a, const SymbolicShape& b, Factors* fa, Factors* fb) {
  fa->assign(a.size(), {});
  fb->assign(b.size(), {});
  size_t i = 0, j = 0;
  int64_t restA = 0, restB = 0;  // what is left of a[i] / b[j]; 0: the whole dim
  int next = 0;
  for (;;) {
    while (i < a.size() && restA == 0 && isOne(a[i])) ++i;
    while (j < b.size() && restB == 0 && isOne(b[j])) ++j;
    if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
    if (!a[i].isConst() || !b[j].isConst()) {
      if (restA != 0 || restB != 0 || !(a[i] == b[j])) return false;
      (*fa)[i++].push_back(next);
      (*fb)[j++].push_back(next++);
      continue;
    }
    const int64_t x = restA ? restA : a[i].constValue();
    const int64_t y = restB ? restB : b[j].constValue();
    if (x <= 0 || y <= 0) return false;
    (*fa)[i].push_back(next);
    (*fb)[j].push_back(next++);
    if (x == y) {
      ++i, ++j;
      restA = restB = 0;
    } else if (x % y == 0) {
      ++j;
      restB = 0;
      restA = x / y;
    } else if (y % x == 0) {
      ++i;
      restA = 0;
      restB = y / x;
    } else {
      return false;
    }
  }
}

// The factor ids of a tensor read in memory order: axis `order[k]`'s factors for k = 0...
std::vector<int> memoryOrder(const Factors& factors, const Perm& order) {
  std::vector<int> out;
  for (int64_t axis : order) out.insert(out.end(), factors[axis].begin(), factors[axis].end());
  return out;
}

struct Match {
  int first = -1, middle = -1, last = -1;
  std::vector<int64_t> target;  // the Reshape's shape, -1 for the one symbolic dim
};

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, Match* m) {
  const Node& t1 = g.nodes[at];
  const SymbolicShape* s0 = t1.inputs.empty() ? nullptr : shapeOf(shapes, t1.inputs[0]);
  Perm p1, p2;
  if (!s0 || !transposePerm(t1, s0->size(), &p1)) return false;
  const int middle = index.soleReader(t1.outputs[0]);
  if (middle < 0 || !isReshapeLike(g.nodes[middle]) || g.nodes[middle].inputs[0] != t1.outputs[0])
    return false;
  const int last = index.soleReader(g.nodes[middle].outputs[0]);
  if (last < 0) return false;
  const SymbolicShape* s1 = shapeOf(shapes, t1.outputs[0]);
  const SymbolicShape* s2 = shapeOf(shapes, g.nodes[middle].outputs[0]);
  const SymbolicShape* s3 =
      shapeOf(shapes, g.nodes[last].outputs.empty() ? std::string() : g.nodes[last].outputs[0]);
  if (!s1 || !s2 || !s3 || !transposePerm(g.nodes[last], s2->size(), &p2)) return false;
  if (typeOf(shapes, t1.inputs[0]) != typeOf(shapes, g.nodes[last].outputs[0])) return false;
  Factors f1, f2;
  if (!commonFactors(*s1, *s2, &f1, &f2)) return false;
  // x's axis a is t1's output axis i with p1[i] = a: read x's axes in order through p1.
  Perm inverse1(p1.size());
  for (size_t i = 0; i < p1.size(); ++i) inverse1[p1[i]] = static_cast<int64_t>(i);
  if (memoryOrder(f1, inverse1) != memoryOrder(f2, p2)) return false;
  int symbolic = 0;
  m->target.clear();
  for (const DimExpr& d : *s3) {
    symbolic += !d.isConst();
    m->target.push_back(d.isConst() ? d.constValue() : -1);
  }
  if (symbolic > 1) return false;
  m->first = at;
  m->middle = middle;
  m->last = last;
  return true;
}

// The one Reshape replacing the chain anchored at `at` (its first Transpose), or nothing.
std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, const Shapes& shapes, int at) {
  Match m;
  if (!matchAt(g, index, shapes, at, &m)) return std::nullopt;
  const Node& t1 = g.nodes[m.first];
  const Node& t2 = g.nodes[m.last];
  Fusion fusion;
  fusion.nodes = {m.first, m.middle, m.last};
  std::sort(fusion.nodes.begin(), fusion.nodes.end());
  Node& reshape = fusion.fused;
  reshape.name =
      t1.displayName() + " + " + g.nodes[m.middle].displayName() + " + " + t2.displayName();
  reshape.opType = "Reshape";
  reshape.opset = std::max(t2.opset, 5);
  reshape.inputs = {t1.inputs[0], addInt64Initializer(g, t2.outputs[0] + "_shape", m.target)};
  reshape.outputs = t2.outputs;
  return fusion;
}

}  // namespace

std::unique_ptr<Pass> makeFoldTransposesIntoReshape() {
  return makeFusionPass({kName,
                         "Transpose -> Reshape/Flatten/Squeeze/Unsqueeze -> Transpose that moves "
                         "no element -> one Reshape",
                         1},
                        ShapedFusionAt(foldAt));
}

}  // namespace kiln::passes
