// The CUDA side of a comparison: an engine on one device, one execution context,
// inputs copied in and outputs copied back per run. The runtime binds graph outputs
// only, so the intermediates a per-tensor comparison asks for come from a second engine
// of the same network and options whose graph outputs also name them
// (withGraphOutputs): the same layers, tactics and precisions, built at the first run
// that asks and kept while the names asked stay the same. One engine lives at a time:
// the plain one is released before the exposing one is built (the weights are on the
// device once, not twice) and built again if a later run asks for no intermediates.
#include "compare/model_runner.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/cuda_runtime.h"
#include "kiln/graph_outputs.h"

namespace kiln::compare {
namespace {

cuda::Precision enginePrecision(DataType type) {
  if (type == DataType::kFloat16) return cuda::Precision::kFloat16;
  if (type == DataType::kBFloat16) return cuda::Precision::kBFloat16;
  return cuda::Precision::kFloat32;
}

class CudaRunner : public ModelRunner {
 public:
  CudaRunner(std::shared_ptr<const Network> network, const Plan* plan,
             std::shared_ptr<cuda::Engine> engine, std::unique_ptr<cuda::ExecutionContext> context,
             std::string label)
      : m_network(std::move(network)),
        m_layers(layerNames(*m_network, plan ? &plan->record : nullptr)),
        m_options(engine->options()),
        m_deviceName(engine->device().name),
        m_engine(std::move(engine)),
        m_context(std::move(context)),
        m_label(std::move(label)) {}

  std::string description() const override {
    return m_label + ": cuda on " + m_deviceName + ", " + cuda::precisionName(m_options.precision) +
           (m_options.allowTf32 ? "" : ", no TF32");
  }
  const Network& network() const override { return *m_network; }
  // The outputs of its layers that another layer reads (an unread optional output, such
  // as LayerNormalization's statistics, may have no kernel writing it).
  std::vector<ExposedTensor> intermediates() const override {
    return exposedValues(readIntermediateValues(m_network->graph), m_network->graph, m_layers);
  }
  std::map<std::string, std::string> layerOfNode() const override {
    return compare::layerOfNode(m_layers);
  }

  Status run(const std::map<std::string, Tensor>& inputs, const std::vector<std::string>& extra,
             std::vector<NamedTensor>* outputs) override {
    KILN_RETURN_IF_ERROR(
        (extra.empty() ? plainContext() : exposingContext(extra)).withContext(m_label));
    cuda::ExecutionContext* context = extra.empty() ? m_context.get() : m_exposing.get();
    for (const auto& [name, tensor] : inputs) {
      KILN_RETURN_IF_ERROR_CTX(context->setInputShape(name, tensor.shape()), m_label);
      KILN_RETURN_IF_ERROR_CTX(context->setInput(name, tensor), m_label);
    }
    KILN_RETURN_IF_ERROR_CTX(context->execute(), m_label);
    outputs->clear();
    auto fetch = [&](const std::string& name) -> Status {
      Result<Tensor> tensor = context->getOutput(name);
      if (!tensor.isOk()) return tensor.status().withContext(m_label);
      outputs->push_back({name, tensor.value()});
      return Status::ok();
    };
    for (const ValueInfo& out : m_network->graph.outputs) KILN_RETURN_IF_ERROR(fetch(out.name));
    for (const std::string& name : extra) KILN_RETURN_IF_ERROR(fetch(name));
    return Status::ok();
  }

 private:
  // The plain engine (graph outputs only), built again if an exposing one replaced it.
  Status plainContext() {
    if (m_context) return Status::ok();
    releaseExposing();
    KILN_ASSIGN_OR_RETURN(auto engine, cuda::Engine::create(m_network, m_options));
    KILN_ASSIGN_OR_RETURN(m_context, engine->createContext());
    m_engine = std::move(engine);
    return Status::ok();
  }

  // The engine whose graph outputs also name `extra`, built once per list of names, after
  // the plain engine (and any other exposing engine) is released.
  Status exposingContext(const std::vector<std::string>& extra) {
    if (m_exposing && extra == m_exposedNames) return Status::ok();
    releaseExposing();
    m_context.reset();
    m_engine.reset();
    KILN_ASSIGN_OR_RETURN(auto engine,
                          cuda::Engine::create(withGraphOutputs(*m_network, extra), m_options));
    KILN_ASSIGN_OR_RETURN(m_exposing, engine->createContext());
    m_exposingEngine = std::move(engine);
    m_exposedNames = extra;
    return Status::ok();
  }

  void releaseExposing() {
    m_exposing.reset();  // a context before its engine
    m_exposingEngine.reset();
    m_exposedNames.clear();
  }

  std::shared_ptr<const Network> m_network;
  std::vector<LayerName> m_layers;
  cuda::EngineOptions m_options;
  std::string m_deviceName;
  std::shared_ptr<cuda::Engine> m_engine;  // null while an exposing engine lives
  std::unique_ptr<cuda::ExecutionContext> m_context;
  std::string m_label;
  std::vector<std::string> m_exposedNames;
  std::shared_ptr<cuda::Engine> m_exposingEngine;
  std::unique_ptr<cuda::ExecutionContext> m_exposing;
};

}  // namespace

Result<std::unique_ptr<ModelRunner>> cudaRunner(std::shared_ptr<const Network> network,
                                                const Plan* plan, const CudaSideOptions& side,
                                                std::string label) {
  cuda::EngineOptions options;
  options.device = side.device;
  options.precision = enginePrecision(side.precision);
  options.allowTf32 = side.allowTf32;
  if (plan) {  // as `kiln run` does with a plan: its build settings decide
    // (its cubins and cuDNN records in the engine's own compiled code: loaded, not compiled)
    options = cuda::engineOptionsForPlan(*plan, side.device);
  }
  auto engine = cuda::Engine::create(network, options);
  if (!engine.isOk()) return engine.status().withContext(label);
  auto context = engine.value()->createContext();
  if (!context.isOk()) return context.status().withContext(label);
  return std::unique_ptr<ModelRunner>(std::make_unique<CudaRunner>(
      std::move(network), plan, engine.value(), std::move(context.value()), std::move(label)));
}

}  // namespace kiln::compare
