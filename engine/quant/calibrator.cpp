// calibrateNetwork: runs the network on the CPU reference once per batch and adds
// every float32 activation to its tensor's histogram. The reference is the ground
// truth the INT8 build is later compared with, so the ranges come from exactly the
// values an FP32 engine computes.
#include <set>

#include "kiln/calibration.h"
#include "kiln/reference_backend.h"

namespace kiln {
namespace {

// Every value a top-level node writes, besides the graph outputs (returned anyway).
std::vector<std::string> activationNames(const Graph& graph) {
  std::set<std::string> outputs;
  for (const ValueInfo& v : graph.outputs) outputs.insert(v.name);
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const Node& node : graph.nodes)
    for (const std::string& out : node.outputs)
      if (!out.empty() && !outputs.count(out) && seen.insert(out).second) names.push_back(out);
  return names;
}

void addIfFloat(const std::string& name, const Tensor& t, CalibrationHistograms* histograms) {
  if (t.type() != DataType::kFloat32) return;
  (*histograms)[name].add(t.data<float>(), t.numel());
}

}  // namespace

Result<CalibrationResult> calibrateNetwork(
    const Network& network, const std::vector<std::map<std::string, Tensor>>& batches,
    const CalibrationOptions& options) {
  if (batches.empty()) return invalidArgument("calibration needs at least one batch of data");
  if (options.method == CalibrationMethod::kPercentile &&
      !(options.percentile > 0 && options.percentile <= 100))
    return invalidArgument("percentile " + std::to_string(options.percentile) +
                           " is outside (0, 100]");
  ReferenceBackend backend(network);
  ReferenceRunOptions runOptions;
  runOptions.extraOutputs = activationNames(network.graph);
  runOptions.cancel = options.cancel;
  CalibrationResult result;
  int samples = 0;
  const int total = static_cast<int>(batches.size());
  for (int b = 0; b < total; ++b) {
    if (options.cancel && options.cancel->load())
      return Status(StatusCode::kCancelled, "calibration cancelled");
    std::vector<NamedTensor> outputs;
    Status status = backend.run(batches[b], &outputs, runOptions);
    if (status.code() == StatusCode::kCancelled) return status;
    KILN_RETURN_IF_ERROR_CTX(status, "calibration batch " + std::to_string(b));
    for (const auto& [name, tensor] : batches[b]) addIfFloat(name, tensor, &result.histograms);
    for (const NamedTensor& out : outputs) addIfFloat(out.name, out.tensor, &result.histograms);
    const Tensor& first = batches[b].begin()->second;
    samples += first.rank() > 0 ? static_cast<int>(first.dim(0)) : 1;
    if (options.onProgress) options.onProgress({b + 1, total});
  }
  result.table =
      tableFromHistograms(result.histograms, options.method, options.percentile, samples);
  return result;
}

}  // namespace kiln
