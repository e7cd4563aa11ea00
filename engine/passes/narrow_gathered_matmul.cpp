// narrow_gathered_matmul: a GEMM whose output is read only by a gather along its columns at
// constant indices computes only the columns those indices reach:
//   G(MatMul(A, B), idx) = G(MatMul(A, B[..., lo:hi+1]), idx - lo)
// with lo and hi the least and greatest index (negative ones counted from the end; the window
// widened to a multiple of 8 columns, moved back from the end where needed), G a
// GatherElements or BroadcastGatherElements along the last axis. Column j of a MatMul's
// output depends on column j of B alone, so the kept columns are computed exactly as before.
// B is a constant, or a Tile of a constant that does not repeat the last axis; the sliced
// constant is computed at build time. DeBERTa's relative positions read a band of 2S - 1 of the
// 2 * 256 position columns (c2p and p2c: [B * H, S, 512] GEMM outputs of which 255 columns are
// ever read at S = 128). Conditions: the window keeps at most 3/4 of the columns; the GEMM
// output and the Tile have no other reader.
#include <algorithm>
#include <memory>
#include <set>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "narrow_gathered_matmul";
constexpr int64_t kColumnMultiple = 8;

bool isColumnGather(const Node& n, size_t rank) {
  const bool onnx = isOnnxOp(n, "GatherElements", 2);
  const bool kiln =
      n.domain == kKilnDomain && n.opType == "BroadcastGatherElements" && n.inputs.size() == 2;
  if (!onnx && !kiln) return false;
  const int64_t axis = n.attrInt("axis", 0);
  return axis == -1 || axis == static_cast<int64_t>(rank) - 1;
}

// Columns [lo, lo + count) of every row of `t` (its last axis), any element type.
Tensor columnWindow(const Tensor& t, int64_t lo, int64_t count) {
  Shape shape = t.shape();
  const int64_t n = shape.back();
  shape.back() = count;
  Tensor out(t.type(), shape);
  const size_t element = dataTypeSize(t.type());
  const int64_t rows = n == 0 ? 0 : t.numel() / n;
  const char* src = static_cast<const char*>(t.rawData());
  char* dst = static_cast<char*>(out.rawData());
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(src + (r * n + lo) * element, count * element, dst + r * count * element);
  return out;
}

class NarrowGatheredMatMul final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "GatherElements(MatMul(A, B), constant indices) along the columns -> the GEMM of "
            "the columns the indices reach",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    auto index = std::make_unique<GraphIndex>(g);
    std::set<std::string> replaced;  // constants the rewrites stopped reading
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      Node& gather = g.nodes[at];
      if (gather.inputs.size() != 2) continue;
      const Tensor* idx = index->constant(gather.inputs[1]);
      const int mmAt = index->producer(gather.inputs[0]);
      if (!idx || mmAt < 0 || !isColumnGather(gather, idx->shape().size()) ||
          index->soleReader(gather.inputs[0]) != static_cast<int>(at) ||
          !isOnnxOp(g.nodes[mmAt], "MatMul", 2))
        continue;
      Node& matmul = g.nodes[mmAt];
      // B, or the Tile whose constant input B repeats.
      int tileAt = -1;
      std::string constantName = matmul.inputs[1];
      const Tensor* b = index->constant(constantName);
      if (!b) {
        tileAt = index->producer(matmul.inputs[1]);
        std::vector<int64_t> reps;
        if (tileAt < 0 || !isOnnxOp(g.nodes[tileAt], "Tile", 2) ||
            index->soleReader(matmul.inputs[1]) != mmAt ||
            !constantInts(index->constant(g.nodes[tileAt].inputs[1]), &reps) || reps.empty() ||
            reps.back() != 1)
          continue;
        constantName = g.nodes[tileAt].inputs[0];
        b = index->constant(constantName);
      }
      if (!b || b->shape().size() < 2 || idx->numel() == 0 ||
          (idx->type() != DataType::kInt64 && idx->type() != DataType::kInt32))
        continue;
      const int64_t n = b->shape().back();
      std::vector<int64_t> values = idx->toInt64Vector();
      for (int64_t& v : values) v = v < 0 ? v + n : v;
      const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      if (*lo < 0 || *hi >= n) continue;
      // Whole 16-byte runs of columns (a GEMM output row of 255 half-precision columns sends
      // cuBLASLt to its slow unaligned kernels: 0.110 ms where 512 columns took 0.088).
      const int64_t count =
          std::min(n, (*hi - *lo + 1 + kColumnMultiple - 1) / kColumnMultiple * kColumnMultiple);
      const int64_t first = std::min(*lo, n - count);
      if (count * 4 > n * 3) continue;
      const std::string window = freshName(g, constantName + "_columns");
      g.initializers[window] = columnWindow(*b, first, count);
      for (int64_t& v : values) v -= first;
      const std::string shifted = freshName(g, gather.inputs[1] + "_shifted");
      g.initializers[shifted] = Tensor::fromVector(DataType::kInt64, idx->shape(), values);
      if (tileAt >= 0)
        g.nodes[tileAt].inputs[0] = window;
      else
        matmul.inputs[1] = window;
      replaced.insert(constantName);
      replaced.insert(gather.inputs[1]);
      gather.inputs[1] = shifted;
      applied->push_back({kName, {matmul.displayName(), gather.displayName()}, ""});
      index = std::make_unique<GraphIndex>(g);
    }
    dropUnreadInitializers(g, replaced);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeNarrowGatheredMatMul() {
  return std::make_unique<NarrowGatheredMatMul>();
}

}  // namespace kiln::passes
