// fuse_matmul_residual: the residual add in front of a normalization rides the GEMM that
// writes one of its terms, as cuBLASLt's C matrix, so the normalization reads one tensor.
//   AddLayerNorm(X = FusedMatMul(A, W, b; act none), R, gamma [, beta]) -> Y [, S]
//   -> S = FusedMatMul(A, W, b, R); LayerNormalization(S, gamma [, beta]) -> Y
//   (rms = 1: RMSNormalization(S, gamma)); S keeps its name where it was read elsewhere.
// Algebra: S = X + R = A W + b + R, what FusedMatMul's residual input computes, with the
// sum rounded once to the storage type instead of X first.
// Traffic (fp16, BERT-base b128: X, R, S, Y of 25 MB each): before, the GEMM writes X and
// the row kernel reads X and R and writes Y (and S, pre-norm); after, the GEMM reads R and
// writes S, the row kernel reads S and writes Y: one tensor's read and write fewer a
// residual block where S is not read elsewhere (post-norm: BERT), one read fewer where it is
// (pre-norm: ViT, GPT-2), for one more read inside the GEMM's epilogue.
// Conditions: X read by the AddLayerNorm alone (no graph output); the GEMM without an
// activation and without a residual yet; X and R of one shape and type (no broadcast: a
// bias along the last dim is no residual); R available before the GEMM runs (an input, a
// constant or a value written earlier); the target runs the new GEMM. Where both terms are
// such GEMMs, the later one takes the other as its residual.
// Runs last: the layout passes before it see FusedMatMul's three inputs only.
#include <memory>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fuse_matmul_residual";

bool isKilnOp(const Node& n, const char* op) {
  return n.domain == kKilnDomain && n.opType == op;
}

// The GEMM writing `term` when it can take the other term as its residual: a FusedMatMul
// with three inputs, no activation, its one output read by `norm` alone.
int residualGemm(const Graph& g, const GraphIndex& index, const std::string& term, int norm) {
  const int at = index.producer(term);
  if (at < 0 || index.soleReader(term) != norm) return -1;
  const Node& gemm = g.nodes[at];
  if (!isKilnOp(gemm, "FusedMatMul") || gemm.inputs.size() != 3 || gemm.outputs.size() != 1 ||
      gemm.attrString("activation", "none") != "none")
    return -1;
  return at;
}

// The normalization without its add, in AddLayerNorm's place: LayerNormalization (or
// RMSNormalization with rms = 1) of `sum`, keeping the fused node's provenance.
Node normalizationOf(const Node& addNorm, const std::string& sum, int importedOpset) {
  const bool rms = addNorm.attrInt("rms", 0) != 0;
  Node norm;
  norm.name = addNorm.name;
  norm.index = addNorm.index;
  norm.opType = rms ? "RMSNormalization" : "LayerNormalization";
  placeNewerOnnxOp(&norm, importedOpset, rms ? 23 : 17);
  norm.inputs = {sum, addNorm.inputs[2]};
  if (!rms && addNorm.inputs.size() > 3 && !addNorm.inputs[3].empty())
    norm.inputs.push_back(addNorm.inputs[3]);
  norm.outputs = {addNorm.outputs[0]};
  norm.attributes["axis"] = intAttribute(-1);
  norm.attributes["epsilon"] = floatAttribute(addNorm.attrFloat("epsilon", 1e-5f));
  if (auto it = addNorm.attributes.find(kSourceNodesAttribute); it != addNorm.attributes.end())
    norm.attributes[kSourceNodesAttribute] = it->second;
  norm.attributes[kFusionPassAttribute] = stringAttribute(kName);
  return norm;
}

class FuseMatMulResidual final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "AddLayerNorm(FusedMatMul(A, W, b), R) -> FusedMatMul(A, W, b, R) + LayerNormalization:"
            " the residual add in the GEMM's epilogue",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    return applyFor(network, applied, nullptr);
  }

  Status applyFor(Network& network, std::vector<PassApplication>* applied,
                  const FusionTarget* target) const override {
    Graph& g = network.graph;
    const InferredShapes shapes = inferredShapesOrNone(network);
    auto index = std::make_unique<GraphIndex>(g);
    const auto imported = network.opsets.find("");
    const int importedOpset = imported == network.opsets.end() ? 1 : imported->second;
    for (size_t at = 0; at < g.nodes.size(); ++at) {
      const Node& addNorm = g.nodes[at];
      if (!isKilnOp(addNorm, "AddLayerNorm") || addNorm.inputs.size() < 3 ||
          addNorm.outputs.empty() || addNorm.outputs.size() > 2 || addNorm.inputs[0].empty() ||
          addNorm.inputs[1].empty() || addNorm.inputs[0] == addNorm.inputs[1])
        continue;
      const int norm = static_cast<int>(at);
      // The later GEMM of the two terms takes the other term: that one exists by then.
      int gemmAt = -1, term = -1;
      for (int t = 0; t < 2; ++t) {
        const int candidate = residualGemm(g, *index, addNorm.inputs[t], norm);
        if (candidate < 0 || candidate < gemmAt) continue;
        const std::string& other = addNorm.inputs[1 - t];
        if (index->producer(other) >= candidate) continue;
        if (!sameShapeAndType(shapes, addNorm.inputs[t], other)) continue;
        gemmAt = candidate;
        term = t;
      }
      if (gemmAt < 0) continue;
      Node gemm = g.nodes[gemmAt];
      gemm.inputs.push_back(addNorm.inputs[1 - term]);
      // S keeps its name where it is read after the normalization; else the GEMM's own.
      const std::string sum = addNorm.outputs.size() == 2 && !addNorm.outputs[1].empty()
                                  ? addNorm.outputs[1]
                                  : gemm.outputs[0];
      gemm.outputs[0] = sum;
      if (const std::string why = targetRefusal(target, gemm, shapes); !why.empty()) {
        if (target->refusals)
          target->refusals->push_back(std::string(kName) + ": kept '" + addNorm.displayName() +
                                      "' as it was: the target refuses FusedMatMul with a " +
                                      "residual: " + why);
        continue;
      }
      const std::vector<std::string> names = {g.nodes[gemmAt].displayName(), addNorm.displayName()};
      g.nodes[at] = normalizationOf(addNorm, sum, importedOpset);
      if (g.nodes[at].domain == kKilnDomain) network.opsets[kKilnDomain] = 1;
      g.nodes[gemmAt] = std::move(gemm);
      applied->push_back({kName, names, g.nodes[gemmAt].displayName()});
      index = std::make_unique<GraphIndex>(g);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseMatMulResidual() {
  return std::make_unique<FuseMatMulResidual>();
}

}  // namespace kiln::passes
