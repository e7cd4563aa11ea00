// merge_parallel_matmuls: the GEMMs that read one input side by side (attention's Q, K
// and V projections) as one GEMM over the concatenated weights, split after:
//   MatMul(X, W_i) [+ b_i], i = 1..n  ->  Split(MatMul(X, [W_1 ... W_n]) + [b_1 ... b_n],
//                                               axis -1, [N_1 ... N_n])
// Column blocks of one product are the products of the column blocks. One [M, K] x [K,
// 3N] GEMM reads X once and launches once (BERT-base on an H200: three N = 768 GEMMs took
// 0.1035 ms a layer, the merged one 0.0945). fold_attention_views then reads Q, K and V
// through strides from the merged product, so the Split never copies; cuDNN's attention
// reading a row stride of 3N instead of N was as much slower (0.063 -> 0.074 ms a layer),
// so the pass measured +0.2-0.8% end to end (docs/benchmarks.md, 2026-11-29 late).
// Conditions: two or more MatMuls read X as their first input, X's shape static
// (fixed-shape profiles: the fold needs static shapes too) and of rank >= 2;
// each W a float constant [K, N_i] of the same K and type (float32, or a strongly typed
// model's float16/bfloat16), or (a strongly typed INT8 export) all
// DequantizeLinear of int8 constants [K, N_i] with float32 scales per tensor or per column
// and zero points 0, merged as one DequantizeLinear of the concatenated columns with a scale
// per column; a bias, where one follows, a constant [N_i] of the GEMM's type (float32 for
// int8 weights) added on either side to a
// MatMul output read by the Add alone (a missing bias in a merged group is zeros); each
// result read only by layout views (Reshape, Transpose, Squeeze, Unsqueeze, Flatten): a head
// split, which the fold turns into strides; or, in every projection alike, read by one Cast
// to float16/bfloat16 read only by such views (the typed export's Cast into its FP16 region:
// one Cast then goes before the Split, which fold_cast_into_int8_output then folds into the
// INT8 GEMM). A result read by an activation stays its own GEMM, whose epilogue takes the
// activation. Groups that read the same float weights and biases by name (ALBERT's layers,
// which share one set) share one merged weight and bias instead of a copy each.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "merge_parallel_matmuls";

// A projection's weights: a float32 constant [K, N], or DequantizeLinear of an int8
// constant [K, N] with a float32 scale per tensor or per column (axis 1) and zero points 0
// (a strongly typed INT8 export's weights).
struct Weights {
  const Tensor* matrix = nullptr;  // float32, float16, bfloat16 or int8 [K, N]
  const Tensor* scale = nullptr;   // int8: [] or [N]
  bool zeroPoint = false;          // int8: the DQ has a (zero) zero point input
  // The type the GEMM computes in, and its bias's: the weights' float type; float32 for int8.
  DataType computeType() const { return scale ? DataType::kFloat32 : matrix->type(); }
};

struct Projection {
  int matmul = -1, add = -1;  // add -1: no bias
  int cast = -1;              // the Cast to 16 bits that alone reads the result, or -1
  std::string bias;           // the bias constant's name
  std::string result;         // the value the projection's readers read
  int64_t n = 0;
  Weights weights;
};

