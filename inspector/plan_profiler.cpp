#include "plan_profiler.h"

#include <algorithm>
#include <random>

#include "kiln/cuda_generated_kernels.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/cuda_runtime.h"
#include "kiln/reference_backend.h"
#include "kiln/tensor_size.h"

namespace kiln::inspector {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Status checkProfileRequest(const Plan& plan, int iterations) {
  if (!plan.network) return invalidArgument("the plan holds no network to run");
  if (iterations < 1)
    return invalidArgument("profile iterations must be >= 1, got " + std::to_string(iterations));
  return Status::ok();
}

Status cancelledStatus() {
  return Status(StatusCode::kCancelled, "profiling cancelled");
}

bool isCancelled(const std::atomic<bool>* cancel) {
  return cancel && cancel->load();
}

Result<nlohmann::json> profileOnCuda(const Plan& plan, int iterations,
                                     const std::map<std::string, Tensor>& inputs,
                                     const std::atomic<bool>* cancel, ProfileProgress progress) {
  const cuda::EngineOptions options = cuda::engineOptionsForPlan(plan);
  const cuda::DeviceInfo device = cuda::probeCudaDevice(options.device);
  if (!device.available)
    return unsupported("cannot profile a CUDA plan here: no usable CUDA device (" + device.reason +
                       ")");
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<cuda::Engine> engine,
                        cuda::createEngineForPlan(plan, options.device));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::ExecutionContext> context, engine->createContext());
  for (const auto& [name, tensor] : inputs) {
    KILN_RETURN_IF_ERROR(context->setInputShape(name, tensor.shape()));
    KILN_RETURN_IF_ERROR(context->setInput(name, tensor));
  }
  KILN_RETURN_IF_ERROR(context->execute());  // warm-up: memory plan, library algorithm choice
  context->setProfiling(true);
  for (int i = 0; i < iterations; ++i) {
    if (isCancelled(cancel)) return cancelledStatus();
    KILN_RETURN_IF_ERROR(context->execute());
    if (progress) progress(i + 1, iterations);
  }
  return cudaProfileJson(*plan.network, context->takeLayerTimings(), context->layers());
}

}  // namespace

LayerTimes::LayerTimes(const Network& network) {
  for (const Node& node : network.graph.nodes) {
    m_byNode[&node] = m_names.size();
    m_byName.emplace(node.displayName(), m_names.size());
    m_names.push_back(node.displayName());
  }
  m_samples.resize(m_names.size());
  m_implementations.resize(m_names.size());
}

void LayerTimes::describe(const std::string& name, const std::string& implementation) {
  auto found = m_byName.find(name);
  if (found != m_byName.end()) m_implementations[found->second] = implementation;
}

void LayerTimes::record(const Node& node, double milliseconds) {
  auto found = m_byNode.find(&node);
  if (found != m_byNode.end()) m_samples[found->second].push_back(milliseconds);
}

void LayerTimes::append(const std::string& name, const std::vector<double>& milliseconds) {
  auto found = m_byName.find(name);
  if (found == m_byName.end()) {
    found = m_byName.emplace(name, m_names.size()).first;
    m_names.push_back(name);
    m_samples.emplace_back();
    m_implementations.emplace_back();
  }
  std::vector<double>& samples = m_samples[found->second];
  samples.insert(samples.end(), milliseconds.begin(), milliseconds.end());
}

nlohmann::json LayerTimes::profileJson() const {
  size_t count = 0;
  double total = 0;
  std::vector<double> sums(m_samples.size(), 0.0);
  for (size_t i = 0; i < m_samples.size(); ++i) {
    count = std::max(count, m_samples[i].size());
    for (double ms : m_samples[i]) sums[i] += ms;
    total += sums[i];
  }
  nlohmann::json out = nlohmann::json::array();
  out.push_back({{"count", count}});
  for (size_t i = 0; i < m_samples.size(); ++i) {
    if (m_samples[i].empty()) continue;
    nlohmann::json layer = {{"name", m_names[i]},
                            {"timeMs", sums[i]},
                            {"averageMs", sums[i] / static_cast<double>(m_samples[i].size())},
                            {"medianMs", median(m_samples[i])},
                            {"percentage", total > 0 ? 100.0 * sums[i] / total : 0.0}};
    if (!m_implementations[i].empty()) layer["implementation"] = m_implementations[i];
    out.push_back(std::move(layer));
  }
  return out;
}

