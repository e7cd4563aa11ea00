// `kiln build MODEL.onnx -o PLAN.kiln`: the trtexec --saveEngine of Kiln.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/build_options.h"
#include "cli/calibration_inputs.h"
#include "cli/commands.h"
#include "cli/status_json.h"
#include "engine_inspector.h"
#include "kiln/builder.h"
#include "kiln/calibration.h"
#include "kiln/backends.h"
#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/plan_signature.h"
#include "kiln/timing_cache.h"

namespace kiln::cli {

const char kBuildUsage[] =
    "usage: kiln build MODEL.onnx -o PLAN.kiln [options]\n"
    "  --backend cpu|cuda (cpu)         backend the plan is built for and runs on\n"
    "  --fp16 | --bf16 | --no-tf32      enable 16-bit precisions / disable TF32 (fp32 always "
    "on)\n"
    "  --int8                           INT8 layers: from --calib-cache (implicit) or the\n"
    "                                   model's QuantizeLinear/DequantizeLinear (explicit)\n"
    "  --calib-cache FILE               kiln calibrate's range per tensor (needs --int8)\n"
    "  --accuracy-data DIR              after the build, compare the plan with FP32 on\n"
    "                                   these samples (CPU backend; --preprocess SPEC for\n"
    "                                   images, else the cache's spec)\n"
    "  --fp8                            FP8 (E4M3) GEMMs from the model's float8e4m3fn\n"
    "                                   QuantizeLinear/DequantizeLinear (explicit only; CUDA\n"
    "                                   on compute capability 8.9+, else host fallback)\n"
    "  --strongly-typed                 precisions from the model's types (a strongly typed\n"
    "                                   ONNX: kiln export-onnx, TensorRT 11); refuses the\n"
    "                                   precision flags and rules\n"
    "  --precision-constraints none|prefer|obey\n"
    "  --layer-precisions SPEC          e.g. '*:fp16,Conv_3:fp32' (implies prefer)\n"
    "  --layer-output-types SPEC        storage type of layer outputs, same syntax\n"
    "  --constraints FILE               mode and rules from a constraints file (kiln debug\n"
    "                                   precision); rules given here win over the file's\n"
    "  --min-shapes/--opt-shapes/--max-shapes in:1x3x224x224,...\n"
    "                                   one profile per triple; repeat for more profiles\n"
    "  --optimization-level 0..5 (3)    0: heuristics, untimed; 1..5: timed, more runs each\n"
    "  --workspace MiB (1024)           scratch limit per layer\n"
    "  --tactic-sources SPEC            e.g. '-cudnn,+cublaslt,-blas,+kiln'\n"
    "  --profiling-verbosity none|layer_names_only|detailed (detailed)\n"
    "  --timing-cache FILE              read (when present) and update a timing cache\n"
    "  --save-tactics FILE | --load-tactics FILE   write / replay every layer's tactic\n"
    "  --sign KEY.key                   write PLAN.sig, an Ed25519 signature of the plan\n"
    "                                   (`kiln keygen`; checked by --trust, docs/security.md)\n"
    "  --seed N (1)                     random timing inputs\n"
    "  --disable-pass NAME              skip a graph pass (repeatable); --list-passes lists "
    "them\n"
    "  --quiet                          no progress lines; --json: the build summary as JSON\n"
    "  --progress                       one line per timed layer (seconds since the start), "
    "also\n"
    "                                   when stderr is no terminal\n";

namespace {

nlohmann::json summaryJson(const Plan& plan, const std::string& output, bool cacheLoaded) {
  const BuildRecord& r = plan.record;
  nlohmann::json precisions = nlohmann::json::object();
  for (const LayerRecord& l : r.layers)
    precisions[dataTypeName(l.precision)] = precisions.value(dataTypeName(l.precision), 0) + 1;
  return {{"plan", output},
          {"backend", r.backend},
          {"device", plan.identity.deviceName},
          {"layers", plan.layers.size()},
          {"layer_precisions", precisions},
          {"candidates_timed", r.candidatesTimed},
          {"reference_run", r.referenceRun},
          {"timing_cache",
           {{"loaded", cacheLoaded},
            {"lookups", r.timingCache.lookups},
            {"hits", r.timingCache.hits},
            {"hit_rate", r.timingCache.hitRate()}}},
          {"unreplayed_layers", r.unreplayedLayers},
          {"build_seconds", r.buildSeconds},
          {"timing_seconds", r.timingSeconds},
          {"activation_bytes", r.activationBytes},
          {"weight_bytes", r.weightBytes},
          {"fusions", r.passes.size()},
          {"warnings", r.warnings}};
}

// --accuracy-data: the plan against the FP32 reference of the model it was built from.
// Images use --preprocess, else the spec the calibration cache names (beside it).
Result<std::string> accuracyAgainstFp32(const Args& args, const BuilderConfig& config,
                                        const CalibrationTable& calibration, const Plan& plan) {
  std::string spec = args.value("preprocess");
  if (spec.empty() && !calibration.preprocessingFile.empty())
    spec = (std::filesystem::path(config.calibrationCachePath).parent_path() /
            calibration.preprocessingFile)
               .string();
  KILN_ASSIGN_OR_RETURN(auto network, importOnnxFile(args.positional()[0]));
  KILN_ASSIGN_OR_RETURN(auto batches,
                        loadDataBatches(network, args.value("accuracy-data"), spec, "", 8));
  return int8AccuracyReport(network, plan, batches);
}

}  // namespace

int runBuild(const std::vector<std::string>& rawArgs) {
  std::vector<std::string> argv = rawArgs;
  for (std::string& a : argv)
    if (a == "-o") a = "--output";
  // trtexec's --best has no Kiln spelling; with --strongly-typed it is refused as the
  // precision flags are, by name.
  if (std::count(argv.begin(), argv.end(), "--strongly-typed") &&
      std::count(argv.begin(), argv.end(), "--best"))
    return fail("build",
                "--best does not apply to --strongly-typed: the model's types are the precisions",
                2);
  Args args(buildValuedOptions(), buildFlagOptions());
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("build", parsed.message(), 2);
  if (args.flag("list-passes")) {
    for (const PassInfo& pass : listPasses())
      std::printf("%-32s level >= %d  %s\n", pass.name.c_str(), pass.minimumLevel,
                  pass.description.c_str());
    return 0;
  }
  if (args.positional().size() != 1 || !args.has("output")) return printUsage(kBuildUsage, 2);
  const std::string model = args.positional()[0];
  const std::string output = args.value("output");
  BuilderConfig config;
  Status configured = builderConfigFromArgs(args, &config);
  if (!configured.isOk()) return fail("build", configured.message(), 2);
  int64_t device;
  if (Status s = args.intValue("device", 0, &device); !s.isOk())
    return fail("build", s.message(), 2);

  TimingCache cache;
  bool cacheLoaded = false;
  if (args.has("timing-cache")) {
    auto loaded = TimingCache::load(args.value("timing-cache"));
    if (loaded.isOk()) {
      cache = std::move(loaded.value());
      cacheLoaded = true;
    } else if (loaded.status().code() != StatusCode::kNotFound) {
      return fail("build", loaded.status().message());
    }
    config.timingCache = &cache;
  }
  TacticReplay replay;
  if (args.has("load-tactics")) {
    auto loaded = TacticReplay::load(args.value("load-tactics"));
    if (!loaded.isOk()) return fail("build", loaded.status().message());
    replay = std::move(loaded.value());
    config.replay = &replay;
  }
  CalibrationTable calibration;
  if (!config.calibrationCachePath.empty()) {
    auto loaded = loadCalibrationCache(config.calibrationCachePath);
    if (!loaded.isOk()) return fail("build", loaded.status().message());
    calibration = std::move(loaded.value());
    config.calibration = &calibration;
  }
  const std::string backendName = args.value("backend", kDefaultBuildBackend);
  if (args.has("accuracy-data") && backendName != "cpu")
    return fail("build", "--accuracy-data runs the plan on the CPU backend (--backend cpu)", 2);
  const bool quiet = args.flag("quiet") || args.flag("json");
  // The CPU backend (the default) runs float32 layers only: a 16-bit request there builds
  // an all-FP32 plan, which a user coming from trtexec (always a GPU engine) would not expect.
  if (backendName == "cpu" && (config.fp16 || config.bf16) && !quiet)
    std::fprintf(stderr,
                 "kiln build: warning: the CPU backend builds float32 layers only; --%s takes "
                 "effect with --backend cuda\n",
                 config.fp16 ? "fp16" : "bf16");
  // Progress lines only on a terminal; --progress writes one line per layer anywhere,
  // with the seconds since the build started (where a build spends its time).
  const bool terminal = isatty(fileno(stderr)) != 0;
  const bool lines = args.flag("progress");
  const auto started = std::chrono::steady_clock::now();
  config.callbacks.onProgress = [quiet, terminal, lines, started](const BuildProgress& p) {
    if ((quiet && !lines) || !(terminal || lines) || p.phase != "timing" || p.item.empty()) return;
    if (lines) {
      const std::chrono::duration<double> t = std::chrono::steady_clock::now() - started;
      std::fprintf(stderr, "[%d/%d] %.1f s timing %s\n", p.done + 1, p.total, t.count(),
                   escapeControlCharacters(p.item).c_str());
      return;
    }
    std::fprintf(stderr, "\r[%d/%d] timing %-60.60s", p.done + 1, p.total,
                 escapeControlCharacters(p.item).c_str());
  };
  config.callbacks.onWarning = [quiet](const std::string& w) {
    if (!quiet)
      std::fprintf(stderr, "kiln build: warning: %s\n", escapeControlCharacters(w).c_str());
  };

  auto backend = createBuildBackend(backendName, static_cast<int>(device), config);
  if (!backend.isOk()) return fail("build", backend.status().message());
  const bool json = args.flag("json");
  auto network = importOnnxFile(model);
  if (!network.isOk()) return failStatus("build", network.status(), json);
  auto plan = buildPlan(std::make_shared<Network>(std::move(network.value())), config, **backend);
  if (!quiet && terminal) std::fprintf(stderr, "\n");
  if (!plan.isOk()) return failStatus("build", plan.status().withContext(model), json);
  if (Status s = savePlan(*plan, output); !s.isOk()) return fail("build", s.message());
  if (args.has("sign")) {
    if (Status s = signPlanFile(output, args.value("sign")); !s.isOk())
      return fail("build", s.message());
  }
  if (config.timingCache) {
    if (Status s = cache.save(args.value("timing-cache")); !s.isOk())
      return fail("build", s.message());
  }
  if (args.has("save-tactics")) {
    Status s = TacticReplay::fromRecord(plan->record).save(args.value("save-tactics"));
    if (!s.isOk()) return fail("build", s.message());
  }
  nlohmann::json summary = summaryJson(*plan, output, cacheLoaded);
  summary["trtexec"] = trtexecCommandLine(config, model, output);
  summary["trtexec_11"] = tensorRt11CommandLines(config, model, output);
  std::string accuracy;
  if (args.has("accuracy-data")) {
    auto report = accuracyAgainstFp32(args, config, calibration, *plan);
    if (!report.isOk()) return fail("build", report.status().message());
    accuracy = *report;
    summary["accuracy"] = accuracy;
  }
  if (args.flag("json")) {
    std::printf("%s\n",
                summary.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  printReportText(inspector::formatBuildSummary(*plan));
  if (!accuracy.empty()) std::printf("accuracy against FP32:\n%s", accuracy.c_str());
  std::printf("plan written: %s\n", output.c_str());
  std::printf("same build with TensorRT: %s\n", summary["trtexec"].get<std::string>().c_str());
  std::printf("same build with TensorRT 11 (strongly typed): %s\n",
              summary["trtexec_11"].get<std::string>().c_str());
  return 0;
}

}  // namespace kiln::cli
