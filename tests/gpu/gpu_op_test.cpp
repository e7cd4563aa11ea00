#include "gpu/gpu_op_test.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>

#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/layer_choice.h"
#include "gpu/crash_backtrace.h"
#include "kiln/cuda_generated_kernels.h"
#include "kiln/reference_backend.h"

namespace kiln::test {

std::vector<PrecisionTolerance> defaultTolerances() {
  return {{cuda::Precision::kFloat32, 1e-5, 1e-5},
          {cuda::Precision::kFloat16, 3e-3, 3e-3},
          {cuda::Precision::kBFloat16, 2e-2, 2e-2}};
}

std::vector<PrecisionTolerance> fp32Only(double atol, double rtol) {
  return {{cuda::Precision::kFloat32, atol, rtol}};
}

std::vector<PrecisionTolerance> convTolerances() {
  return {{cuda::Precision::kFloat32, 1e-4, 1e-4},
          {cuda::Precision::kFloat16, 1e-2, 1e-2},
          {cuda::Precision::kBFloat16, 6e-2, 6e-2}};
}

Tensor randomFloats(const Shape& shape, uint32_t seed, double lo, double hi) {
  return randomTensor(DataType::kFloat32, shape, seed, lo, hi);
}

Tensor roundTo(const Tensor& t, cuda::Precision precision) {
  if (!t.defined() || t.type() != DataType::kFloat32 || precision == cuda::Precision::kFloat32)
    return t;
  DataType storage =
      precision == cuda::Precision::kFloat16 ? DataType::kFloat16 : DataType::kBFloat16;
  return castTensor(castTensor(t, storage), DataType::kFloat32);
}

std::map<std::string, Tensor> roundTo(const std::map<std::string, Tensor>& feeds,
                                      cuda::Precision precision) {
  std::map<std::string, Tensor> rounded;
  for (const auto& [name, t] : feeds) rounded[name] = roundTo(t, precision);
  return rounded;
}

bool gpuAvailable() {
  installCrashBacktrace();
  static const bool available = [] {
    cuda::DeviceInfo info = cuda::probeCudaDevice();
    if (!info.available) {
      std::fprintf(stderr, "*** GPU TESTS SKIPPED: no CUDA device: %s ***\n", info.reason.c_str());
    }
    return info.available;
  }();
  return available;
}

GpuOpTest::GpuOpTest(const std::string& opType, int opset, const std::string& domain) {
  m_node.opType = opType;
  m_node.domain = domain;
  m_node.opset = opset;
  m_node.name = opType + "_under_test";
}

static Attribute makeInt(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}

GpuOpTest& GpuOpTest::attr(const std::string& name, int64_t value) {
  m_node.attributes[name] = makeInt(value);
  return *this;
}
GpuOpTest& GpuOpTest::attr(const std::string& name, float value) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = value;
  m_node.attributes[name] = a;
  return *this;
}
GpuOpTest& GpuOpTest::attr(const std::string& name, const std::string& value) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = value;
  m_node.attributes[name] = a;
  return *this;
}
GpuOpTest& GpuOpTest::attr(const std::string& name, const std::vector<int64_t>& values) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = values;
  m_node.attributes[name] = a;
  return *this;
}
GpuOpTest& GpuOpTest::attr(const std::string& name, const std::vector<float>& values) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = values;
  m_node.attributes[name] = a;
  return *this;
}

GpuOpTest& GpuOpTest::attr(const std::string& name, const Tensor& value) {
  Attribute a;
  a.kind = Attribute::Kind::kTensor;
  a.t = value;
  m_node.attributes[name] = a;
  return *this;
}

GpuOpTest& GpuOpTest::input(const Tensor& tensor) {
  m_inputs.push_back(tensor);
  m_isConstant.push_back(false);
  return *this;
}
GpuOpTest& GpuOpTest::constant(const Tensor& tensor) {
  m_inputs.push_back(tensor);
  m_isConstant.push_back(true);
  return *this;
}
GpuOpTest& GpuOpTest::missingInput() {
  m_inputs.push_back(Tensor());
  m_isConstant.push_back(false);
  return *this;
}
GpuOpTest& GpuOpTest::allowHostFallback() {
  m_allowFallback = true;
  return *this;
}

