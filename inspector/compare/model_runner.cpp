// The CPU sides of a comparison (reference and plan) and openSide(), which turns a
// path into a side.
#include "compare/model_runner.h"

#include <set>

#include "kiln/backends.h"
#include "kiln/cuda_runtime.h"
#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/plan_identity.h"
#include "kiln/tensor_size.h"

namespace kiln::compare {
namespace {

class CpuRunner : public ModelRunner {
 public:
  CpuRunner(std::shared_ptr<const Network> network, std::shared_ptr<const Plan> plan,
            std::string label)
      : m_network(std::move(network)),
        m_plan(std::move(plan)),
        m_label(std::move(label)),
        m_layers(layerNames(*m_network, m_plan ? &m_plan->record : nullptr)),
        m_backend(*m_network) {}

  std::string description() const override {
    if (!m_plan) return m_label + ": CPU reference, fp32";
    std::map<std::string, int> counts;
    for (const LayerImplementation& l : m_plan->layers) ++counts[precisionSpelling(l.precision)];
    std::string text = m_label + ": cpu plan (";
    for (const auto& [precision, count] : counts)
      text += (text.back() == '(' ? "" : ", ") + precision + " " + std::to_string(count);
    return text + " layers)";
  }

  const Network& network() const override { return *m_network; }

  std::vector<ExposedTensor> intermediates() const override {
    std::set<std::string> graphOutputs;
    for (const ValueInfo& v : m_network->graph.outputs) graphOutputs.insert(v.name);
    std::vector<std::string> values;
    for (const Node& node : m_network->graph.nodes)
      for (const std::string& out : node.outputs)
        if (!out.empty() && !graphOutputs.count(out)) values.push_back(out);
    return exposedValues(values, m_network->graph, m_layers);
  }

  std::map<std::string, std::string> layerOfNode() const override {
    return compare::layerOfNode(m_layers);
  }

  Status run(const std::map<std::string, Tensor>& inputs, const std::vector<std::string>& extra,
             std::vector<NamedTensor>* outputs) override {
    ReferenceRunOptions options;
    options.extraOutputs = extra;
    if (m_plan) options.layerImplementations = m_plan->layers;
    return m_backend.run(inputs, outputs, options).withContext(m_label);
  }

 private:
  std::shared_ptr<const Network> m_network;
  std::shared_ptr<const Plan> m_plan;
  std::string m_label;
  std::vector<LayerName> m_layers;
  ReferenceBackend m_backend;
};

Result<DataType> cudaPrecision(const std::string& text) {
  if (text.empty() || text == "fp32") return DataType::kFloat32;
  if (text == "fp16") return DataType::kFloat16;
  if (text == "bf16") return DataType::kBFloat16;
  return invalidArgument("precision '" + text + "' is not fp32, fp16 or bf16");
}

Result<std::unique_ptr<ModelRunner>> runnerOnDevice(std::shared_ptr<const Plan> plan,
                                                    std::string label, int device) {
  if (plan->identity.backend == "cuda") {
    const cuda::DeviceInfo info = cuda::probeCudaDevice(device);
    if (!info.available) return unsupported(label + ": CUDA unavailable: " + info.reason);
    KILN_RETURN_IF_ERROR(
        checkPlanCompatible(plan->identity, cuda::cudaPlanIdentity(info)).withContext(label));
    return cudaRunner(plan->network, plan.get(), {device}, label);
  }
  KILN_RETURN_IF_ERROR(checkPlanCompatible(plan->identity, cpuPlanIdentity()).withContext(label));
  return cpuPlanRunner(std::move(plan), std::move(label));
}

Result<std::unique_ptr<ModelRunner>> openPlanSide(const SideSpec& spec,
                                                  std::shared_ptr<const Plan>* planOut) {
  KILN_ASSIGN_OR_RETURN(Plan loaded, loadPlanFile(spec.path));
  auto plan = std::make_shared<const Plan>(std::move(loaded));
  if (planOut) *planOut = plan;
  const std::string& built = plan->identity.backend;
  if (!spec.backend.empty() && spec.backend != built)
    return invalidArgument(spec.path + ": this plan was built for the " + built +
                           " backend; rebuild it for " + spec.backend);
  if (!spec.precision.empty())
    return invalidArgument(spec.path + ": a plan's precisions were chosen at build time");
  return runnerOnDevice(plan, spec.path, spec.device);
}

}  // namespace

std::vector<LayerName> layerNames(const Network& network, const BuildRecord* record) {
  std::vector<LayerName> names;
  const auto& nodes = network.graph.nodes;
  const bool useRecord = record && record->layers.size() == nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (useRecord && !record->layers[i].sourceNodes.empty()) {
      names.push_back({record->layers[i].name, record->layers[i].sourceNodes});
      continue;
    }
    std::vector<std::string> sources = nodes[i].attrStrings(kSourceNodesAttribute);
    if (sources.empty()) sources = {nodes[i].displayName()};
    names.push_back({nodes[i].displayName(), sources});
  }
  return names;
}

