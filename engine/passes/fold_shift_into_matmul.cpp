// fold_shift_into_matmul: a constant row added to a GEMM's input goes into the GEMM's bias:
//   MatMul(Add(X, c), W)            = Add(MatMul(X, W), c W)
//   Add(MatMul(Add(X, c), W), b)    = Add(MatMul(X, W), b + c W)
// c one value per input feature (K elements with every dim but the last 1: [K], [1, K],
// [1, 1, K]; either side of the Add), so c W is one value per output column: a bias, which the
// GEMM fusion then puts into the epilogue. ResMLP's affine norms (alpha x + beta before a
// channel Linear) left the shift as an Add of the whole activation before each such GEMM.
// Conditions: c, W and b float32 constants, W [K, N], b N elements; the Add's output read by
// the MatMul alone and of X's shape (c does not broadcast it up); the MatMul's output read by
// the bias Add alone when there is one. New initializers for the bias; W is not touched.
// Runs after fold_scale_into_matmul and before the GEMM fusion.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_shift_into_matmul";

// `t` holds one value per feature along its last dim: `k` elements, every other dim 1.
bool perFeature(const Tensor& t, int64_t k) {
  return t.rank() > 0 && t.numel() == k && alongLastAxis(t);
}

struct Fold {
  int shift = -1, matmul = -1, bias = -1;  // the nodes (bias: -1 when the MatMul has none)
  std::string x;                           // the shifted input
  Tensor columnShift;                      // c W, [N]
};

std::optional<Fold> foldAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                           int at) {
  const Node& mm = g.nodes[at];
  if (!isOnnxOp(mm, "MatMul", 2)) return std::nullopt;
  const Tensor* w = float32Constant(index, mm.inputs[1], -1);
  if (!w || w->rank() != 2) return std::nullopt;
  const int64_t k = w->shape()[0], n = w->shape()[1];
  const int add = index.producer(mm.inputs[0]);
  if (add < 0 || index.soleReader(mm.inputs[0]) != at || !isOnnxOp(g.nodes[add], "Add", 2))
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const std::string& x = g.nodes[add].inputs[side];
    const Tensor* c = float32Constant(index, g.nodes[add].inputs[1 - side], k);
    const SymbolicShape* xShape = shapeOf(shapes, x);
    const SymbolicShape* sum = shapeOf(shapes, mm.inputs[0]);
    if (!c || index.constant(x) || !perFeature(*c, k) || !xShape || !sum || *xShape != *sum ||
        c->rank() > static_cast<int64_t>(xShape->size()))
      continue;
    Fold f{add, at, -1, x, Tensor(DataType::kFloat32, Shape{n})};
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t i = 0; i < k; ++i)
        s += static_cast<double>(c->data<float>()[i]) * w->data<float>()[i * n + j];
      f.columnShift.data<float>()[j] = static_cast<float>(s);
    }
    const int reader = index.soleReader(mm.outputs[0]);
    if (reader >= 0 && isOnnxOp(g.nodes[reader], "Add", 2)) {
      const Node& biasAdd = g.nodes[reader];
      const std::string& other =
          biasAdd.inputs[0] == mm.outputs[0] ? biasAdd.inputs[1] : biasAdd.inputs[0];
      const Tensor* b = float32Constant(index, other, n);
      if (b && perFeature(*b, n) && other != mm.outputs[0]) f.bias = reader;
    }
    return f;
  }
  return std::nullopt;
}

class FoldShiftIntoMatMul final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "MatMul(Add(X, c), W) with c one value per input feature -> MatMul(X, W) + c W "
            "(into the bias Add after it, or a new one)",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const InferredShapes shapes = inferredShapesOrNone(network);
    const GraphIndex index(g);
    std::vector<Fold> folds;
    std::set<int> taken;  // a node belongs to one fold at most
    for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
      std::optional<Fold> f = foldAt(g, index, shapes, n);
      if (!f || taken.count(f->shift) || taken.count(f->matmul) || taken.count(f->bias)) continue;
      taken.insert({f->shift, f->matmul, f->bias});
      folds.push_back(std::move(*f));
    }
    if (folds.empty()) return Status::ok();
    std::vector<std::vector<Node>> after(g.nodes.size());  // nodes inserted after node i
    std::set<int> removed;
    for (Fold& f : folds) {
      Node& mm = g.nodes[f.matmul];
      const std::vector<std::string> sources = {g.nodes[f.shift].displayName(), mm.displayName()};
      mm.inputs[0] = f.x;
      removed.insert(f.shift);
      if (f.bias >= 0) {
        Node& biasAdd = g.nodes[f.bias];
        const int side = biasAdd.inputs[0] == mm.outputs[0] ? 1 : 0;
        // A clone: copies share storage, and the original bias (maybe read elsewhere) stays.
        Tensor sum = index.constant(biasAdd.inputs[side])->clone();
        for (int64_t j = 0; j < sum.numel(); ++j)
          sum.data<float>()[j] += f.columnShift.data<float>()[j];
        const std::string name = freshName(g, biasAdd.inputs[side] + "_shifted");
        g.initializers[name] = std::move(sum);
        biasAdd.inputs[side] = name;
      } else {
        const std::string shift = freshName(g, mm.displayName() + "_input_shift");
        g.initializers[shift] = f.columnShift;
        const std::string product = freshName(g, mm.outputs[0] + "_unshifted");
        Node add;
        add.opType = "Add";
        add.opset = mm.opset;
        add.inputs = {product, shift};
        add.outputs = {mm.outputs[0]};
        add.name = mm.displayName() + " (input shift)";
        mm.outputs[0] = product;
        after[f.matmul].push_back(std::move(add));
      }
      applied->push_back({kName, sources, mm.displayName()});
    }
    std::vector<Node> nodes;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!removed.count(static_cast<int>(i))) nodes.push_back(std::move(g.nodes[i]));
      for (Node& n : after[i]) nodes.push_back(std::move(n));
    }
    g.nodes = std::move(nodes);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldShiftIntoMatMul() {
  return std::make_unique<FoldShiftIntoMatMul>();
}

}  // namespace kiln::passes