GpuOpTest& GpuOpTest::outputs(int count) {
  m_outputs = count;
  return *this;
}

Network GpuOpTest::buildNetwork(const std::vector<Tensor>& inputs) const {
  Network network;
  network.irVersion = 8;
  network.opsets[m_node.domain] = m_node.opset;
  if (!m_node.domain.empty()) network.opsets[""] = 17;
  Node node = m_node;
  node.inputs.clear();
  node.outputs.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      node.inputs.push_back("");
      continue;
    }
    std::string name = "in" + std::to_string(i);
    node.inputs.push_back(name);
    if (m_isConstant[i]) {
      network.graph.initializers[name] = inputs[i];
    } else {
      ValueInfo info;
      info.name = name;
      info.type = inputs[i].type();
      info.hasShape = true;
      for (int64_t d : inputs[i].shape()) info.shape.push_back(DimExpr(d));
      network.graph.inputs.push_back(info);
    }
  }
  for (int i = 0; i < m_outputs; ++i) {
    std::string name = "out" + std::to_string(i);
    node.outputs.push_back(name);
    ValueInfo info;
    info.name = name;
    network.graph.outputs.push_back(info);
  }
  network.graph.nodes.push_back(node);
  return network;
}

namespace {

Result<std::vector<Tensor>> runEngine(const Network& network, const std::vector<Tensor>& inputs,
                                      const std::vector<bool>& isConstant,
                                      cuda::Precision precision,
                                      std::vector<cuda::LayerInfo>* layers = nullptr) {
  cuda::EngineOptions options;
  options.precision = precision;
  options.allowTf32 = false;
  // The op's kernels on inputs in the engine's storage type, as inside a graph (a Transpose
  // would otherwise narrow its float32 graph input itself: test_cuda_data_movement's
  // CudaNarrowingTranspose tests cover that path).
  options.narrowInputsInTransposes = false;
  auto engine = cuda::Engine::create(std::make_shared<Network>(network), options);
  if (!engine.isOk()) return engine.status();
  auto context = engine.value()->createContext();
  if (!context.isOk()) return context.status();
  cuda::ExecutionContext& ctx = *context.value();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || isConstant[i]) continue;
    std::string name = "in" + std::to_string(i);
    KILN_RETURN_IF_ERROR(ctx.setInputShape(name, inputs[i].shape()));
    KILN_RETURN_IF_ERROR(ctx.setInput(name, inputs[i]));
  }
  KILN_RETURN_IF_ERROR(ctx.execute());
  if (layers) *layers = ctx.layers();
  std::vector<Tensor> outputs;
  for (const std::string& name : ctx.outputNames()) {
    auto out = ctx.getOutput(name);
    if (!out.isOk()) return out.status();
    outputs.push_back(out.value());
  }
  return outputs;
}

}  // namespace

Result<std::vector<Tensor>> GpuOpTest::runCuda(cuda::Precision precision) {
  std::vector<Tensor> inputs;
  for (const Tensor& t : m_inputs) inputs.push_back(roundTo(t, precision));
  return runEngine(buildNetwork(inputs), inputs, m_isConstant, precision);
}

std::map<std::string, Tensor> GpuOpTest::feeds() const {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < m_inputs.size(); ++i)
    if (m_inputs[i].defined() && !m_isConstant[i]) out["in" + std::to_string(i)] = m_inputs[i];
  return out;
}

void GpuOpTest::check(const std::vector<PrecisionTolerance>& tolerances) {
  for (const PrecisionTolerance& tolerance : tolerances) {
    SCOPED_TRACE(std::string(m_node.opType) + " at " + cuda::precisionName(tolerance.precision));
    std::vector<Tensor> inputs;
    for (const Tensor& t : m_inputs) inputs.push_back(roundTo(t, tolerance.precision));
    Network network = buildNetwork(inputs);
    ReferenceBackend reference(network);
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].defined() && !m_isConstant[i]) feeds["in" + std::to_string(i)] = inputs[i];
    }
    std::vector<NamedTensor> expected;
    Status status = reference.run(feeds, &expected);
    ASSERT_TRUE(status.isOk()) << "CPU reference failed: " << status.toString();
    std::vector<cuda::LayerInfo> layers;
    auto actual = runEngine(network, inputs, m_isConstant, tolerance.precision, &layers);
    ASSERT_TRUE(actual.isOk()) << actual.status().toString();
    for (const cuda::LayerInfo& layer : layers) {
      if (!m_allowFallback) {
        EXPECT_NE(layer.placement, cuda::LayerPlacement::kHostFallback)
            << layer.name << " ran on the host: " << layer.note;
      }
    }
    ASSERT_EQ(actual.value().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      expectTensorNear(actual.value()[i], expected[i].tensor, tolerance.atol, tolerance.rtol);
    }
  }
}

