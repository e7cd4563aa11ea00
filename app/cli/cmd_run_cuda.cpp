// `kiln run --backend cuda`: builds a CUDA engine and measures it as trtexec does
// (throughput; latency, enqueue, H2D, GPU compute and D2H statistics; host
// walltime), optionally with per-layer times, and writes trtexec-shaped exports.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/status_json.h"
#include "cli/run_report.h"
#include "kiln/cuda_benchmark.h"
#include "kiln/cuda_plan_options.h"
#include "plan_profiler.h"

namespace kiln::cli {
namespace {

nlohmann::json statsArray(const LatencyStats& s) {
  // trtexec's order: min, max, mean, median, p90, p95, p99.
  return {s.min, s.max, s.mean, s.median, s.p90, s.p95, s.p99};
}

void printStats(const char* label, const LatencyStats& s) {
  std::printf(
      "%-17s min = %.5f ms, max = %.5f ms, mean = %.5f ms, median = %.5f ms, "
      "percentile(90%%) = %.5f ms, percentile(99%%) = %.5f ms\n",
      label, s.min, s.max, s.mean, s.median, s.p90, s.p99);
}

nlohmann::json timesJson(const std::vector<cuda::InferenceTiming>& inferences) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : inferences) {
    out.push_back({{"startEnqMs", t.startEnqMs},
                   {"endEnqMs", t.endEnqMs},
                   {"startH2dMs", t.startH2dMs},
                   {"endH2dMs", t.endH2dMs},
                   {"startComputeMs", t.startComputeMs},
                   {"endComputeMs", t.endComputeMs},
                   {"startD2hMs", t.startD2hMs},
                   {"endD2hMs", t.endD2hMs},
                   {"h2dMs", t.endH2dMs - t.startH2dMs},
                   {"computeMs", t.endComputeMs - t.startComputeMs},
                   {"d2hMs", t.endD2hMs - t.startD2hMs},
                   {"latencyMs", t.endD2hMs - t.startH2dMs}});
  }
  return out;
}

Status writeJson(const std::string& path, const nlohmann::json& j) {
  std::ofstream file(path);
  file << j.dump(1) << "\n";
  if (!file) return Status(StatusCode::kIoError, path + ": cannot write");
  return Status::ok();
}

}  // namespace

