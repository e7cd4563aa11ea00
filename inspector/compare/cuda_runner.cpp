// The CUDA side of a comparison: an engine on one device, one execution context,
// inputs copied in and outputs copied back per run. The CUDA runtime binds graph
// inputs and outputs only, so this side exposes no intermediates (a comparison then
// checks outputs and says so).
#include "compare/model_runner.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/cuda_runtime.h"

namespace kiln::compare {
namespace {

cuda::Precision enginePrecision(DataType type) {
  if (type == DataType::kFloat16) return cuda::Precision::kFloat16;
  if (type == DataType::kBFloat16) return cuda::Precision::kBFloat16;
  return cuda::Precision::kFloat32;
}

class CudaRunner : public ModelRunner {
 public:
  CudaRunner(std::shared_ptr<const Network> network, std::shared_ptr<cuda::Engine> engine,
             std::unique_ptr<cuda::ExecutionContext> context, std::string label)
      : m_network(std::move(network)),
        m_engine(std::move(engine)),
        m_context(std::move(context)),
        m_label(std::move(label)) {}

  std::string description() const override {
    const cuda::EngineOptions& o = m_engine->options();
    return m_label + ": cuda on " + m_engine->device().name + ", " +
           cuda::precisionName(o.precision) + (o.allowTf32 ? "" : ", no TF32");
  }
  const Network& network() const override { return *m_network; }
  std::vector<ExposedTensor> intermediates() const override { return {}; }
  std::map<std::string, std::string> layerOfNode() const override {
    std::map<std::string, std::string> layers;
    for (const Node& node : m_network->graph.nodes) layers[node.displayName()] = node.displayName();
    return layers;
  }

  Status run(const std::map<std::string, Tensor>& inputs, const std::vector<std::string>& extra,
             std::vector<NamedTensor>* outputs) override {
    if (!extra.empty())
      return unsupported(m_label + ": the CUDA runtime returns graph outputs only, not '" +
                         extra.front() + "'");
    for (const auto& [name, tensor] : inputs) {
      KILN_RETURN_IF_ERROR_CTX(m_context->setInputShape(name, tensor.shape()), m_label);
      KILN_RETURN_IF_ERROR_CTX(m_context->setInput(name, tensor), m_label);
    }
    KILN_RETURN_IF_ERROR_CTX(m_context->execute(), m_label);
    outputs->clear();
    for (const ValueInfo& out : m_network->graph.outputs) {
      Result<Tensor> tensor = m_context->getOutput(out.name);
      if (!tensor.isOk()) return tensor.status().withContext(m_label);
      outputs->push_back({out.name, tensor.value()});
    }
    return Status::ok();
  }

 private:
  std::shared_ptr<const Network> m_network;
  std::shared_ptr<cuda::Engine> m_engine;
  std::unique_ptr<cuda::ExecutionContext> m_context;
  std::string m_label;
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
      std::move(network), engine.value(), std::move(context.value()), std::move(label)));
}

}  // namespace kiln::compare