namespace {

// A device buffer freed on scope exit.
struct DeviceBuffer {
  void* data = nullptr;
  ~DeviceBuffer() {
    if (data) cudaFree(data);
  }
};

Status cudaStatus(cudaError_t e, const char* what) {
  return e == cudaSuccess
             ? Status::ok()
             : Status(StatusCode::kInternal, std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

Result<Tensor> runCudaPoisoned(const Network& net, const std::map<std::string, Tensor>& feeds,
                               cuda::Precision precision, const std::string& output,
                               std::vector<cuda::LayerInfo>* layers, bool runAgain,
                               const std::map<std::string, std::string>& layerChoices,
                               std::shared_ptr<cuda::CompiledCode> code) {
  cuda::EngineOptions options;
  options.precision = precision;
  options.allowTf32 = false;
  options.layerChoices = layerChoices;
  options.compiledCode = std::move(code);
  KILN_ASSIGN_OR_RETURN(auto engine, cuda::Engine::create(std::make_shared<Network>(net), options));
  KILN_ASSIGN_OR_RETURN(auto ctx, engine->createContext());
  for (const auto& [name, t] : feeds) {
    KILN_RETURN_IF_ERROR(ctx->setInputShape(name, t.shape()));
    KILN_RETURN_IF_ERROR(ctx->setInput(name, t));
  }
  KILN_ASSIGN_OR_RETURN(Shape shape, ctx->outputShape(output));
  KILN_ASSIGN_OR_RETURN(DataType type, ctx->bindingType(output));
  Tensor y(type, shape);
  // NaN for floats; -128 for int8, which a ReLU output never holds (0xFF, -1, is within
  // one step of 0, the most common ReLU output).
  const int poison = type == DataType::kInt8 ? 0x80 : 0xFF;
  DeviceBuffer out;
  KILN_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&out.data, y.byteSize()), "cudaMalloc"));
  KILN_RETURN_IF_ERROR(cudaStatus(cudaMemset(out.data, poison, y.byteSize()), "cudaMemset"));
  KILN_RETURN_IF_ERROR(ctx->setTensorAddress(output, out.data));
  KILN_RETURN_IF_ERROR(ctx->execute());
  if (runAgain) {  // the poison after the first run's work, before the second's
    KILN_RETURN_IF_ERROR(cudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    KILN_RETURN_IF_ERROR(cudaStatus(cudaMemset(out.data, poison, y.byteSize()), "cudaMemset"));
    KILN_RETURN_IF_ERROR(cudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    KILN_RETURN_IF_ERROR(ctx->execute());
  }
  KILN_RETURN_IF_ERROR(cudaStatus(
      cudaMemcpy(y.rawData(), out.data, y.byteSize(), cudaMemcpyDeviceToHost), "cudaMemcpy"));
  if (layers) *layers = ctx->layers();
  return type == DataType::kFloat32 ? y : castTensor(y, DataType::kFloat32);
}

std::string recordedCudnnChoice(const cuda::CompiledCode& code, const std::string& layer) {
  const std::vector<GeneratedKernelBinary> entries = code.cudnnRecordsForLayers({layer});
  cuda::CudnnPlanRecord record;
  if (entries.size() != 1 || !cuda::decodeCudnnPlanRecord(entries[0].cubin, &record)) {
    ADD_FAILURE() << "no single cuDNN plan record for " << layer << " (" << entries.size()
                  << " entries)";
    return "";
  }
  cuda::LayerChoice cudnn;
  cudnn.form = "cudnn";
  cudnn.hasEngine = true;
  cudnn.engine = record.choice;
  return cuda::encodeLayerChoice(cudnn);
}

}  // namespace kiln::test
