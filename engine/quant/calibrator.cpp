// calibrateNetwork: runs the network once per batch and adds every float32 activation
// to its tensor's histogram. The CPU reference is the ground truth the INT8 build is
// later compared with, so the ranges come from exactly the values an FP32 engine
// computes; a CalibrationRunner (the CUDA runtime in FP32, TF32 off) may compute them
// faster, and the CPU takes over for the rest of the run the first time it fails.
#include <chrono>
#include <set>

#include "kiln/calibration.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"

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

// What a runner is asked for: every value a top-level node writes (graph outputs
// included) unless shape inference knows it is not float32. Shape, index and mask
// values would only be copied back to be skipped.
std::vector<std::string> runnerValueNames(const Network& network) {
  auto inferred = inferShapes(network);
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const Node& node : network.graph.nodes) {
    for (const std::string& out : node.outputs) {
      if (out.empty() || !seen.insert(out).second) continue;
      if (inferred.isOk()) {
        auto it = inferred->values.find(out);
        if (it != inferred->values.end() && it->second.type != DataType::kFloat32 &&
            it->second.type != DataType::kUndefined)
          continue;
      }
      names.push_back(out);
    }
  }
  return names;
}

// Runs each batch on the runner while it works, else on the CPU reference, and
// remembers which ran how many batches.
class BatchRunner {
 public:
  BatchRunner(const Network& network, const CalibrationOptions& options)
      : m_cpu(network), m_runner(options.runner), m_onNotice(options.onNotice) {
    m_cpuOptions.extraOutputs = activationNames(network.graph);
    m_cpuOptions.cancel = options.cancel;
    if (!m_runner) return;
    m_runnerName = m_runner->name();
    m_runnerNames = runnerValueNames(network);
  }

  // Every value of batch `index` by name: its inputs, then what the network wrote.
  Status run(int index, const std::map<std::string, Tensor>& batch,
             std::map<std::string, Tensor>* values) {
    *values = batch;
    if (m_runner) {
      Status status = runOnRunner(index, batch, values);
      if (status.isOk() || status.code() == StatusCode::kCancelled) return status;
      fallBack(index, status.message());
      *values = batch;
    }
    std::vector<NamedTensor> outputs;
    Status status = m_cpu.run(batch, &outputs, m_cpuOptions);
    if (status.code() == StatusCode::kCancelled) return status;
    KILN_RETURN_IF_ERROR_CTX(status, "calibration batch " + std::to_string(index));
    for (NamedTensor& out : outputs) values->emplace(out.name, std::move(out.tensor));
    return Status::ok();
  }

  std::string backend(int total) const {
    if (m_runnerBatches == 0) return "cpu";
    if (m_runnerBatches == total) return m_runnerName;
    return m_runnerName + " for " + std::to_string(m_runnerBatches) + " of " +
           std::to_string(total) + " batches, then cpu";
  }
  const std::string& fallback() const { return m_fallback; }

 private:
  Status runOnRunner(int index, const std::map<std::string, Tensor>& batch,
                     std::map<std::string, Tensor>* values) {
    std::map<std::string, Tensor> produced;
    KILN_RETURN_IF_ERROR(m_runner->run(batch, m_runnerNames, &produced));
    for (const std::string& name : m_runnerNames)
      if (!produced.count(name)) return notFound("it did not return '" + name + "'");
    for (auto& [name, tensor] : produced) values->emplace(name, std::move(tensor));
    ++m_runnerBatches;
    return Status::ok();
  }

  // Said once: the runner is dropped, so the CPU runs this batch and every later one.
  void fallBack(int index, const std::string& reason) {
    m_runner = nullptr;
    m_fallback =
        m_runnerName + " failed at calibration batch " + std::to_string(index) + ": " + reason;
    if (m_onNotice) m_onNotice(m_fallback + "; the CPU reference runs the remaining batches");
  }

  ReferenceBackend m_cpu;
  ReferenceRunOptions m_cpuOptions;
  CalibrationRunner* m_runner;
  std::function<void(const std::string&)> m_onNotice;
  std::vector<std::string> m_runnerNames;
  std::string m_runnerName;
  int m_runnerBatches = 0;
  std::string m_fallback;
};

Status checkOptions(const std::vector<std::map<std::string, Tensor>>& batches,
                    const CalibrationOptions& options) {
  if (batches.empty()) return invalidArgument("calibration needs at least one batch of data");
  if (options.method == CalibrationMethod::kPercentile &&
      !(options.percentile > 0 && options.percentile <= 100))
    return invalidArgument("percentile " + std::to_string(options.percentile) +
                           " is outside (0, 100]");
  return Status::ok();
}

int batchSamples(const std::map<std::string, Tensor>& batch) {
  const Tensor& first = batch.begin()->second;
  return first.rank() > 0 ? static_cast<int>(first.dim(0)) : 1;
}

}  // namespace

Result<CalibrationResult> calibrateNetwork(
    const Network& network, const std::vector<std::map<std::string, Tensor>>& batches,
    const CalibrationOptions& options) {
  KILN_RETURN_IF_ERROR(checkOptions(batches, options));
  const auto start = std::chrono::steady_clock::now();
  BatchRunner runner(network, options);
  CalibrationResult result;
  int samples = 0;
  const int total = static_cast<int>(batches.size());
  for (int b = 0; b < total; ++b) {
    if (options.cancel && options.cancel->load())
      return Status(StatusCode::kCancelled, "calibration cancelled");
    std::map<std::string, Tensor> values;
    KILN_RETURN_IF_ERROR(runner.run(b, batches[b], &values));
    for (const auto& [name, tensor] : values)
      if (tensor.type() == DataType::kFloat32)
        result.histograms[name].add(tensor.data<float>(), tensor.numel());
    samples += batchSamples(batches[b]);
    if (options.onProgress) options.onProgress({b + 1, total});
  }
  result.table =
      tableFromHistograms(result.histograms, options.method, options.percentile, samples);
  result.backend = runner.backend(total);
  result.fallback = runner.fallback();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace kiln