std::map<std::string, std::string> layerOfNode(const std::vector<LayerName>& layers) {
  std::map<std::string, std::string> map;
  for (const LayerName& layer : layers)
    for (const std::string& node : layer.sourceNodes) map[node] = layer.name;
  return map;
}

std::vector<ExposedTensor> exposedValues(const std::vector<std::string>& values, const Graph& graph,
                                         const std::vector<LayerName>& layers) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& out : graph.nodes[i].outputs) producer[out] = i;
  std::vector<ExposedTensor> exposed;
  for (const std::string& value : values) {
    auto it = producer.find(value);
    if (it == producer.end() || it->second >= layers.size()) continue;
    exposed.push_back({value, layers[it->second].name, layers[it->second].sourceNodes});
  }
  return exposed;
}

std::unique_ptr<ModelRunner> referenceRunner(std::shared_ptr<const Network> network,
                                             std::string label) {
  return std::make_unique<CpuRunner>(std::move(network), nullptr, std::move(label));
}

Result<std::unique_ptr<ModelRunner>> cpuPlanRunner(std::shared_ptr<const Plan> plan,
                                                   std::string label) {
  if (!plan || !plan->network) return invalidArgument(label + ": the plan has no network");
  if (plan->identity.backend != "cpu")
    return invalidArgument(label + ": a " + plan->identity.backend +
                           " plan does not run on the CPU");
  if (plan->layers.size() != plan->network->graph.nodes.size())
    return invalidArgument(label + ": the plan has " + std::to_string(plan->layers.size()) +
                           " layer implementations for " +
                           std::to_string(plan->network->graph.nodes.size()) + " nodes");
  auto network = plan->network;
  return std::unique_ptr<ModelRunner>(
      std::make_unique<CpuRunner>(std::move(network), std::move(plan), std::move(label)));
}

Result<std::unique_ptr<ModelRunner>> planRunner(std::shared_ptr<const Plan> plan,
                                                std::string label) {
  if (!plan) return invalidArgument(label + ": no plan");
  return runnerOnDevice(std::move(plan), std::move(label), 0);
}

Result<std::map<std::string, Tensor>> randomInputSet(const Network& network,
                                                     const std::map<std::string, Shape>& shapes,
                                                     uint64_t seed) {
  std::map<std::string, Tensor> inputs;
  for (const ValueInfo& info : network.graph.inputs) {
    Shape shape;
    auto given = shapes.find(info.name);
    if (given != shapes.end()) {
      shape = given->second;
    } else {
      for (const DimExpr& d : info.shape) {
        if (!d.isConst())
          return invalidArgument("input '" + info.name + "' has dynamic dim '" + d.toString() +
                                 "'; give its shape (an optimization profile)");
        shape.push_back(d.constValue());
      }
    }
    const DataType type = info.type == DataType::kUndefined ? DataType::kFloat32 : info.type;
    if (type == DataType::kString)
      return unsupported("input '" + info.name + "' is a string tensor; load it from a file");
    KILN_ASSIGN_OR_RETURN(inputs[info.name], randomInput(type, shape, seed + inputs.size(),
                                                         "input '" + info.name + "'"));
  }
  return inputs;
}

std::map<std::string, Shape> optShapesOf(const std::vector<OptimizationProfile>& profiles) {
  std::map<std::string, Shape> shapes;
  for (const OptimizationProfile& profile : profiles) {
    if (profile.inputs.empty()) continue;
    for (const auto& [name, range] : profile.inputs) shapes[name] = range.opt;
    break;
  }
  return shapes;
}

Result<std::unique_ptr<ModelRunner>> openSide(const SideSpec& spec,
                                              std::shared_ptr<const Plan>* planOut) {
  if (!spec.backend.empty()) KILN_RETURN_IF_ERROR(findBackend(spec.backend).status());
  if (looksLikePlanFile(spec.path)) return openPlanSide(spec, planOut);
  KILN_ASSIGN_OR_RETURN(Network imported, importOnnxFile(spec.path));
  auto network = std::make_shared<const Network>(std::move(imported));
  auto parsedPrecision = cudaPrecision(spec.precision);
  if (!parsedPrecision.isOk()) return parsedPrecision.status().withContext(spec.path);
  const DataType precision = parsedPrecision.value();
  if (spec.backend == "cuda") {
    const cuda::DeviceInfo device = cuda::probeCudaDevice(spec.device);
    if (!device.available) return unsupported(spec.path + ": CUDA unavailable: " + device.reason);
    return cudaRunner(network, nullptr, {spec.device, precision, true}, spec.path);
  }
  if (precision != DataType::kFloat32)
    return invalidArgument(spec.path + ": the CPU reference runs ONNX models in fp32; build a " +
                           precisionSpelling(precision) + " plan to compare that precision");
  return referenceRunner(network, spec.path);
}

}  // namespace kiln::compare