int runOnCuda(const Args& args, std::shared_ptr<Network> network,
              const std::map<std::string, Tensor>& inputs, int64_t iterations, double warmupMs,
              const Plan* plan) {
  const std::string model = args.positional()[0];
  cuda::EngineOptions engineOptions;
  int64_t device = 0, streams = 1;
  double duration = 3;
  for (Status s : {args.intValue("device", 0, &device), args.intValue("streams", 1, &streams),
                   args.doubleValue("duration", 3, &duration)}) {
    if (!s.isOk()) return fail("run", s.message(), 2);
  }
  engineOptions.device = static_cast<int>(device);
  if (args.flag("fp16") && args.flag("bf16"))
    return fail("run", "--fp16 and --bf16 exclude each other", 2);
  if (args.flag("fp16")) engineOptions.precision = cuda::Precision::kFloat16;
  if (args.flag("bf16")) engineOptions.precision = cuda::Precision::kBFloat16;
  engineOptions.allowTf32 = !args.flag("no-tf32");
  if (plan) {
    if (args.flag("fp16") || args.flag("bf16") || args.flag("no-tf32"))
      return fail("run", model + ": a plan's precisions were chosen at build time; rebuild it", 2);
    engineOptions = cuda::engineOptionsForPlan(*plan, engineOptions.device);
  }
  cuda::DeviceInfo info = cuda::probeCudaDevice(engineOptions.device);
  if (!info.available) return fail("run", "CUDA backend unavailable: " + info.reason);
  auto engine = cuda::Engine::create(network, engineOptions);
  if (!engine.isOk())
    return failStatus("run", engine.status().withContext(model), args.flag("json"));

  cuda::BenchmarkOptions options;
  options.warmupMs = warmupMs;
  options.iterations = iterations;
  options.durationSeconds = duration;
  options.streams = static_cast<int>(streams);
  options.dataTransfers = !args.flag("no-data-transfers");
  options.cudaGraph = args.flag("cuda-graph");
  const bool wantProfile = args.flag("profile") || args.has("export-profile");
  options.profileIterations = wantProfile ? std::max<int64_t>(iterations, 10) : 0;
  auto ran = cuda::runBenchmark(*engine.value(), inputs, options);
  if (!ran.isOk()) return failStatus("run", ran.status().withContext(model), args.flag("json"));
  const cuda::BenchmarkResult& r = ran.value();

  std::vector<double> latency, enqueue, h2d, compute, d2h;
  double totalCompute = 0;
  for (const auto& t : r.inferences) {
    latency.push_back(t.endD2hMs - t.startH2dMs);
    enqueue.push_back(t.endEnqMs - t.startEnqMs);
    h2d.push_back(t.endH2dMs - t.startH2dMs);
    compute.push_back(t.endComputeMs - t.startComputeMs);
    d2h.push_back(t.endD2hMs - t.startD2hMs);
    totalCompute += t.endComputeMs - t.startComputeMs;
  }
  LatencyStats sLatency = summarize(latency), sEnqueue = summarize(enqueue), sH2d = summarize(h2d),
               sCompute = summarize(compute), sD2h = summarize(d2h);
  const double throughput =
      r.hostWalltimeMs > 0 ? 1000.0 * r.inferences.size() / r.hostWalltimeMs : 0;
  const bool hostBound = sEnqueue.mean > 0.8 * sCompute.mean;
  int64_t fallbacks = 0, roundTrips = 0;
  for (const auto& l : r.layers) {
    if (l.placement == cuda::LayerPlacement::kHostFallback)
      ++fallbacks;
    else if (l.note.find("host round trip") != std::string::npos)
      ++roundTrips;
  }

  if (args.has("export-profile")) {
    Status s = writeJson(args.value("export-profile"),
                         inspector::cudaProfileJson(*network, r.layerTimings, r.layers));
    if (!s.isOk()) return fail("run", s.message());
  }
  if (args.has("export-times")) {
    Status s = writeJson(args.value("export-times"), timesJson(r.inferences));
    if (!s.isOk()) return fail("run", s.message());
  }
  if (args.has("export-output")) {
    nlohmann::json exported = nlohmann::json::array();
    for (const NamedTensor& out : r.outputs) exported.push_back(tensorSummary(out, true));
    Status s = writeJson(args.value("export-output"), exported);
    if (!s.isOk()) return fail("run", s.message());
  }

  nlohmann::json result = {{"model", model},
                           {"backend", "cuda"},
                           {"device", info.name},
                           {"precision", cuda::precisionName(engineOptions.precision)},
                           {"tf32", engineOptions.allowTf32},
                           {"cuda_graph", options.cudaGraph},
                           {"streams", options.streams},
                           {"data_transfers", options.dataTransfers}};
  result["performance_summary"] = {{"Throughput", throughput},
                                   {"Latency", statsArray(sLatency)},
                                   {"Enqueue Time", statsArray(sEnqueue)},
                                   {"H2D Latency", statsArray(sH2d)},
                                   {"GPU Compute Time", statsArray(sCompute)},
                                   {"D2H Latency", statsArray(sD2h)},
                                   {"Total Host Walltime", r.hostWalltimeMs / 1000.0},
                                   {"Total GPU Compute Time", totalCompute / 1000.0}};
  // The same latency object a CPU run writes (kiln sweep and the shape sweep read its
  // median); GPU compute beside it, the number a --no-data-transfers run is about.
  auto statsObject = [](const LatencyStats& s) {
    return nlohmann::json{{"min", s.min}, {"mean", s.mean}, {"median", s.median},
                          {"p90", s.p90}, {"p99", s.p99},   {"max", s.max}};
  };
  result["latency_ms"] = statsObject(sLatency);
  result["gpu_compute_ms"] = statsObject(sCompute);
  result["inferences"] = r.inferences.size();
  result["memory"] = {{"weight_bytes", r.weightBytes},
                      {"activation_bytes", r.activationBytes},
                      {"activation_bytes_without_reuse", r.activationBytesWithoutReuse}};
  result["host_fallback_layers"] = fallbacks;
  result["host_round_trip_layers"] = roundTrips;
  result["host_bound"] = hostBound;
  result["outputs"] = nlohmann::json::array();
  for (const NamedTensor& out : r.outputs) result["outputs"].push_back(tensorSummary(out, false));
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : r.layers) {
    layers.push_back({{"name", l.name},
                      {"op_type", l.opType},
                      {"placement", cuda::layerPlacementName(l.placement)},
                      {"implementation", l.implementation},
                      {"note", l.note},
                      {"workspace_bytes", l.workspaceBytes}});
  }
  result["layers"] = layers;
  if (wantProfile)
    result["profile"] = inspector::cudaProfileJson(*network, r.layerTimings, r.layers);
  if (args.flag("json")) {
    std::printf("%s\n",
                result.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }

  std::printf("model: %s (backend: cuda on %s, %s%s%s)\n", model.c_str(), info.name.c_str(),
              cuda::precisionName(engineOptions.precision),
              engineOptions.allowTf32 && engineOptions.precision == cuda::Precision::kFloat32
                  ? "+tf32"
                  : "",
              options.cudaGraph ? ", CUDA graph" : "");
  std::printf("memory: weights %.2f MiB, activations %.2f MiB (%.2f MiB without reuse)\n",
              r.weightBytes / 1048576.0, r.activationBytes / 1048576.0,
              r.activationBytesWithoutReuse / 1048576.0);
  if (fallbacks || roundTrips) {
    std::printf(
        "[W] %lld layer(s) run on the host and %lld read values on the host "
        "(see --json layers):\n",
        static_cast<long long>(fallbacks), static_cast<long long>(roundTrips));
    int shown = 0;
    for (const auto& l : r.layers) {
      if (!l.note.empty() && shown++ < 8)
        std::printf("    %s (%s): %s\n", l.name.c_str(), l.opType.c_str(), l.note.c_str());
    }
  }
  std::printf("outputs:\n");
  for (size_t i = 0; i < r.outputs.size(); ++i)
    printSummary(result["outputs"][i], r.outputs[i].tensor);
  std::printf("=== Performance summary ===\n");
  std::printf("Throughput: %.3f qps\n", throughput);
  printStats("Latency:", sLatency);
  printStats("Enqueue Time:", sEnqueue);
  printStats("H2D Latency:", sH2d);
  printStats("GPU Compute Time:", sCompute);
  printStats("D2H Latency:", sD2h);
  std::printf("Total Host Walltime: %.5f s\n", r.hostWalltimeMs / 1000.0);
  std::printf("Total GPU Compute Time: %.5f s (%zu inferences, %lld warm-up)\n",
              totalCompute / 1000.0, r.inferences.size(),
              static_cast<long long>(r.warmupInferences));
  if (hostBound) {
    std::printf(
        "[W] * Throughput may be bound by the host: enqueue takes %.4f ms per inference "
        "against %.4f ms of GPU compute, so the GPU is underused.%s\n",
        sEnqueue.mean, sCompute.mean, options.cudaGraph ? "" : " Try --cuda-graph.");
  }
  if (args.flag("profile")) {
    std::vector<cuda::LayerTiming> sorted = r.layerTimings;
    auto mean = [](const cuda::LayerTiming& l) {
      double sum = 0;
      for (float v : l.milliseconds) sum += v;
      return l.milliseconds.empty() ? 0.0 : sum / l.milliseconds.size();
    };
    std::sort(sorted.begin(), sorted.end(),
              [&](const auto& a, const auto& b) { return mean(a) > mean(b); });
    double total = 0;
    for (const auto& l : sorted) total += mean(l);
    std::printf("per-layer GPU time (CUDA events, mean of %lld runs), top 15 of %zu:\n",
                static_cast<long long>(options.profileIterations), sorted.size());
    for (size_t i = 0; i < std::min<size_t>(15, sorted.size()); ++i) {
      std::printf("  %8.4f ms %5.1f%%  %s\n", mean(sorted[i]),
                  total > 0 ? 100 * mean(sorted[i]) / total : 0.0, sorted[i].name.c_str());
    }
  }
  return 0;
}

}  // namespace kiln::cli
