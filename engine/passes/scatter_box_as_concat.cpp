// scatter_box_as_concat: a ScatterND whose indices enumerate a box of its data in order (the
// TorchScript export of a slice assignment, `x[:, :, a:, b:] = y`) writes the box and keeps the
// rest:
//   ScatterND(D, I, U) with I[p, i] = s_i + p_i (p in the box [n_0, .., n_{k-1}])
//     = U                                                when s = 0 and n = D's first k dims;
//     = Concat(D[.., :s_a, ..], inner, D[.., s_a + n_a:, ..]; axis a) otherwise, for a the
//       first axis where the box is not the whole of D, inner the same rewrite on the other
//       axes of Slice(D, a, s_a, s_a + n_a) (U itself when no other axis is left).
// The export builds I at run time from meshgrids (Concat(Unsqueeze(Expand(Range-like
// constant, box), -1)) per axis): at MViTv2-T's batch 128 its relative-position update moved
// 5 GB of int64 indices a layer (ScatterND 11.6 ms, Expand 10.8 ms, Concat 10.7 ms of 53.9 ms);
// the rewrite leaves those to remove_dead_nodes. I is recognized in either form: a constant
// (a small fixed shape folds it), or that Concat over k meshgrid axes, each a constant or an
// Expand of a constant to the box, whose values step by 1 along their own axis from s_i >= 0.
// Conditions: reduction none; D's shape known and the box inside it; I's last dim k <= D's
// rank with I's other dims the box (rank k); U the box's shape then D's dims past k.
#include <algorithm>
#include <functional>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "scatter_box_as_concat";

// `c`, broadcast to `box` (right-aligned), holds start + p_axis at every position p; sets
// *start. Every element of c is read once, so a full-box constant costs its size.
bool meshgridAxis(const Tensor& c, const Shape& box, size_t axis, int64_t* start) {
  const size_t rank = box.size();
  if (c.rank() > static_cast<int>(rank) || c.numel() == 0 ||
      (c.type() != DataType::kInt64 && c.type() != DataType::kInt32))
    return false;
  Shape dims(rank - c.rank(), 1);
  dims.insert(dims.end(), c.shape().begin(), c.shape().end());
  for (size_t d = 0; d < rank; ++d)
    if (dims[d] != box[d] && dims[d] != 1) return false;
  if (dims[axis] != box[axis] && box[axis] != 1) return false;  // the axis must vary in c
  int64_t inner = 1;  // elements of c per step along `axis`
  for (size_t d = axis + 1; d < rank; ++d) inner *= dims[d];
  *start = c.valueAsInt64(0);
  for (int64_t e = 0; e < c.numel(); ++e)
    if (c.valueAsInt64(e) != *start + (e / inner) % dims[axis]) return false;
  return *start >= 0;
}

// The constant behind `value`: itself, or the first input of an Expand of it (to any shape:
// the caller checks the box through the value's inferred shape).
const Tensor* meshgridSource(const Graph& g, const GraphIndex& index, const std::string& value) {
  if (const Tensor* c = index.constant(value)) return c;
  const int at = index.producer(value);
  if (at < 0 || !isOnnxOp(g.nodes[at], "Expand", 2)) return nullptr;
  return index.constant(g.nodes[at].inputs[0]);
}

// Box starts of indices `value` (shape box + [k]) in either form, or false.
bool boxStarts(const Graph& g, const GraphIndex& index, const Shape& box, const std::string& value,
               std::vector<int64_t>* starts) {
  const size_t k = box.size();
  starts->assign(k, 0);
  if (const Tensor* c = index.constant(value)) {  // folded: check every index tuple
    if (c->type() != DataType::kInt64 || c->rank() != static_cast<int>(k + 1) ||
        c->dim(-1) != static_cast<int64_t>(k))
      return false;
    for (size_t i = 0; i < k; ++i) (*starts)[i] = c->valueAsInt64(static_cast<int64_t>(i));
    std::vector<int64_t> p(k, 0);
    for (int64_t e = 0; e < c->numel() / static_cast<int64_t>(k); ++e) {
      for (size_t i = 0; i < k; ++i)
        if (c->valueAsInt64(e * static_cast<int64_t>(k) + static_cast<int64_t>(i)) !=
            (*starts)[i] + p[i])
          return false;
      for (size_t i = k; i-- > 0;) {
        if (++p[i] < box[i]) break;
        p[i] = 0;
      }
    }
    return std::all_of(starts->begin(), starts->end(), [](int64_t s) { return s >= 0; });
  }
  const int concat = index.producer(value);
  if (concat < 0 || !isOnnxOpType(g.nodes[concat], "Concat") || g.nodes[concat].inputs.size() != k)
    return false;
  const int64_t axis = g.nodes[concat].attrInt("axis", 0);
  if (axis != -1 && axis != static_cast<int64_t>(k)) return false;
  for (size_t i = 0; i < k; ++i) {
    const int u = index.producer(g.nodes[concat].inputs[i]);
    if (u < 0 || !isOnnxOpType(g.nodes[u], "Unsqueeze") ||
        singleAxis(g.nodes[u], index, 13, static_cast<int64_t>(k + 1)) != static_cast<int64_t>(k))
      return false;
    const Tensor* c = meshgridSource(g, index, g.nodes[u].inputs[0]);
    if (!c || !meshgridAxis(*c, box, i, &(*starts)[i])) return false;
  }
  return true;
}

