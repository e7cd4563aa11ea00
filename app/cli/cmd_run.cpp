// `kiln run MODEL.onnx`: runs a model on the CPU reference backend and prints
// output summaries and latency statistics.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/status_json.h"
#include "cli/run_report.h"
#include "cli/tensor_args.h"
#include "kiln/backends.h"
#include "kiln/cuda_runtime.h"
#include "kiln/file_io.h"
#include "kiln/onnx_import.h"
#include "kiln/plan.h"
#include "kiln/plugin_registry.h"
#include "kiln/reference_backend.h"
#include "plan_profiler.h"

namespace kiln::cli {
namespace {

// Per-node wall time accumulated over the measured iterations.
struct NodeProfile {
  std::string name, opType;
  double totalMs = 0;
};

void printProfile(const std::vector<NodeProfile>& nodes, int64_t iterations, size_t top) {
  std::vector<NodeProfile> sorted = nodes;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.totalMs > b.totalMs; });
  double total = 0;
  for (const auto& n : sorted) total += n.totalMs;
  std::printf("per-node time (CPU wall clock, mean over %lld iterations), top %zu of %zu:\n",
              static_cast<long long>(iterations), std::min(top, sorted.size()), sorted.size());
  for (size_t i = 0; i < std::min(top, sorted.size()); ++i) {
    std::printf("  %8.3f ms %5.1f%%  %-18s %s\n", sorted[i].totalMs / iterations,
                total > 0 ? 100.0 * sorted[i].totalMs / total : 0.0, sorted[i].opType.c_str(),
                sorted[i].name.c_str());
  }
}

PlanIdentity currentIdentity(const std::string& backend, int64_t device) {
  if (backend != "cuda") return cpuPlanIdentity();
  return cuda::cudaPlanIdentity(cuda::probeCudaDevice(static_cast<int>(device)));
}

// Every input shape must lie in the chosen profile's ranges.
Status checkInputsInProfile(const Plan& plan, int64_t index,
                            const std::map<std::string, Tensor>& inputs) {
  if (plan.profiles.empty()) return Status::ok();
  if (index < 0 || index >= static_cast<int64_t>(plan.profiles.size()))
    return invalidArgument("--optimization-profile " + std::to_string(index) + ": the plan has " +
                           std::to_string(plan.profiles.size()) + " profiles");
  for (const auto& [name, t] : inputs) {
    KILN_RETURN_IF_ERROR(
        checkShapeInProfile(plan.profiles[index], static_cast<int>(index), name, t.shape()));
  }
  return Status::ok();
}

}  // namespace

const char kRunUsage[] =
    "usage: kiln run MODEL.onnx|PLAN.kiln [--shapes name:1x3x224x224,...] [--load-inputs "
    "name:file.npy|.pb,...]\n"
    "                [--backend cpu|cuda] [--iterations N (10)] [--warmup MS (200; cpu: 1 "
    "run)]\n"
    "                [--seed N] [--export-output out.json] [--profile] [--json]\n"
    "  CUDA benchmark mode (as trtexec):\n"
    "    --duration S (3)        run at least S seconds after warm-up\n"
    "    --streams N (1)         N streams, each with its own execution context\n"
    "    --no-data-transfers     time without host<->device copies\n"
    "    --cuda-graph            capture the network once and replay it\n"
    "    --fp16 | --bf16         store and compute float tensors in 16 bits\n"
    "    --no-tf32               float32 GEMM/conv without TF32 tensor cores\n"
    "    --export-profile f.json per-layer times, trtexec --exportProfile shape (cpu too)\n"
    "    --export-times f.json   per-inference timestamps (trtexec --exportTimes shape)\n"
    "    --device N (0)\n"
    "  A plan (kiln build) runs on the backend it was built for, with its tactics and\n"
    "  precisions; --optimization-profile N (0) picks the profile whose ranges the\n"
    "  shapes must lie in.\n"
    "  --backend defaults to cuda when a CUDA device is usable, else cpu (with a notice).\n"
    "  --profile prints the layers that take the most time.\n"
    "  Inputs not loaded from files get seeded random non-zero data.\n";