// The weights MatMul `mm` reads as input 1, or false.
bool weightsOf(const Graph& g, const GraphIndex& index, const Node& mm, Weights* w) {
  if (const Tensor* f = index.constant(mm.inputs[1]);
      f && (f->type() == DataType::kFloat32 || f->type() == DataType::kFloat16 ||
            f->type() == DataType::kBFloat16)) {
    *w = {f, nullptr, false};
    return f->rank() == 2;
  }
  const int dq = index.producer(mm.inputs[1]);
  if (dq < 0 || !isDefaultDomain(g.nodes[dq]) || g.nodes[dq].opType != "DequantizeLinear" ||
      g.nodes[dq].inputs.size() < 2 || g.nodes[dq].outputs.size() != 1)
    return false;
  const Node& d = g.nodes[dq];
  const Tensor* q = index.constant(d.inputs[0]);
  const Tensor* scale = index.constant(d.inputs[1]);
  if (!q || q->type() != DataType::kInt8 || q->rank() != 2 || !scale ||
      scale->type() != DataType::kFloat32)
    return false;
  const int64_t axis = d.attrInt("axis", 1);
  const bool perTensor = scale->numel() == 1 && scale->rank() <= 1;
  if (!perTensor &&
      !(scale->rank() == 1 && scale->numel() == q->dim(1) && (axis == 1 || axis == -1)))
    return false;
  const bool zeroPoint = d.hasInput(2);
  if (zeroPoint && !allElementsEqual(index.constant(d.inputs[2]), 0.0)) return false;
  *w = {q, scale, zeroPoint};  // the old DQ, unread after a merge, goes with remove_dead_nodes
  return true;
}

bool readOnlyByViews(const Graph& g, const GraphIndex& index, const std::string& value) {
  static const std::set<std::string> kViews = {"Reshape", "Transpose", "Squeeze", "Unsqueeze",
                                               "Flatten"};
  const std::vector<int>& readers = index.readers(value);
  if (readers.empty()) return false;
  for (int r : readers)
    if (r < 0 || !isDefaultDomain(g.nodes[r]) || !kViews.count(g.nodes[r].opType) ||
        g.nodes[r].inputs[0] != value)
      return false;
  return true;
}

// The projection MatMul `at` makes from `x`, or false.
bool projectionAt(const Graph& g, const GraphIndex& index, int at, const std::string& x, int64_t k,
                  Projection* p) {
  const Node& mm = g.nodes[at];
  if (!isOnnxOp(mm, "MatMul", 2) || mm.inputs[0] != x || mm.inputs[1] == x) return false;
  if (!weightsOf(g, index, mm, &p->weights) || p->weights.matrix->dim(0) != k) return false;
  p->matmul = at;
  p->n = p->weights.matrix->dim(1);
  p->result = mm.outputs[0];
  const int add = index.soleReader(mm.outputs[0]);
  if (add >= 0 && isOnnxOp(g.nodes[add], "Add", 2)) {
    const std::string* b = otherInput(g.nodes[add], mm.outputs[0]);
    const Tensor* bias = b ? index.constant(*b) : nullptr;
    if (b && *b != mm.outputs[0] && bias && bias->type() == p->weights.computeType() &&
        bias->rank() == 1 && bias->numel() == p->n) {
      p->add = add;
      p->bias = *b;
      p->result = g.nodes[add].outputs[0];
    }
  }
  // A strongly typed model's Cast to its 16-bit region before the head split: the merged
  // GEMM's result is cast once, before the Split.
  const int cast = index.soleReader(p->result);
  if (cast >= 0 && isOnnxOp(g.nodes[cast], "Cast", 1)) {
    const int64_t to = g.nodes[cast].attrInt("to", 0);
    if (to != static_cast<int64_t>(DataType::kFloat16) &&
        to != static_cast<int64_t>(DataType::kBFloat16))
      return false;
    p->cast = cast;
    return readOnlyByViews(g, index, g.nodes[cast].outputs[0]);
  }
  return readOnlyByViews(g, index, p->result);
}

// The projections of `group` can be one GEMM: one kind of weights (float32, or int8 with
// zero points alike), and every result cast to the same type or none.
bool mergeable(const Graph& g, const std::vector<Projection>& group) {
  const Projection& first = group.front();
  for (const Projection& p : group) {
    if ((p.weights.matrix->type() != first.weights.matrix->type()) ||
        (p.weights.zeroPoint != first.weights.zeroPoint) || ((p.cast < 0) != (first.cast < 0)))
      return false;
    if (p.cast >= 0 && g.nodes[p.cast].attrInt("to", 0) != g.nodes[first.cast].attrInt("to", 0))
      return false;
  }
  return true;
}

