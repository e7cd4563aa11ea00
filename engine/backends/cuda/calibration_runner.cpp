// Calibration on the CUDA runtime. The runtime returns graph outputs only, so the
// runner builds its engine from a copy of the network whose graph outputs are every
// value the calibrator asks for (withGraphOutputs). Pure host code over the public
// runtime API: in a build without the toolkit Engine::create says so and the
// calibrator uses the CPU.
#include "kiln/cuda_calibration.h"
#include "kiln/cuda_runtime.h"
#include "kiln/graph_outputs.h"

namespace kiln::cuda {
namespace {

class CudaCalibrationRunner : public CalibrationRunner {
 public:
  CudaCalibrationRunner(const Network& network, DeviceInfo device)
      : m_source(std::make_shared<const Network>(network)), m_device(std::move(device)) {}

  std::string name() const override { return "cuda (" + m_device.name + ")"; }

  Status run(const std::map<std::string, Tensor>& batch, const std::vector<std::string>& names,
             std::map<std::string, Tensor>* values) override {
    if (!m_context || names != m_names) KILN_RETURN_IF_ERROR(createEngine(names));
    for (const auto& [input, tensor] : batch) {
      KILN_RETURN_IF_ERROR(m_context->setInputShape(input, tensor.shape()));
      KILN_RETURN_IF_ERROR(m_context->setInput(input, tensor));
    }
    KILN_RETURN_IF_ERROR(m_context->execute());
    for (const std::string& name : names) {
      KILN_ASSIGN_OR_RETURN((*values)[name], m_context->getOutput(name));
    }
    return Status::ok();
  }

 private:
  Status createEngine(const std::vector<std::string>& names) {
    m_context.reset();
    m_engine.reset();
    EngineOptions options;
    options.device = m_device.ordinal;
    options.precision = Precision::kFloat32;
    options.allowTf32 = false;  // the histograms must see FP32 values
    // Each shape runs a few batches at most: the heuristic's first convolution
    // algorithm, untimed, costs less than timing six.
    options.convolutionCandidates = 1;
    KILN_ASSIGN_OR_RETURN(m_engine, Engine::create(withGraphOutputs(*m_source, names), options));
    KILN_ASSIGN_OR_RETURN(m_context, m_engine->createContext());
    m_names = names;
    return Status::ok();
  }

  std::shared_ptr<const Network> m_source;
  DeviceInfo m_device;
  std::vector<std::string> m_names;
  std::shared_ptr<Engine> m_engine;
  std::unique_ptr<ExecutionContext> m_context;
};

std::unique_ptr<CalibrationRunner> runnerOn(const Network& network, const DeviceInfo& device) {
  return std::make_unique<CudaCalibrationRunner>(network, device);
}

}  // namespace

Result<std::unique_ptr<CalibrationRunner>> createCalibrationRunner(const Network& network,
                                                                   int device) {
  const DeviceInfo info = probeCudaDevice(device);
  if (!info.available) return unsupported("CUDA backend unavailable: " + info.reason);
  return runnerOn(network, info);
}

bool parseCalibrationBackend(const std::string& text, CalibrationBackend* out) {
  if (text == "cpu") {
    *out = CalibrationBackend::kCpu;
  } else if (text == "cuda") {
    *out = CalibrationBackend::kCuda;
  } else {
    return false;
  }
  return true;
}

Result<CalibrationResult> calibrateOnBackend(
    const Network& network, const std::vector<std::map<std::string, Tensor>>& batches,
    const CalibrationOptions& options, CalibrationBackend backend, int device) {
  if (backend == CalibrationBackend::kCpu) return calibrateNetwork(network, batches, options);
  const DeviceInfo info = probeCudaDevice(device);
  if (!info.available) {
    if (backend == CalibrationBackend::kCuda)
      return unsupported("CUDA backend unavailable: " + info.reason);
    if (options.onNotice)
      options.onNotice("no usable CUDA device (" + info.reason +
                       "); calibrating on the CPU reference");
    return calibrateNetwork(network, batches, options);
  }
  std::unique_ptr<CalibrationRunner> runner = runnerOn(network, info);
  CalibrationOptions onGpu = options;
  onGpu.runner = runner.get();
  return calibrateNetwork(network, batches, onGpu);
}

}  // namespace kiln::cuda