struct BoxWrite {
  Shape data, box;
  std::vector<int64_t> starts;
};

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, BoxWrite* m) {
  const Node& node = g.nodes[at];
  if (!isOnnxOp(node, "ScatterND", 3) || node.attrString("reduction", "none") != "none")
    return false;
  Shape indices, updates;
  if (!staticShape(shapes, node.inputs[0], &m->data) ||
      !staticShape(shapes, node.inputs[1], &indices) ||
      !staticShape(shapes, node.inputs[2], &updates) || indices.empty())
    return false;
  const size_t k = static_cast<size_t>(indices.back());
  if (k == 0 || k > m->data.size() || indices.size() != k + 1) return false;
  m->box.assign(indices.begin(), indices.end() - 1);
  Shape expected = m->box;
  expected.insert(expected.end(), m->data.begin() + static_cast<int64_t>(k), m->data.end());
  if (updates != expected) return false;
  if (std::find(m->box.begin(), m->box.end(), 0) != m->box.end()) return false;
  if (!boxStarts(g, index, m->box, node.inputs[1], &m->starts)) return false;
  for (size_t i = 0; i < k; ++i)  // start + box <= dim, without the sum's overflow
    if (m->starts[i] > m->data[i] - m->box[i]) return false;
  return true;
}

class ScatterBoxAsConcat final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "ScatterND(D, meshgrid indices of a box, U) -> U (the whole of D) or Concat of D's "
            "slices around U along each axis where the box is narrower",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const Shapes shapes = inferredShapesOrNone(network);  // the rewrite keeps every other value
    size_t next = 0;                                      // the first node not yet looked at
    while (next < g.nodes.size()) {
      const size_t at = next++;
      if (!isOnnxOp(g.nodes[at], "ScatterND", 3)) continue;
      const GraphIndex index(g);  // per candidate: a rewrite moves the nodes after it
      BoxWrite m;
      if (!matchAt(g, index, shapes, static_cast<int>(at), &m)) continue;
      const std::vector<std::string> names = sourceNodesOf(g, {static_cast<int>(at)});
      std::vector<size_t> narrower;  // axes where the box is not the whole of D
      for (size_t i = 0; i < m.box.size(); ++i)
        if (m.starts[i] != 0 || m.box[i] != m.data[i]) narrower.push_back(i);
      const Node scatter = g.nodes[at];
      if (narrower.empty()) {
        if (!bypassNode(g, index, static_cast<int>(at), scatter.inputs[2])) continue;
        applied->push_back({kName, names, scatter.inputs[2]});
        next = at;  // the node went: the one after it is at its place now
        continue;
      }
      std::vector<Node> made = boxWrite(g, scatter, m, narrower);
      applied->push_back({kName, names, made.back().name});
      g.nodes.erase(g.nodes.begin() + static_cast<int64_t>(at));
      g.nodes.insert(g.nodes.begin() + static_cast<int64_t>(at), made.begin(), made.end());
      next = at + made.size();
    }
    return Status::ok();
  }

 private:
  // The Slices and Concats of the rewrite in order; the last writes the ScatterND's output.
  static std::vector<Node> boxWrite(Graph& g, const Node& scatter, const BoxWrite& m,
                                    const std::vector<size_t>& narrower) {
    const std::string base = scatter.displayName();
    const std::vector<std::string> sources = {base};
    std::vector<Node> out;
    auto constant = [&](const std::string& tag, int64_t v) {
      const std::string name = freshName(g, base + "_" + tag);
      g.initializers[name] = Tensor::int64Vector({v});
      return name;
    };
    auto slice = [&](const std::string& of, size_t axis, int64_t begin, int64_t end) {
      const std::string tag = "axis" + std::to_string(axis) + "_" + std::to_string(begin);
      Node s = madeNode(g, scatter, base + " (slice " + tag + ")", "Slice",
                        {of, constant(tag + "_start", begin), constant(tag + "_end", end),
                         constant(tag + "_axis", static_cast<int64_t>(axis))},
                        sources, kName);
      out.push_back(s);
      return s.outputs[0];
    };
    // The value equal to the box written into `of` along narrower[from..].
    std::function<std::string(const std::string&, size_t)> write = [&](const std::string& of,
                                                                       size_t from) {
      if (from == narrower.size()) return scatter.inputs[2];
      const size_t a = narrower[from];
      const int64_t begin = m.starts[a], end = begin + m.box[a];
      std::vector<std::string> pieces;
      if (begin > 0) pieces.push_back(slice(of, a, 0, begin));
      pieces.push_back(from + 1 == narrower.size() ? scatter.inputs[2]
                                                   : write(slice(of, a, begin, end), from + 1));
      if (end < m.data[a]) pieces.push_back(slice(of, a, end, m.data[a]));
      Node concat = madeNode(g, scatter, base + " (box along axis " + std::to_string(a) + ")",
                             "Concat", pieces, sources, kName);
      concat.attributes["axis"] = intAttribute(static_cast<int64_t>(a));
      out.push_back(concat);
      return concat.outputs[0];
    };
    write(scatter.inputs[0], 0);
    out.back().outputs[0] = scatter.outputs[0];
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> makeScatterBoxAsConcat() {
  return std::make_unique<ScatterBoxAsConcat>();
}

}  // namespace kiln::passes