// [K, N_1] ... [K, N_n] side by side as [K, sum N_i] (float32 or int8).
Tensor concatenatedColumns(const std::vector<const Tensor*>& parts, int64_t k) {
  int64_t total = 0;
  for (const Tensor* t : parts) total += t->dim(1);
  const DataType type = parts.front()->type();
  const size_t element = dataTypeSize(type);
  Tensor out(type, {k, total});
  char* dst = static_cast<char*>(out.rawData());
  for (int64_t row = 0; row < k; ++row) {
    for (const Tensor* t : parts) {
      const size_t bytes = static_cast<size_t>(t->dim(1)) * element;
      std::memcpy(dst, static_cast<const char*>(t->rawData()) + row * bytes, bytes);
      dst += bytes;
    }
  }
  return out;
}

// The merged int8 weights' scales, one per column ([N_i] each, a per-tensor scale repeated).
Tensor concatenatedScales(const std::vector<Projection>& group) {
  std::vector<float> scales;
  for (const Projection& p : group)
    for (int64_t c = 0; c < p.n; ++c)
      scales.push_back(p.weights.scale->data<float>()[p.weights.scale->numel() == 1 ? 0 : c]);
  return Tensor::fromVector(DataType::kFloat32, {static_cast<int64_t>(scales.size())}, scales);
}

