// `kiln device --calibrate`'s microbenchmarks (device_calibration.h).
#include "cli/device_calibration.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <vector>

#include "kiln/cuda_runtime.h"

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string today() {
  char date[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::localtime(&now));
  return date;
}

// Best of `runs` timings of `work` after one untimed run.
template <class Work>
double bestSeconds(int runs, Work work) {
  work();
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    work();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

ValueInfo floatInput(const std::string& name, const Shape& shape) {
  ValueInfo v{name, DataType::kFloat32, true, {}};
  for (int64_t d : shape) v.shape.push_back(DimExpr(d));
  return v;
}

Tensor filledTensor(const Shape& shape, float scale) {
  Tensor t(DataType::kFloat32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = scale * static_cast<float>(i % 7 - 3);
  return t;
}

// One node (`op` on input "x", and initializer "w" when given) as a network.
std::shared_ptr<Network> oneNode(const std::string& op, const Shape& x, const Tensor* w) {
  auto net = std::make_shared<Network>();
  net->irVersion = 8;
  net->opsets[""] = 17;
  Graph& g = net->graph;
  g.name = "kiln_device_" + op;
  g.inputs.push_back(floatInput("x", x));
  Node node;
  node.opType = op;
  node.name = op + "_0";
  node.index = 0;
  node.opset = 17;  // the engine's kernel lookup reads the node's own opset (importer-set)
  node.inputs = {"x"};
  if (w) {
    g.initializers["w"] = *w;
    node.inputs.push_back("w");
  }
  node.outputs = {"y"};
  g.nodes.push_back(node);
  g.outputs.push_back(ValueInfo{"y", DataType::kFloat32, false, {}});
  return net;
}

// The median GPU milliseconds of the network's node at `precision`.
Result<double> layerMilliseconds(const std::shared_ptr<Network>& net, const Tensor& x,
                                 cuda::Precision precision, bool tf32, int ordinal) {
  cuda::EngineOptions options;
  options.device = ordinal;
  options.precision = precision;
  options.allowTf32 = tf32;
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<cuda::Engine> engine, cuda::Engine::create(net, options));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::ExecutionContext> context, engine->createContext());
  KILN_RETURN_IF_ERROR(context->setInput("x", x));
  for (int i = 0; i < 3; ++i) KILN_RETURN_IF_ERROR(context->execute());
  context->setProfilingHeadStart(5.0);
  context->setProfiling(true);
  for (int i = 0; i < 10; ++i) KILN_RETURN_IF_ERROR(context->execute());
  // The node's own layer: an FP16 engine also converts the float32 input and output.
  std::vector<float> times;
  for (const cuda::LayerTiming& layer : context->takeLayerTimings())
    if (layer.name == net->graph.nodes[0].name) times = layer.milliseconds;
  if (times.empty())
    return internalError(net->graph.name + ": the profiled runs did not time layer '" +
                         net->graph.nodes[0].name + "'");
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return static_cast<double>(times[times.size() / 2]);
}

// FLOP/s of an n^3 MatMul (x times a constant weight) on the CUDA engine.
Result<double> gemmFlops(int64_t n, cuda::Precision precision, bool tf32, int ordinal) {
  const Tensor w = filledTensor({n, n}, 0.01f);
  KILN_ASSIGN_OR_RETURN(
      double ms, layerMilliseconds(oneNode("MatMul", {n, n}, &w), filledTensor({n, n}, 0.01f),
                                   precision, tf32, ordinal));
  return 2.0 * static_cast<double>(n) * n * n / (ms * 1e-3);
}

}  // namespace

inspector::MeasuredPeaks calibrateHostCpu(const std::string& name) {
  constexpr int n = 2048;
  std::vector<float> a(size_t{n} * n), b(size_t{n} * n), c(size_t{n} * n);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
    b[i] = static_cast<float>(i % 13) * 0.02f - 0.12f;
  }
  const double gemm = bestSeconds(5, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
  });
  constexpr size_t kBytes = size_t{256} << 20;
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  const double copy = bestSeconds(5, [&] { std::memcpy(to.data(), from.data(), kBytes); });
  inspector::MeasuredPeaks m;
  m.peaks.name = name;
  m.peaks.fp32Flops = 2.0 * n * n * n / gemm;
  m.peaks.dramBytesPerSecond = 2.0 * kBytes / copy;  // each byte read once and written once
  m.date = today();
  m.method = "OpenBLAS sgemm 2048^3 and memcpy 256 MiB, best of 5 each";
  return m;
}

Result<inspector::MeasuredPeaks> calibrateCudaDevice(int ordinal) {
  const cuda::DeviceInfo device = cuda::probeCudaDevice(ordinal);
  if (!device.available) return unsupported("no usable CUDA device: " + device.reason);
  inspector::MeasuredPeaks m;
  m.peaks.name = device.name;
  KILN_ASSIGN_OR_RETURN(m.peaks.fp16Flops,
                        gemmFlops(8192, cuda::Precision::kFloat16, true, ordinal));
  KILN_ASSIGN_OR_RETURN(m.peaks.fp32Flops,
                        gemmFlops(4096, cuda::Precision::kFloat32, false, ordinal));
  {
    constexpr int64_t elements = int64_t{1} << 28;  // 1 GiB of float32
    KILN_ASSIGN_OR_RETURN(double ms, layerMilliseconds(oneNode("Relu", {elements}, nullptr),
                                                       filledTensor({elements}, 1.0f),
                                                       cuda::Precision::kFloat32, true, ordinal));
    m.peaks.dramBytesPerSecond = 2.0 * elements * 4 / (ms * 1e-3);
  }
  m.date = today();
  m.method =
      "Kiln's CUDA engine: MatMul 8192^3 FP16, 4096^3 FP32 (no TF32), Relu over 1 GiB; "
      "median layer time of 10 profiled runs";
  return m;
}

}  // namespace kiln::cli
