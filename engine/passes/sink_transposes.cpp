// sink_transposes: an elementwise node between a permute and its inverse computes in the
// permuted layout instead, and both permutes go.
//   y = E(Transpose(x_1, p), ..., Transpose(x_k, p), c_1, ...)   read by Transpose(y, q)
//   -> y_q = E(x_1, ..., x_k, Transpose(c_1, q), ...)          with q = p^-1
// E is elementwise (PointwiseChain, Add, Sub, Mul, Div): permuting every input permutes
// the output, E(P a, P b) = P E(a, b), and Transpose(y, q) = Transpose(E(P_p x), q) =
// E(x) because q undoes p. Constants c_i (broadcasting, rank <= y's) are given y's rank
// with leading 1s and permuted by q at build time. Readers of y other than the
// Transpose(q) nodes keep y through one Transpose(y_q, p); when that is what the next such
// node reads, the rule applies again there and that Transpose goes too. This is the
// residual stream of ConvNeXt on a channels-last engine: each block's layer scale and
// residual Add sat between the model's permute back to NCHW and the layout pass's
// reformat to NHWC for the next depthwise convolution (2 of the 43 Transposes per block).
// Conditions: every non-constant input is a Transpose with perm p of the output's shape
// (no broadcasting between data inputs), static shapes, the perms of one rank.
// Runs after channels_last_layout (which makes the reformats) and before
// merge_layout_transposes; also on CPU builds, where it saves the same copies.
#include <algorithm>
#include <set>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using Perm = std::vector<int64_t>;
constexpr const char* kName = "sink_transposes";

bool isElementwise(const Node& n) {
  if (n.opType == "PointwiseChain" && n.domain == kKilnDomain) return true;
  static const std::set<std::string> kOps = {"Add", "Sub", "Mul", "Div"};
  return isDefaultDomain(n) && kOps.count(n.opType) && n.inputs.size() == 2;
}

Perm inverse(const Perm& p) {
  Perm q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[p[i]] = static_cast<int64_t>(i);
  return q;
}

struct Match {
  int node = -1;
  std::vector<int> readers;  // the Transpose(q) nodes reading y
  Perm p, q;
  size_t rank = 0;
  std::vector<std::string> inputs;                          // E's new inputs ("" = constant)
  std::vector<std::pair<size_t, const Tensor*>> constants;  // (input slot, constant)
  bool keepOriginal = false;  // y has other readers or is a graph output
};

bool matchAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes, int at,
             Match* m) {
  const Node& e = g.nodes[at];
  if (!isElementwise(e) || e.outputs.size() != 1 || e.inputs.empty()) return false;
  const std::string& y = e.outputs[0];
  Shape yShape;
  if (!rewrite::staticShape(shapes, y, &yShape) || yShape.size() < 2) return false;
  for (int r : index.readers(y)) {
    if (r < 0) {
      m->keepOriginal = true;
      continue;
    }
    const Node& t = g.nodes[r];
    const Perm perm = t.attrInts("perm");
    const std::vector<int>& tReaders =
        isOnnxOp(t, "Transpose", 1) ? index.readers(t.outputs[0]) : std::vector<int>{};
    const bool namesGraphOutput = std::find(tReaders.begin(), tReaders.end(), -1) != tReaders.end();
    if (!isOnnxOp(t, "Transpose", 1) || perm.size() != yShape.size() ||
        !rewrite::isPermutation(perm) || (!m->q.empty() && perm != m->q) ||
        std::count(m->readers.begin(), m->readers.end(), r) || namesGraphOutput) {
      m->keepOriginal = true;
      continue;
    }
    m->q = perm;
    m->readers.push_back(r);
  }
  if (m->readers.empty()) return false;
  m->p = inverse(m->q);
  m->rank = yShape.size();
  bool anyData = false;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const std::string& in = e.inputs[i];
    if (const Tensor* c = index.constant(in)) {
      if (c->shape().size() > m->rank || dataTypeSize(c->type()) == 0) return false;
      m->inputs.push_back("");
      m->constants.push_back({i, c});
      continue;
    }
    const int t = index.producer(in);
    Shape inShape;
    if (t < 0 || !isOnnxOp(g.nodes[t], "Transpose", 1) || g.nodes[t].attrInts("perm") != m->p ||
        !rewrite::staticShape(shapes, in, &inShape) || inShape != yShape)
      return false;
    m->inputs.push_back(g.nodes[t].inputs[0]);
    anyData = true;
  }
  m->node = at;
  return anyData;
}

class SinkTransposes final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Transpose(E(Transpose(x, p), c), p^-1) -> E(x, Transpose(c, p^-1)) for an "
            "elementwise E (PointwiseChain, Add, Sub, Mul, Div); both transposes go",
            2};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    for (bool changed = true; changed;) {
      changed = false;
      const InferredShapes shapes = inferredShapesOrNone(network);
      const GraphIndex index(g);
      for (size_t at = 0; at < g.nodes.size(); ++at) {
        Match m;
        if (!matchAt(g, index, shapes, static_cast<int>(at), &m)) continue;
        rewrite(g, m, applied);
        changed = true;
        break;  // indices moved: look again with a fresh index
      }
    }
    rewrite::removeUnreadTransposes(g);
    return Status::ok();
  }

 private:
  static void rewrite(Graph& g, const Match& m, std::vector<PassApplication>* applied) {
    Node e = g.nodes[m.node];
    const std::string y = e.outputs[0];
    const std::string yq = g.nodes[m.readers[0]].outputs[0];
    PassApplication record{kName, {e.displayName()}, ""};
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (!m.inputs[i].empty()) e.inputs[i] = m.inputs[i];
    for (const auto& [slot, c] : m.constants) {
      const std::string name = rewrite::freshName(g, e.inputs[slot] + "_permuted");
      g.initializers[name] = rewrite::permutedConstant(*c, m.rank, m.q);
      e.inputs[slot] = name;
    }
    e.outputs = {yq};
    // Readers of the other Transpose(q) nodes read yq; those nodes go.
    std::set<int> gone(m.readers.begin(), m.readers.end());
    for (int r : m.readers) {
      record.nodes.push_back(g.nodes[r].displayName());
      const std::string& out = g.nodes[r].outputs[0];
      if (out == yq) continue;
      for (Node& n : g.nodes)
        for (std::string& in : n.inputs)
          if (in == out) in = yq;
    }
    std::vector<Node> nodes;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (gone.count(static_cast<int>(i))) continue;
      if (static_cast<int>(i) != m.node) {
        nodes.push_back(std::move(g.nodes[i]));
        continue;
      }
      nodes.push_back(e);
      if (m.keepOriginal) {  // y for its other readers, back in the model's layout
        Node back;
        back.name = y + "_layout";
        back.opType = "Transpose";
        back.opset = e.opset > 0 && isDefaultDomain(e) ? e.opset : 13;
        back.inputs = {yq};
        back.outputs = {y};
        back.attributes["perm"] = rewrite::intsAttribute(m.p);
        nodes.push_back(std::move(back));
      }
    }
    g.nodes = std::move(nodes);
    record.layer = e.displayName();
    applied->push_back(std::move(record));
  }
};

}  // namespace

std::unique_ptr<Pass> makeSinkTransposes() {
  return std::make_unique<SinkTransposes>();
}

}  // namespace kiln::passes
