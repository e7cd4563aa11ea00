#include "cli/build_options.h"

#include "cli/tensor_args.h"
#include "kiln/constraints_file.h"

namespace kiln::cli {
namespace {

// The i-th --min-shapes/--opt-shapes/--max-shapes triple is profile i.
Status profilesFromArgs(const Args& args, std::vector<OptimizationProfile>* profiles) {
  const auto mins = args.values("min-shapes");
  const auto opts = args.values("opt-shapes");
  const auto maxs = args.values("max-shapes");
  if (mins.size() != opts.size() || opts.size() != maxs.size())
    return invalidArgument("each profile needs --min-shapes, --opt-shapes and --max-shapes (got " +
                           std::to_string(mins.size()) + ", " + std::to_string(opts.size()) + ", " +
                           std::to_string(maxs.size()) + ")");
  for (size_t p = 0; p < mins.size(); ++p) {
    std::map<std::string, Shape> lo, mid, hi;
    KILN_RETURN_IF_ERROR_CTX(parseShapeList(mins[p], &lo), "--min-shapes");
    KILN_RETURN_IF_ERROR_CTX(parseShapeList(opts[p], &mid), "--opt-shapes");
    KILN_RETURN_IF_ERROR_CTX(parseShapeList(maxs[p], &hi), "--max-shapes");
    OptimizationProfile profile;
    for (const auto& [name, shape] : mid) {
      if (!lo.count(name) || !hi.count(name))
        return invalidArgument("profile " + std::to_string(p) + ": input '" + name +
                               "' needs a min, an opt and a max shape");
      profile.inputs[name] = {lo[name], shape, hi[name]};
    }
    if (lo.size() != mid.size() || hi.size() != mid.size())
      return invalidArgument("profile " + std::to_string(p) +
                             ": --min-shapes, --opt-shapes and --max-shapes name different inputs");
    profiles->push_back(profile);
  }
  return Status::ok();
}

}  // namespace

std::set<std::string> buildValuedOptions() {
  return {"output",
          "backend",
          "precision-constraints",
          "layer-precisions",
          "layer-output-types",
          "min-shapes",
          "opt-shapes",
          "max-shapes",
          "optimization-level",
          "workspace",
          "tactic-sources",
          "profiling-verbosity",
          "timing-cache",
          "save-tactics",
          "load-tactics",
          "seed",
          "device",
          "disable-pass",
          "constraints",
          "calib-cache",
          "accuracy-data",
          "preprocess",
          "sign"};
}

std::set<std::string> buildFlagOptions() {
  return {"fp16", "bf16",  "no-tf32",  "int8",        "fp8",
          "json", "quiet", "progress", "list-passes", "strongly-typed"};
}

Status builderConfigFromArgs(const Args& args, BuilderConfig* config) {
  // trtexec's --stronglyTyped: the model's types are the precisions, so no flag may
  // ask for others.
  config->stronglyTyped = args.flag("strongly-typed");
  if (config->stronglyTyped) {
    for (const char* option : {"fp16", "bf16", "int8", "fp8"})
      if (args.flag(option))
        return invalidArgument(std::string("--") + option +
                               " does not apply to --strongly-typed: the model's types are the "
                               "precisions");
    for (const char* option :
         {"layer-precisions", "layer-output-types", "constraints", "calib-cache"})
      if (args.has(option) || args.flag(option))
        return invalidArgument(std::string("--") + option +
                               " does not apply to --strongly-typed: the model's types are the "
                               "precisions");
  }
  config->fp16 = args.flag("fp16");
  config->bf16 = args.flag("bf16");
  config->tf32 = !args.flag("no-tf32");
  config->int8 = args.flag("int8");
  config->fp8 = args.flag("fp8");
  if (args.has("calib-cache") && !config->int8)
    return invalidArgument("--calib-cache needs --int8");
  config->calibrationCachePath = args.value("calib-cache");  // cmd_build loads it
  // A constraints file (kiln debug precision, the studio) first: its mode, and its rules
  // before the command line's, which win where both match.
  if (args.has("constraints")) {
    KILN_ASSIGN_OR_RETURN(PrecisionConstraints file,
                          loadPrecisionConstraints(args.value("constraints")));
    applyPrecisionConstraints(file, config);
  }
  if (args.has("precision-constraints") &&
      !parseConstraintMode(args.value("precision-constraints"), &config->precisionConstraints))
    return invalidArgument("--precision-constraints takes none, prefer or obey");
  for (const auto& [option, rules] : {std::pair{"layer-precisions", &config->layerPrecisions},
                                      std::pair{"layer-output-types", &config->layerOutputTypes}}) {
    if (!args.has(option)) continue;
    KILN_ASSIGN_OR_RETURN(auto parsed, parseLayerPrecisionSpec(args.value(option)));
    rules->insert(rules->end(), parsed.begin(), parsed.end());
  }
  // As in trtexec: per-layer rules without a mode are preferred.
  if ((!config->layerPrecisions.empty() || !config->layerOutputTypes.empty()) &&
      !args.has("precision-constraints") && !args.has("constraints"))
    config->precisionConstraints = ConstraintMode::kPrefer;
  // An option not given keeps BuilderConfig's default: the one definition that
  // kilnBuildCommandLine() also leaves out of the line it writes.
  const BuilderConfig defaults;
  int64_t level, workspaceMiB, seed;
  KILN_RETURN_IF_ERROR(args.intValue("optimization-level", defaults.optimizationLevel, &level));
  KILN_RETURN_IF_ERROR(
      args.intValue("workspace", defaults.workspaceLimitBytes >> 20, &workspaceMiB));
  KILN_RETURN_IF_ERROR(args.intValue("seed", static_cast<int64_t>(defaults.seed), &seed));
  if (level < 0 || level > 5)
    return invalidArgument("--optimization-level " + std::to_string(level) + " is outside 0..5");
  if (workspaceMiB < 0 || workspaceMiB > (int64_t{1} << 30))
    return invalidArgument("--workspace " + std::to_string(workspaceMiB) + " MiB is out of range");
  config->optimizationLevel = static_cast<int>(level);
  config->workspaceLimitBytes = workspaceMiB << 20;
  config->seed = static_cast<uint64_t>(seed);
  config->disabledPasses = args.values("disable-pass");
  config->tacticSources = defaults.tacticSources;
  if (args.has("tactic-sources")) {
    KILN_ASSIGN_OR_RETURN(config->tacticSources,
                          parseTacticSources(args.value("tactic-sources"), defaults.tacticSources));
  }
  config->profilingVerbosity = defaults.profilingVerbosity;
  if (args.has("profiling-verbosity") &&
      !parseProfilingVerbosity(args.value("profiling-verbosity"), &config->profilingVerbosity))
    return invalidArgument("--profiling-verbosity takes none, layer_names_only or detailed");
  return profilesFromArgs(args, &config->profiles);
}

}  // namespace kiln::cli