class MergeParallelMatMuls final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "MatMul(X, W_i) [+ b_i] read by head splits -> Split(MatMul(X, [W_1 .. W_n]) + "
            "[b_1 .. b_n], [N_1 .. N_n])",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const Shapes shapes = inferredShapesOrNone(network);  // merged values keep their shapes
    auto index = std::make_unique<GraphIndex>(g);
    std::map<std::string, std::string> madeConstants;  // merge(): shared weights merged once
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      if (!isOnnxOp(g.nodes[at], "MatMul", 2)) continue;
      const std::string x = g.nodes[at].inputs[0];
      Shape xShape;
      Weights w0;
      if (!weightsOf(g, *index, g.nodes[at], &w0) || !staticShape(shapes, x, &xShape) ||
          xShape.size() < 2)
        continue;
      std::vector<Projection> group;
      for (int r : index->readers(x)) {
        Projection p;
        if (r >= 0 && projectionAt(g, *index, r, x, w0.matrix->dim(0), &p)) group.push_back(p);
      }
      if (group.size() < 2 || group.front().matmul != static_cast<int>(at) || !mergeable(g, group))
        continue;
      merge(g, *index, group, static_cast<int>(xShape.size()), &madeConstants, applied);
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }

 private:
  // `made`: the merged constants made so far, by the names they were made of (layers that
  // share their weights, as ALBERT's do, share the merged ones too).
  static void merge(Graph& g, const GraphIndex& index, const std::vector<Projection>& group,
                    int rank, std::map<std::string, std::string>* made,
                    std::vector<PassApplication>* applied) {
    const Node& first = g.nodes[group.front().matmul];
    const Weights& w0 = group.front().weights;
    const int64_t k = w0.matrix->dim(0);
    std::vector<const Tensor*> weights;
    std::vector<int64_t> widths;
    bool anyBias = false;
    std::vector<int> removed;
    std::vector<std::string> names, sources;
    for (const Projection& p : group) {
      weights.push_back(p.weights.matrix);
      widths.push_back(p.n);
      anyBias = anyBias || p.add >= 0;
      removed.push_back(p.matmul);
      if (p.add >= 0) removed.push_back(p.add);
      if (p.cast >= 0) removed.push_back(p.cast);
      names.push_back(g.nodes[p.matmul].displayName());
    }
    std::sort(removed.begin(), removed.end());
    sources = sourceNodesOf(g, removed);
    const std::string base = first.displayName() + " (merged)";
    auto node = [&](const char* op, const std::string& suffix, std::vector<std::string> inputs) {
      return madeNode(g, first, base + suffix, op, std::move(inputs), sources, kName);
    };
    std::vector<Node> chain;
    std::string weightKey = "weights";
    for (const Projection& p : group) weightKey += "|" + g.nodes[p.matmul].inputs[1];
    std::string w;
    if (auto it = made->find(weightKey); it != made->end() && g.initializers.count(it->second)) {
      w = it->second;
    } else {
      w = freshName(g, first.inputs[1] + "_merged");
      g.initializers[w] = concatenatedColumns(weights, k);
      if (!w0.scale) (*made)[weightKey] = w;  // int8 weights also take their scales
    }
    std::string matrix = w;
    if (w0.scale) {  // int8: one DequantizeLinear of the merged columns, a scale per column
      const std::string scale = freshName(g, w + "_scale");
      g.initializers[scale] = concatenatedScales(group);
      std::vector<std::string> dqInputs = {w, scale};
      if (w0.zeroPoint) {
        const std::string zero = freshName(g, w + "_zero");
        g.initializers[zero] = Tensor(DataType::kInt8, {g.initializers[w].dim(1)});
        dqInputs.push_back(zero);
      }
      Node dq = node("DequantizeLinear", " weights", dqInputs);
      dq.attributes["axis"] = intAttribute(1);
      dq.attributes.erase(kSourceNodesAttribute);
      matrix = dq.outputs[0];
      chain.push_back(std::move(dq));
    }
    chain.push_back(node("MatMul", "", {first.inputs[0], matrix}));
    if (anyBias) {  // in the GEMM's type; zeros for a projection without one
      int64_t total = 0;
      for (const Projection& p : group) total += p.n;
      const DataType type = w0.computeType();
      const size_t element = dataTypeSize(type);
      std::string biasKey = "bias " + std::to_string(static_cast<int>(type));
      for (const Projection& p : group)
        biasKey += "|" + (p.add >= 0 ? p.bias : "") + ":" + std::to_string(p.n);
      std::string b;
      if (auto it = made->find(biasKey); it != made->end() && g.initializers.count(it->second)) {
        b = it->second;
      } else {
        Tensor bias(type, {total});
        char* dst = static_cast<char*>(bias.rawData());
        for (const Projection& p : group) {
          if (p.add >= 0)
            std::memcpy(dst, index.constant(p.bias)->rawData(), static_cast<size_t>(p.n) * element);
          dst += static_cast<size_t>(p.n) * element;
        }
        b = freshName(g, first.inputs[1] + "_merged_bias");
        g.initializers[b] = std::move(bias);
        (*made)[biasKey] = b;
      }
      chain.push_back(node("Add", " bias", {chain.back().outputs[0], b}));
    }
    if (group.front().cast >= 0) {  // one Cast of the merged result
      Node cast = node("Cast", " cast", {chain.back().outputs[0]});
      cast.attributes["to"] = intAttribute(g.nodes[group.front().cast].attrInt("to", 0));
      chain.push_back(std::move(cast));
    }
    Node split = node("Split", " split", {chain.back().outputs[0]});
    split.attributes["axis"] = intAttribute(rank - 1);
    if (first.opset >= 13)
      split.inputs.push_back(addInt64Initializer(g, base + "_widths", widths));
    else
      split.attributes["split"] = intsAttribute(widths);
    // The slicing is no ONNX node's: the attention that reads through it should not claim
    // the projections the GEMM layer stands for.
    split.attributes.erase(kSourceNodesAttribute);
    split.outputs.clear();
    for (const Projection& p : group)
      split.outputs.push_back(p.cast >= 0 ? g.nodes[p.cast].outputs[0] : p.result);
    chain.push_back(std::move(split));
    // In the first removed node's place: X and the constants exist by then, and every
    // reader of a result comes after its projection.
    const int place = removed.front();
    for (auto it = removed.rbegin(); it != removed.rend(); ++it)
      g.nodes.erase(g.nodes.begin() + *it);
    g.nodes.insert(g.nodes.begin() + place, chain.begin(), chain.end());
    applied->push_back({kName, names, chain.front().name});
  }
};

}  // namespace

std::unique_ptr<Pass> makeMergeParallelMatMuls() {
  return std::make_unique<MergeParallelMatMuls>();
}

}  // namespace kiln::passes
