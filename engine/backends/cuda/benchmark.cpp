// runBenchmark: trtexec-style inference timing (see kiln/cuda_benchmark.h).
// Each stream is a "lane" with its own context, pinned host copies of the inputs
// and outputs, and two slots of events so the host can enqueue one inference
// ahead of the GPU on every lane.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "backends/cuda/cuda_check.h"
#include "kiln/cuda_benchmark.h"

namespace kiln::cuda {
namespace {

using Clock = std::chrono::steady_clock;

struct PinnedBuffer {
  void* host = nullptr;
  void* device = nullptr;
  size_t bytes = 0;
  ~PinnedBuffer() {
    if (host) cudaFreeHost(host);
  }
};

struct Slot {
  cudaEvent_t h2dStart = nullptr, computeStart = nullptr, computeEnd = nullptr, d2hEnd = nullptr;
  double startEnqMs = 0, endEnqMs = 0;
  bool busy = false, measured = false;
};

struct Lane {
  std::unique_ptr<ExecutionContext> context;
  cudaStream_t stream = nullptr;
  std::vector<std::unique_ptr<PinnedBuffer>> inputs, outputs;
  Slot slots[2];
  int next = 0;
  ~Lane() {
    for (Slot& s : slots) {
      for (cudaEvent_t e : {s.h2dStart, s.computeStart, s.computeEnd, s.d2hEnd})
        if (e) cudaEventDestroy(e);
    }
    if (stream) cudaStreamDestroy(stream);
  }
};

class Benchmark {
 public:
  Benchmark(Engine& engine, const BenchmarkOptions& options)
      : m_engine(engine), m_options(options) {}
  ~Benchmark() {
    if (m_base) cudaEventDestroy(m_base);
  }

  Status setUp(const std::map<std::string, Tensor>& inputs) {
    for (int l = 0; l < std::max(1, m_options.streams); ++l) {
      auto lane = std::make_unique<Lane>();
      auto context = m_engine.createContext();
      if (!context.isOk()) return context.status();
      lane->context = std::move(context.value());
      KILN_CUDA_CHECK(cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking));
      for (Slot& s : lane->slots) {
        for (cudaEvent_t* e : {&s.h2dStart, &s.computeStart, &s.computeEnd, &s.d2hEnd})
          KILN_CUDA_CHECK(cudaEventCreate(e));
      }
      ExecutionContext& ctx = *lane->context;
      for (const std::string& name : ctx.inputNames()) {
        auto it = inputs.find(name);
        if (it == inputs.end()) return invalidArgument("input '" + name + "' was not given");
        KILN_RETURN_IF_ERROR(ctx.setInputShape(name, it->second.shape()));
      }
      for (const std::string& name : ctx.inputNames()) {
        auto it = inputs.find(name);
        KILN_RETURN_IF_ERROR(ctx.setInput(name, it->second, lane->stream));
        auto pinned = std::make_unique<PinnedBuffer>();
        pinned->bytes = it->second.byteSize();
        if (pinned->bytes) {
          KILN_CUDA_CHECK(cudaMallocHost(&pinned->host, pinned->bytes));
          std::memcpy(pinned->host, it->second.rawData(), pinned->bytes);
        }
        auto device = ctx.tensorAddress(name);
        if (!device.isOk()) return device.status();
        pinned->device = device.value();
        lane->inputs.push_back(std::move(pinned));
      }
      KILN_RETURN_IF_ERROR(ctx.setUseCudaGraph(m_options.cudaGraph));
      // First inference: plans memory, picks library algorithms, captures the graph.
      KILN_RETURN_IF_ERROR(ctx.enqueue(lane->stream));
      KILN_CUDA_CHECK(cudaStreamSynchronize(lane->stream));
      for (const std::string& name : ctx.outputNames()) {
        auto out = ctx.getOutput(name, lane->stream);
        if (!out.isOk()) return out.status();
        auto pinned = std::make_unique<PinnedBuffer>();
        pinned->bytes = out.value().byteSize();
        if (pinned->bytes) KILN_CUDA_CHECK(cudaMallocHost(&pinned->host, pinned->bytes));
        auto device = ctx.tensorAddress(name);
        if (!device.isOk()) return device.status();
        pinned->device = device.value();
        lane->outputs.push_back(std::move(pinned));
      }
      m_lanes.push_back(std::move(lane));
    }
    KILN_CUDA_CHECK(cudaEventCreate(&m_base));
    KILN_CUDA_CHECK(cudaEventRecord(m_base, m_lanes[0]->stream));
    KILN_CUDA_CHECK(cudaEventSynchronize(m_base));
    m_hostBase = Clock::now();
    return Status::ok();
  }

