// The CPU backend's answers to the builder: its tactics per node and their
// measured times (wall clock around the kernel, median of the runs).
#include <algorithm>
#include <chrono>

#include "backends/cpu/tactics/cpu_tactics.h"
#include "ir/fp8_layers.h"
#include "ir/quantized_layers.h"
#include "kiln/build_backend.h"
#include "kiln/builder_config.h"
#include "kiln/reference_backend.h"

namespace kiln {
namespace {

class CpuBuildBackend final : public BuildBackend {
 public:
  PlanIdentity identity() const override { return cpuPlanIdentity(); }
  bool uniformPrecision() const override { return false; }

  std::vector<TacticDescriptor> tactics(const Node& node) const override {
    std::vector<TacticDescriptor> out;
    // Control flow runs its bodies through the executor, in the types they declare.
    // INT8 and FP8 layers compute in int8 / E4M3 whatever the storage of their float values.
    const std::vector<DataType> precisions =
        isQuantizedLayer(node) ? std::vector<DataType>{DataType::kInt8}
        : isFp8Layer(node)     ? std::vector<DataType>{DataType::kFp8E4M3}
        : node.hasSubgraphs()
            ? std::vector<DataType>{DataType::kFloat32}
            : std::vector<DataType>{DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
    for (const cpu::CpuTactic& t : cpu::cpuTactics(node, node.opset))
      out.push_back({t.name, t.source, precisions});
    return out;
  }

  Result<double> timeTactic(const Node& node, const std::string& tactic, DataType precision,
                            const LayerInputs& inputs, int iterations) override {
    cpu::KernelFn fn = cpu::findCpuTactic(node, node.opset, tactic);
    if (!fn) return unsupported("tactic '" + tactic + "' does not apply to " + node.describe());
    auto runOnce = [&]() -> Status {
      std::vector<Tensor> outputs;
      if (node.hasSubgraphs()) return runWithSubgraphs(node, inputs, &outputs);
      cpu::SubgraphRunner noSubgraphs = [&node](const Graph&, const std::vector<Tensor>&,
                                                std::vector<Tensor>*) {
        return internalError(node.describe() + ": unexpected subgraph");
      };
      return cpu::runKernelAtPrecision(node, fn, inputs.inputs, noSubgraphs, precision,
                                       DataType::kFloat32, &outputs);
    };
    KILN_RETURN_IF_ERROR(runOnce());  // warm-up; also the support check
    std::vector<double> times;
    for (int i = 0; i < std::max(iterations, 1); ++i) {
      auto start = std::chrono::steady_clock::now();
      KILN_RETURN_IF_ERROR(runOnce());
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  static Status runWithSubgraphs(const Node& node, const LayerInputs& inputs,
                                 std::vector<Tensor>* outputs) {
    std::map<std::string, Tensor> values = inputs.outerValues;
    for (size_t i = 0; i < node.inputs.size() && i < inputs.inputs.size(); ++i) {
      if (!node.inputs[i].empty() && inputs.inputs[i]) values[node.inputs[i]] = *inputs.inputs[i];
    }
    return runReferenceNode(node, values, outputs);
  }
};

}  // namespace

std::unique_ptr<BuildBackend> cpuBuildBackend() {
  return std::make_unique<CpuBuildBackend>();
}

}  // namespace kiln
