// fold_constants: a deterministic node whose every input is constant computes the
// same tensors at every run, f(c1, ..., cn) = C, so it is evaluated once on the CPU
// reference at build time and its outputs become initializers of the same names.
// Constant means an initializer, a Constant node's value, an output folded earlier
// in this pass, or a value shape inference derived from constants and static shapes
// (Shape(x) of a statically shaped x, and the Gather/Concat/... shape arithmetic on
// it): shape subgraphs of fixed-shape models fold into their Reshape's shape.
// Not folded, each for a reason:
//   random ops (a fresh draw per run), Q/DQ (fold_qdq reads int8 weights through
//   their DequantizeLinear), nodes with subgraphs, nodes that write a graph output
//   (the output stays a layer's), nodes the CPU reference cannot run (plugins), and
//   results larger than max(kMinLimitBytes, their inputs' bytes): a ConstantOfShape,
//   Expand or Tile would store a broadcast the runtime computes for nothing. Where shape
//   inference knows the outputs' static shapes and types the size is checked before the node
//   runs: MViTv2-T's relative-position meshgrids (40 Expands of 157 MB at batch 128) were each
//   computed and then dropped, 20.8 of the 24.5 s its pass pipeline took here.
// Initializers that only folded nodes read go too (a Transpose of a weight leaves the
// transposed weight, not both). A folded value that is another initializer itself (the
// same storage, type and shape: an Identity of a weight) is that initializer: its readers
// read the one name. ALBERT shares one layer's weights across its layers through an
// Identity per layer; as twelve names of one storage, every later weight rewrite (the
// merged Q/K/V GEMM) and the backend's copy of the weights were made once per name:
// ALBERT-xxlarge (823 MB of weights) took over 21 GB to build and was killed.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "kiln/reference_backend.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

constexpr const char* kName = "fold_constants";
constexpr int64_t kMinLimitBytes = int64_t{1} << 20;

bool isExcludedOp(const Node& node) {
  static const std::set<std::string> kExcluded = {
      "RandomNormal", "RandomNormalLike", "RandomUniform",    "RandomUniformLike",    "Bernoulli",
      "Multinomial",  "QuantizeLinear",   "DequantizeLinear", "DynamicQuantizeLinear"};
  return !isDefaultDomain(node) || node.hasSubgraphs() || kExcluded.count(node.opType) > 0;
}

int64_t bytesOf(const Tensor& t) {
  return static_cast<int64_t>(t.byteSize());
}

