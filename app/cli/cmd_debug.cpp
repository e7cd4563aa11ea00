// `kiln debug precision|tactics MODEL.onnx [build options]`: the precision and
// tactic debuggers on the CPU backend, judged against the FP32 CPU reference.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/build_options.h"
#include "cli/commands.h"
#include "cli/compare_inputs.h"
#include "cli/debug_report.h"
#include "compare/precision_debug.h"
#include "compare/tactic_debug.h"
#include "kiln/builder.h"
#include "kiln/onnx_import.h"

namespace kiln::cli {

const char kDebugUsage[] =
    "usage: kiln debug precision MODEL.onnx --fp16|--bf16 [options] [build options]\n"
    "       kiln debug tactics MODEL.onnx [options] [build options]\n\n"
    "  precision: bisection over the layers (execution order) for the fewest that must\n"
    "  stay in fp32 while every other float layer runs in fp16/bf16 (obeyed) for the\n"
    "  outputs to meet the tolerance against the fp32 CPU reference. Names the ONNX nodes.\n"
    "    --save-constraints FILE   write the result as a constraints file\n"
    "                              (kiln build --constraints FILE applies it)\n"
    "    --apply PLAN.kiln         build the model with the result and save the plan\n"
    "  tactics: forces each valid tactic of each suspect layer in turn (every other\n"
    "  layer pinned to the baseline build's tactic) and reports those whose outputs\n"
    "  miss the tolerance; --rebuilds N also builds N times and reports the layers\n"
    "  whose tactic changed between builds and the builds whose outputs differ.\n"
    "    --layer NAME              a suspect layer or ONNX node (repeatable; default:\n"
    "                              every layer with two or more tactics)\n"
    "    --rebuilds N              rebuild N times; --no-each-tactic skips the forcing\n"
    "  common:\n"
    "    --atol X --rtol Y         tolerance (precision: 1e-2/1e-2; tactics: 1e-5/1e-3)\n"
    "    --shapes, --load-inputs, --seed N, --runs N, --data DIR   inputs, as kiln compare\n"
    "                              takes them\n"
    "    --json                    the result as JSON\n"
    "  Build options are kiln build's (profiles, passes, level, tactic sources, ...);\n"
    "  the backend is cpu: its layers each run in their own precision.\n"
    "exit: 0 found (precision) / no bad tactic (tactics), 1 error, 2 usage, 3 bad tactics\n";

namespace {

std::set<std::string> debugValuedOptions() {
  std::set<std::string> valued = buildValuedOptions();
  for (const char* o : {"atol", "rtol", "shapes", "load-inputs", "runs", "save-constraints",
                        "apply", "layer", "rebuilds", "data", "input", "batch"})
    valued.insert(o);
  return valued;
}

std::set<std::string> debugFlagOptions() {
  std::set<std::string> flags = buildFlagOptions();
  flags.insert("no-each-tactic");
  return flags;
}

// What both debuggers need: the model, the user's build config and the inputs.
struct DebugSetup {
  std::shared_ptr<const Network> network;
  BuilderConfig config;
  std::vector<InputSet> inputs;
  compare::Tolerance tolerance;
};

Status setUp(const Args& args, const compare::Tolerance& defaults, DebugSetup* setup) {
  if (args.value("backend", "cpu") != "cpu")
    return invalidArgument("--backend " + args.value("backend") +
                           ": debugging needs per-layer precisions and tactics, which the cpu "
                           "backend has");
  KILN_RETURN_IF_ERROR(builderConfigFromArgs(args, &setup->config));
  setup->tolerance = defaults;
  KILN_RETURN_IF_ERROR(args.doubleValue("atol", defaults.atol, &setup->tolerance.atol));
  KILN_RETURN_IF_ERROR(args.doubleValue("rtol", defaults.rtol, &setup->tolerance.rtol));
  KILN_ASSIGN_OR_RETURN(Network imported, importOnnxFile(args.positional()[1]));
  setup->network = std::make_shared<const Network>(std::move(imported));
  KILN_ASSIGN_OR_RETURN(
      setup->inputs,
      prepareInputSets(args, *setup->network, compare::optShapesOf(setup->config.profiles)));
  return Status::ok();
}

int debugPrecisionCommand(const Args& args) {
  if (args.flag("fp16") == args.flag("bf16"))
    return fail("debug", "precision: give --fp16 or --bf16 (the build to debug)", 2);
  DebugSetup setup;
  if (Status s = setUp(args, {1e-2, 1e-2}, &setup); !s.isOk()) return fail("debug", s.message());
  compare::PrecisionDebugOptions options;
  options.config = setup.config;
  options.reduced = args.flag("fp16") ? DataType::kFloat16 : DataType::kBFloat16;
  options.tolerance = setup.tolerance;
  const bool json = args.flag("json");
  options.onStep = [json](const compare::PrecisionDebugStep& step) {
    if (!json) std::fprintf(stderr, "%s\n", formatPrecisionStep(step).c_str());
  };
  const std::string model = args.positional()[1];
  auto result = compare::debugPrecision(setup.network, setup.inputs, options);
  if (!result.isOk()) return fail("debug", model + ": " + result.status().message());
  if (args.has("save-constraints")) {
    Status s = savePrecisionConstraints(result->constraints, args.value("save-constraints"));
    if (!s.isOk()) return fail("debug", s.message());
  }
  if (args.has("apply")) {
    BuilderConfig config = setup.config;
    config.layerPrecisions.clear();
    config.layerOutputTypes.clear();
    applyPrecisionConstraints(result->constraints, &config);
    auto backend = cpuBuildBackend();
    auto plan = buildPlan(setup.network, config, *backend);
    if (!plan.isOk()) return fail("debug", model + ": " + plan.status().message());
    if (Status s = savePlan(*plan, args.value("apply")); !s.isOk())
      return fail("debug", s.message());
  }
  if (json)
    std::printf("%s\n", precisionDebugJson(*result, model)
                            .dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
  else
    printReportText(
        formatPrecisionDebug(*result, model, args.value("save-constraints"), args.value("apply")));
  return 0;
}

int debugTacticsCommand(const Args& args) {
  DebugSetup setup;
  if (Status s = setUp(args, {1e-5, 1e-3}, &setup); !s.isOk()) return fail("debug", s.message());
  compare::TacticDebugOptions options;
  options.config = setup.config;
  options.tolerance = setup.tolerance;
  options.layers = args.values("layer");
  options.eachTactic = !args.flag("no-each-tactic");
  int64_t rebuilds;
  if (Status s = args.intValue("rebuilds", 0, &rebuilds); !s.isOk())
    return fail("debug", s.message(), 2);
  if (rebuilds < 0 || rebuilds > 100) return fail("debug", "--rebuilds must be in 0..100", 2);
  if (!options.eachTactic && rebuilds < 2)
    return fail("debug", "--no-each-tactic needs --rebuilds N (N >= 2)", 2);
  options.rebuilds = static_cast<int>(rebuilds);
  const bool json = args.flag("json");
  options.onBuild = [json](const std::string& what, int build) {
    if (!json) std::fprintf(stderr, "build %d: %s\n", build, escapeControlCharacters(what).c_str());
  };
  const std::string model = args.positional()[1];
  auto result = compare::debugTactics(setup.network, setup.inputs, options);
  if (!result.isOk()) return fail("debug", model + ": " + result.status().message());
  if (json)
    std::printf("%s\n", tacticDebugJson(*result, model)
                            .dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
  else
    printReportText(formatTacticDebug(*result, model));
  return result->bad.empty() ? 0 : 3;
}

}  // namespace

int runDebug(const std::vector<std::string>& argv) {
  std::vector<std::string> rewritten = argv;
  for (std::string& a : rewritten)
    if (a == "-o") a = "--output";
  Args args(debugValuedOptions(), debugFlagOptions());
  Status parsed = args.parse(rewritten);
  if (!parsed.isOk()) return fail("debug", parsed.message(), 2);
  const auto& positional = args.positional();
  if (positional.size() != 2 || (positional[0] != "precision" && positional[0] != "tactics"))
    return printUsage(kDebugUsage, 2);
  return positional[0] == "precision" ? debugPrecisionCommand(args) : debugTacticsCommand(args);
}

}  // namespace kiln::cli