int runRun(const std::vector<std::string>& argv) {
  Args args(
      {"shapes", "load-inputs", "iterations", "warmup", "export-output", "seed", "backend",
       "duration", "streams", "export-profile", "export-times", "device", "optimization-profile"},
      {"json", "profile", "no-data-transfers", "cuda-graph", "fp16", "bf16", "no-tf32"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("run", parsed.message(), 2);
  if (args.positional().size() != 1) return printUsage(kRunUsage, 2);
  const std::string& path = args.positional()[0];
  std::shared_ptr<const Plan> plan;
  if (looksLikePlanFile(path)) {
    auto loaded = loadPlanFile(path);
    if (!loaded.isOk()) return fail("run", loaded.status().message());
    plan = std::make_shared<const Plan>(std::move(loaded.value()));
    if (Status s = checkPluginsAvailable(*plan->network); !s.isOk())
      return fail("run", path + ": " + s.message());
  }
  std::string backendName = args.value("backend");
  if (plan) {
    if (!backendName.empty() && backendName != plan->identity.backend)
      return fail("run",
                  path + ": this plan was built for the " + plan->identity.backend +
                      " backend; rebuild it for " + backendName,
                  2);
    backendName = plan->identity.backend;
    int64_t device;
    if (Status s = args.intValue("device", 0, &device); !s.isOk())
      return fail("run", s.message(), 2);
    Status compatible = checkPlanCompatible(plan->identity, currentIdentity(backendName, device));
    if (!compatible.isOk()) return fail("run", path + ": " + compatible.message());
  }
  std::string fallbackNotice;  // printed once the model and inputs are known to be good
  if (backendName.empty()) {
    cuda::DeviceInfo device = cuda::probeCudaDevice();
    backendName = device.available ? "cuda" : "cpu";
    if (!device.available) fallbackNotice = device.reason;
  }
  if (auto found = findBackend(backendName); !found.isOk())
    return fail("run", found.status().message(), 2);
  int64_t iterations, warmup, seed;
  std::map<std::string, Shape> shapes;
  std::map<std::string, std::string> files;
  for (Status s : {args.intValue("iterations", 10, &iterations),
                   args.intValue("warmup", backendName == "cuda" ? 200 : 1, &warmup),
                   args.intValue("seed", 1, &seed), parseShapeList(args.value("shapes"), &shapes),
                   parseFileList(args.value("load-inputs"), &files)}) {
    if (!s.isOk()) return fail("run", s.message(), 2);
  }
  if (iterations < 1 || warmup < 0)
    return fail("run", "--iterations must be >= 1 and --warmup >= 0", 2);
  auto network = plan ? Result<Network>(*plan->network) : importOnnxFile(path);
  if (!network.isOk()) return failStatus("run", network.status(), args.flag("json"));
  std::map<std::string, Tensor> inputs;
  Status prepared =
      prepareInputs(network->graph, shapes, files, static_cast<uint32_t>(seed), &inputs);
  if (!prepared.isOk()) return fail("run", args.positional()[0] + ": " + prepared.message());
  if (plan) {
    int64_t profileIndex;
    Status s = args.intValue("optimization-profile", 0, &profileIndex);
    if (!s.isOk()) return fail("run", s.message(), 2);
    s = checkInputsInProfile(*plan, profileIndex, inputs);
    if (!s.isOk()) return fail("run", path + ": " + s.message());
  }
  if (backendName == "cuda") {
    auto shared = std::make_shared<Network>(std::move(network.value()));
    return runOnCuda(args, shared, inputs, iterations, static_cast<double>(warmup), plan.get());
  }
  ReferenceBackend backend(network.value());
  Status valid = backend.validateInputs(inputs);
  if (!valid.isOk())
    return failStatus("run", valid.withContext(args.positional()[0]), args.flag("json"));
  if (!fallbackNotice.empty() && !args.flag("json")) {
    std::fprintf(stderr,
                 "kiln run: no usable CUDA device (%s); running on the CPU reference backend\n",
                 fallbackNotice.c_str());
  }
  std::vector<NamedTensor> outputs;
  std::vector<double> times;
  std::vector<NodeProfile> profile(network->graph.nodes.size());
  std::map<const Node*, size_t> nodeIndex;
  for (size_t i = 0; i < network->graph.nodes.size(); ++i) {
    const Node& node = network->graph.nodes[i];
    profile[i] = {node.displayName(), node.opType};
    nodeIndex[&node] = i;
  }
  bool measuring = false;
  ReferenceRunOptions options;
  if (plan) options.layerImplementations = plan->layers;
  std::optional<inspector::LayerTimes> layerTimes;
  if (args.has("export-profile")) layerTimes.emplace(network.value());
  if (args.flag("profile") || layerTimes) {
    options.onNodeTimed = [&](const Node& node, double ms) {
      if (!measuring) return;
      profile[nodeIndex[&node]].totalMs += ms;
      if (layerTimes) layerTimes->record(node, ms);
    };
  }
  for (int64_t i = 0; i < warmup + iterations; ++i) {
    measuring = i >= warmup;
    auto start = std::chrono::steady_clock::now();
    Status ran = backend.run(inputs, &outputs, options);
    std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
    if (!ran.isOk())
      return failStatus("run", ran.withContext(args.positional()[0]), args.flag("json"));
    if (i >= warmup) times.push_back(ms.count());
  }
  LatencyStats s = summarize(times);
  nlohmann::json result = {
      {"model", path}, {"backend", "cpu"}, {"plan", plan != nullptr}, {"iterations", iterations}};
  result["latency_ms"] = {{"min", s.min}, {"mean", s.mean}, {"median", s.median},
                          {"p90", s.p90}, {"p99", s.p99},   {"max", s.max}};
  result["outputs"] = nlohmann::json::array();
  for (const NamedTensor& out : outputs) result["outputs"].push_back(tensorSummary(out, false));
  if (args.has("export-output")) {
    nlohmann::json exported = nlohmann::json::array();
    for (const NamedTensor& out : outputs) exported.push_back(tensorSummary(out, true));
    Status written = writeFileAtomically(
        args.value("export-output"),
        exported.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
        "the outputs");
    if (!written.isOk()) return fail("run", written.message());
  }
  if (layerTimes) {
    Status written = writeFileAtomically(
        args.value("export-profile"),
        layerTimes->profileJson().dump(1, ' ', false, nlohmann::json::error_handler_t::replace) +
            "\n",
        "the profile");
    if (!written.isOk()) return fail("run", written.message());
  }
  if (args.flag("profile")) {
    for (const NodeProfile& n : profile) {
      result["profile"].push_back(
          {{"name", n.name}, {"op_type", n.opType}, {"mean_ms", n.totalMs / iterations}});
    }
  }
  if (args.flag("json")) {
    std::printf("%s\n",
                result.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("model: %s (backend: %s)\n", path.c_str(),
              plan ? "cpu, the plan's tactics and precisions" : "cpu reference");
  std::printf("inputs:\n");
  for (const auto& [name, t] : inputs)
    std::printf("  %-24s %-8s %s\n", name.c_str(), dataTypeName(t.type()),
                shapeToString(t.shape()).c_str());
  std::printf("outputs:\n");
  for (size_t i = 0; i < outputs.size(); ++i) printSummary(result["outputs"][i], outputs[i].tensor);
  std::printf(
      "latency over %lld iterations (ms): min %.3f  mean %.3f  median %.3f  p90 %.3f  p99 %.3f  "
      "max %.3f\n",
      static_cast<long long>(iterations), s.min, s.mean, s.median, s.p90, s.p99, s.max);
  if (args.flag("profile")) printProfile(profile, iterations, 15);
  return 0;
}

}  // namespace kiln::cli