nlohmann::json cudaProfileJson(const Network& network,
                               const std::vector<cuda::LayerTiming>& timings,
                               const std::vector<cuda::LayerInfo>& layers) {
  LayerTimes times(network);
  for (const cuda::LayerTiming& timing : timings)
    times.append(timing.name, {timing.milliseconds.begin(), timing.milliseconds.end()});
  // In the words of the build's candidate detail, so the two compare as they are.
  for (const cuda::LayerInfo& layer : layers)
    times.describe(layer.name, cuda::layerDescription(layer));
  return times.profileJson();
}

Result<std::map<std::string, Tensor>> planInputs(const Plan& plan, uint64_t seed) {
  if (!plan.network) return invalidArgument("the plan holds no network to run");
  std::mt19937_64 rng(seed);
  std::map<std::string, Tensor> inputs;
  for (const ValueInfo& info : plan.network->graph.inputs) {
    Shape shape;
    auto ranged = plan.profiles.empty() ? nullptr : &plan.profiles[0].inputs;
    if (ranged && ranged->count(info.name)) {
      shape = ranged->at(info.name).opt;
    } else {
      for (const DimExpr& d : info.shape) {
        if (!d.isConst())
          return invalidArgument("input '" + info.name + "' has dynamic dim '" + d.toString() +
                                 "' and no optimization profile of the plan sets it");
        shape.push_back(d.constValue());
      }
    }
    const DataType type = info.type == DataType::kUndefined ? DataType::kFloat32 : info.type;
    if (type == DataType::kString)
      return unsupported("input '" + info.name + "' is a string tensor; it cannot be generated");
    KILN_ASSIGN_OR_RETURN(inputs[info.name],
                          randomInput(type, shape, rng(), "input '" + info.name + "'"));
  }
  return inputs;
}

Result<nlohmann::json> profilePlanOnCpu(const Plan& plan, int iterations, uint64_t seed,
                                        const std::atomic<bool>* cancel, ProfileProgress progress) {
  KILN_RETURN_IF_ERROR(checkProfileRequest(plan, iterations));
  KILN_ASSIGN_OR_RETURN(auto inputs, planInputs(plan, seed));
  const Network& network = *plan.network;
  ReferenceBackend backend(network);
  KILN_RETURN_IF_ERROR(backend.validateInputs(inputs));
  LayerTimes times(network);
  bool measuring = false;
  ReferenceRunOptions options;
  options.cancel = cancel;
  // A CUDA plan's tactics are GPU kernels the reference backend does not know.
  if (plan.identity.backend == "cpu") {
    options.layerImplementations = plan.layers;
    for (size_t i = 0; i < plan.layers.size() && i < network.graph.nodes.size(); ++i)
      times.describe(network.graph.nodes[i].displayName(), plan.layers[i].tactic);
  }
  options.onNodeTimed = [&](const Node& node, double ms) {
    if (measuring) times.record(node, ms);
  };
  std::vector<NamedTensor> outputs;
  for (int i = 0; i <= iterations; ++i) {  // run 0 warms up
    if (isCancelled(cancel)) return cancelledStatus();
    measuring = i > 0;
    KILN_RETURN_IF_ERROR(backend.run(inputs, &outputs, options));
    if (measuring && progress) progress(i, iterations);
  }
  return times.profileJson();
}

Result<nlohmann::json> profilePlan(const Plan& plan, int iterations, uint64_t seed,
                                   const std::atomic<bool>* cancel, ProfileProgress progress) {
  if (plan.identity.backend != "cuda")
    return profilePlanOnCpu(plan, iterations, seed, cancel, std::move(progress));
  KILN_RETURN_IF_ERROR(checkProfileRequest(plan, iterations));
  KILN_ASSIGN_OR_RETURN(auto inputs, planInputs(plan, seed));
  return profileOnCuda(plan, iterations, inputs, cancel, std::move(progress));
}

}  // namespace kiln::inspector