class FoldConstants final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "f(c1, ..., cn) = C: deterministic nodes of constant inputs (and shape subgraphs of "
            "static shapes) -> initializers",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    std::map<std::string, Tensor> inferred;       // values shape inference folded
    std::map<std::string, InferredValue> shapes;  // and every value's type and shape
    if (auto result = inferShapes(network); result.isOk()) {
      inferred = std::move(result.value().folded);
      shapes = std::move(result.value().values);
    }
    std::set<std::string> graphOutputs;
    for (const ValueInfo& v : g.outputs) graphOutputs.insert(v.name);
    std::set<std::string> inputsOfFolded;
    std::vector<std::string> folded;  // the initializers this pass made, in order
    // One node at a time, in order: a folded output is an initializer for the next (the
    // index reads initializers live). Folded nodes leave the list only at the end, so the
    // index, whose Constant-node tensors point into the nodes, stays valid: rebuilt after each
    // fold, it made the pass quadratic (Swin-T's ~2,000 folds took 20 s on 2 cores).
    const GraphIndex index(g);
    std::vector<bool> gone(g.nodes.size(), false);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      std::vector<Tensor> outputs;
      if (!foldable(g.nodes[i], index, inferred, shapes, graphOutputs, &outputs)) continue;
      const Node& node = g.nodes[i];
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        if (node.outputs[k].empty()) continue;
        g.initializers[node.outputs[k]] = std::move(outputs[k]);
        folded.push_back(node.outputs[k]);
      }
      inputsOfFolded.insert(node.inputs.begin(), node.inputs.end());
      gone[i] = true;
      applied->push_back({kName, {node.displayName()}, ""});
    }
    size_t kept = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!gone[i]) {
        if (kept != i) g.nodes[kept] = std::move(g.nodes[i]);
        ++kept;
      }
    g.nodes.resize(kept);
    rewrite::dropUnreadInitializers(g, inputsOfFolded);
    mergeAliases(g, folded, applied);
    return Status::ok();
  }

 private:
  // Each folded initializer that shares its storage, type and shape with an initializer the
  // pass did not make (or made earlier) is replaced by that one in every main-graph reader;
  // one read by a subgraph or written as a graph output keeps its name.
  static void mergeAliases(Graph& g, const std::vector<std::string>& folded,
                           std::vector<PassApplication>* applied) {
    using Key = std::tuple<const void*, DataType, Shape>;
    auto keyOf = [](const Tensor& t) { return Key{t.rawData(), t.type(), t.shape()}; };
    const std::set<std::string> made(folded.begin(), folded.end());
    std::map<Key, std::string> canonical;
    for (const auto& [name, t] : g.initializers)
      if (!made.count(name) && t.rawData() && t.byteSize() > 0) canonical.emplace(keyOf(t), name);
    std::set<std::string> outputs;
    for (const ValueInfo& v : g.outputs) outputs.insert(v.name);
    const GraphIndex index(g);
    for (const std::string& name : folded) {
      auto it = g.initializers.find(name);
      if (it == g.initializers.end() || !it->second.rawData() || it->second.byteSize() == 0)
        continue;
      const auto [at, fresh] = canonical.emplace(keyOf(it->second), name);
      if (fresh || outputs.count(name)) continue;
      bool subgraph = false;
      for (int r : index.readers(name))
        subgraph = subgraph || (r >= 0 && g.nodes[r].hasSubgraphs());
      if (subgraph) continue;
      for (int r : index.readers(name))
        for (std::string& in : g.nodes[r].inputs)
          if (in == name) in = at->second;
      g.initializers.erase(it);
      applied->push_back({kName, {name}, "the same tensor as " + at->second});
    }
  }

  // True (with the node's outputs) when `node` folds: every input constant, every
  // output needed only by nodes, the op deterministic and runnable on the CPU.
  static bool foldable(const Node& node, const GraphIndex& index,
                       const std::map<std::string, Tensor>& inferred,
                       const std::map<std::string, InferredValue>& shapes,
                       const std::set<std::string>& graphOutputs, std::vector<Tensor>* outputs) {
    if (isExcludedOp(node) || node.outputs.empty() || node.opType == "Constant") return false;
    for (const std::string& out : node.outputs)
      if (graphOutputs.count(out)) return false;
    if (inferredOutputs(node, inferred, outputs)) return true;
    outputs->clear();
    std::map<std::string, Tensor> values;
    int64_t inputBytes = 0;
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      const Tensor* t = index.constant(in);  // an initializer or a Constant node's value
      if (!t) {
        auto folded = inferred.find(in);
        if (folded == inferred.end()) return false;
        t = &folded->second;
      }
      inputBytes += bytesOf(*t);
      values[in] = *t;
    }
    const int64_t limit = std::max(kMinLimitBytes, inputBytes);
    if (knownOutputBytes(node, shapes) > limit) return false;  // not worth computing to drop
    if (!runReferenceNode(node, values, outputs).isOk()) return false;
    int64_t outputBytes = 0;
    for (size_t i = 0; i < outputs->size(); ++i) {
      if (!node.outputs[i].empty() && (*outputs)[i].type() == DataType::kUndefined) return false;
      outputBytes += bytesOf((*outputs)[i]);
    }
    return outputBytes <= limit;
  }

  // The bytes of `node`'s outputs as shape inference knows them (each output's static shape
  // and type), or 0 when one is not known: the size check after the run then decides.
  static int64_t knownOutputBytes(const Node& node,
                                  const std::map<std::string, InferredValue>& shapes) {
    int64_t total = 0;
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      auto it = shapes.find(out);
      if (it == shapes.end() || !it->second.hasShape || it->second.type == DataType::kUndefined ||
          it->second.type == DataType::kString)
        return 0;
      constexpr int64_t kFarAboveAnyLimit = int64_t{1} << 40;  // elements: counting stops there
      int64_t elements = 1;
      for (const DimExpr& d : it->second.shape) {
        if (!d.isConst() || d.constValue() < 0) return 0;
        const int64_t n = d.constValue();
        if (elements == 0 || n == 0) {
          elements = 0;
          continue;
        }
        elements = n > kFarAboveAnyLimit / elements ? kFarAboveAnyLimit : elements * n;
      }
      total += elements * static_cast<int64_t>(dataTypeSize(it->second.type));
    }
    return total;
  }

  // True (with them) when shape inference already knows every output of `node`:
  // Shape(x) of a static x and the arithmetic on it, whatever its other inputs.
  static bool inferredOutputs(const Node& node, const std::map<std::string, Tensor>& inferred,
                              std::vector<Tensor>* outputs) {
    outputs->clear();
    int64_t bytes = 0;
    for (const std::string& out : node.outputs) {
      auto it = inferred.find(out);
      if (out.empty() || it == inferred.end()) return false;
      outputs->push_back(it->second);
      bytes += bytesOf(it->second);
    }
    return bytes <= kMinLimitBytes;  // larger ones face the growth rule below
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldConstants() {
  return std::make_unique<FoldConstants>();
}

}  // namespace kiln::passes