  double hostMs() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - m_hostBase).count();
  }

  Status harvest(Lane& lane, Slot& slot, int laneIndex) {
    KILN_CUDA_CHECK(cudaEventSynchronize(slot.d2hEnd));
    slot.busy = false;
    if (!slot.measured) return Status::ok();
    InferenceTiming t;
    float ms = 0;
    KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, m_base, slot.h2dStart));
    t.startH2dMs = ms;
    KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, m_base, slot.computeStart));
    t.endH2dMs = t.startComputeMs = ms;
    KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, m_base, slot.computeEnd));
    t.endComputeMs = t.startD2hMs = ms;
    KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, m_base, slot.d2hEnd));
    t.endD2hMs = ms;
    t.startEnqMs = slot.startEnqMs;
    t.endEnqMs = slot.endEnqMs;
    t.stream = laneIndex;
    m_result.inferences.push_back(t);
    return Status::ok();
  }

  Status launch(int laneIndex, bool measured) {
    Lane& lane = *m_lanes[laneIndex];
    Slot& slot = lane.slots[lane.next];
    lane.next ^= 1;
    if (slot.busy) KILN_RETURN_IF_ERROR(harvest(lane, slot, laneIndex));
    slot.measured = measured;
    slot.busy = true;
    KILN_CUDA_CHECK(cudaEventRecord(slot.h2dStart, lane.stream));
    if (m_options.dataTransfers) {
      for (const auto& in : lane.inputs) {
        if (in->bytes)
          KILN_CUDA_CHECK(cudaMemcpyAsync(in->device, in->host, in->bytes, cudaMemcpyHostToDevice,
                                          lane.stream));
      }
    }
    KILN_CUDA_CHECK(cudaEventRecord(slot.computeStart, lane.stream));
    slot.startEnqMs = hostMs();
    KILN_RETURN_IF_ERROR(lane.context->enqueue(lane.stream));
    slot.endEnqMs = hostMs();
    KILN_CUDA_CHECK(cudaEventRecord(slot.computeEnd, lane.stream));
    if (m_options.dataTransfers) {
      for (const auto& out : lane.outputs) {
        if (out->bytes)
          KILN_CUDA_CHECK(cudaMemcpyAsync(out->host, out->device, out->bytes,
                                          cudaMemcpyDeviceToHost, lane.stream));
      }
    }
    KILN_CUDA_CHECK(cudaEventRecord(slot.d2hEnd, lane.stream));
    return Status::ok();
  }

  Status drain() {
    for (size_t l = 0; l < m_lanes.size(); ++l) {
      for (Slot& slot : m_lanes[l]->slots) {
        if (slot.busy) KILN_RETURN_IF_ERROR(harvest(*m_lanes[l], slot, static_cast<int>(l)));
      }
    }
    return Status::ok();
  }

  Status run() {
    int lane = 0;
    const int lanes = static_cast<int>(m_lanes.size());
    while (hostMs() < m_options.warmupMs) {
      KILN_RETURN_IF_ERROR(launch(lane, false));
      lane = (lane + 1) % lanes;
      ++m_result.warmupInferences;
    }
    KILN_RETURN_IF_ERROR(drain());
    const double start = hostMs();
    int64_t launched = 0;
    while (launched < m_options.iterations || hostMs() - start < m_options.durationSeconds * 1000) {
      KILN_RETURN_IF_ERROR(launch(lane, true));
      lane = (lane + 1) % lanes;
      ++launched;
    }
    KILN_RETURN_IF_ERROR(drain());
    std::sort(
        m_result.inferences.begin(), m_result.inferences.end(),
        [](const InferenceTiming& a, const InferenceTiming& b) { return a.endD2hMs < b.endD2hMs; });
    if (!m_result.inferences.empty()) {
      double first = m_result.inferences.front().startH2dMs;
      for (const auto& t : m_result.inferences) first = std::min(first, t.startH2dMs);
      m_result.hostWalltimeMs = m_result.inferences.back().endD2hMs - first;
    }
    ExecutionContext& ctx = *m_lanes[0]->context;
    for (const std::string& name : ctx.outputNames()) {
      auto out = ctx.getOutput(name, m_lanes[0]->stream);
      if (!out.isOk()) return out.status();
      m_result.outputs.push_back({name, out.value()});
    }
    if (m_options.profileIterations > 0) {
      ctx.setProfiling(true);
      ctx.takeLayerTimings();
      for (int64_t i = 0; i < m_options.profileIterations; ++i) {
        KILN_RETURN_IF_ERROR(ctx.enqueue(m_lanes[0]->stream));
      }
      KILN_CUDA_CHECK(cudaStreamSynchronize(m_lanes[0]->stream));
      m_result.layerTimings = ctx.takeLayerTimings();
      ctx.setProfiling(false);
    }
    m_result.layers = ctx.layers();
    m_result.activationBytes = ctx.activationBytes();
    m_result.activationBytesWithoutReuse = ctx.activationBytesWithoutReuse();
    m_result.weightBytes = m_engine.weightBytes();
    return Status::ok();
  }

  BenchmarkResult& result() { return m_result; }

 private:
  Engine& m_engine;
  BenchmarkOptions m_options;
  std::vector<std::unique_ptr<Lane>> m_lanes;
  cudaEvent_t m_base = nullptr;
  Clock::time_point m_hostBase;
  BenchmarkResult m_result;
};

}  // namespace

Result<BenchmarkResult> runBenchmark(Engine& engine, const std::map<std::string, Tensor>& inputs,
                                     const BenchmarkOptions& options) {
  if (options.streams < 1) return invalidArgument("--streams must be at least 1");
  if (options.iterations < 1) return invalidArgument("--iterations must be at least 1");
  KILN_CUDA_CHECK(cudaSetDevice(engine.options().device));
  Benchmark benchmark(engine, options);
  KILN_RETURN_IF_ERROR(benchmark.setUp(inputs));
  KILN_RETURN_IF_ERROR(benchmark.run());
  return std::move(benchmark.result());
}

}  // namespace kiln::cuda
