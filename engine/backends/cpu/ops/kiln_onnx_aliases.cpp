// ONNX ops that the graph passes write into models whose ai.onnx opset predates them
// (a decomposed LayerNormalization in an opset-12 model, say): the same kernels again
// under domain ai.kiln, opset 1, with the ONNX op's name, attributes and semantics
// (passes/rewrite_helpers.h, placeNewerOnnxOp). A plan file re-imports every node
// at its model's opsets, so an ai.onnx node newer than the model's import would not
// resolve there; the ai.kiln name does.
#include "backends/cpu/kernel.h"
#include "kiln/passes.h"

namespace kiln::cpu {

void registerKilnOnnxAliases(KernelRegistry& registry) {
  // ONNX op and the opset that introduced it.
  static const std::pair<const char*, int> kAliased[] = {
      {"Gelu", 20}, {"LayerNormalization", 17}, {"RMSNormalization", 23}};
  for (const auto& [op, since] : kAliased) {
    const KernelEntry* onnx = registry.find("", op, since);
    if (!onnx) continue;
    const KernelFn fn = onnx->fn;  // add() may move the entries
    registry.add(op, 1, 1000, fn, kKilnDomain);
  }
}

}  // namespace kiln::cpu
