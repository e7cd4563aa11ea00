// `kiln advise PLAN.kiln|GRAPH.json [--profile P.json] [--shapes ...] [--run RUN.json]
// [--device NAME] [--json]`: the advisor's findings (inspector/advisor.h) for a Kiln plan
// or a TensorRT engine exported by trtexec.
#include <cstdio>

#include "advisor.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tensor_args.h"
#include "engine_report.h"
#include "kiln/json_reader.h"
#include "kiln/plan.h"

namespace kiln::cli {

const char kAdviseUsage[] =
    "usage: kiln advise PLAN.kiln|GRAPH.json [--profile PROFILE.json] [--json]\n"
    "                   [--shapes in:1x3x224x224,...] [--run RUN.json] [--device NAME]\n"
    "  Performance lint of an engine: a Kiln plan, or a TensorRT engine exported by\n"
    "  trtexec (--exportLayerInfo, with its --exportProfile for times). Each finding has a\n"
    "  rule id, a severity, the layers it hits, their summed time when the engine is timed,\n"
    "  and a fix. Rules:\n"
    "    reformat-changes-type     a reformat/copy that converts the data type\n"
    "    layout-copies             Transposes, Shuffles and reformats, summed\n"
    "    int8-conv-wide-output     an INT8 convolution writing FP16/FP32\n"
    "    channel-alignment         C or K not a multiple of 8 (16 for INT8)\n"
    "    fp32-layers               FP32 islands in a reduced-precision engine\n"
    "    host-fallback             Kiln CUDA layers that run on the host (from the build's\n"
    "                              tactic detail, or --run: a `kiln run --json` document)\n"
    "    slice-changes-type        a Slice that converts the data type\n"
    "    unfused-qdq               a Quantize/Dequantize left as a layer of its own\n"
    "    conv-not-on-tensor-cores  a non-FP32 convolution on a non-tensor-core kernel or\n"
    "                              with C < 8 (depthwise/grouped: info)\n"
    "    opt-shape-far             an opt shape > 2x away from --shapes (the shapes the\n"
    "                              engine runs at) in some dimension\n"
    "    below-roofline            layers under 10% of their roofline taking > 5% of the\n"
    "                              time (the plan's device, or --device NAME: vendor peaks)\n"
    "  --json writes {\"findings\": [...]}. Rules, thresholds and limits: docs/advisor.md.\n"
    "  Exit 0 with findings or without; 1 when a file cannot be read.\n";

namespace {

Result<inspector::EngineReport> loadReport(const Args& args) {
  const std::string& path = args.positional()[0];
  if (!looksLikePlanFile(path)) return inspector::reportFromTrtexec(path, args.value("profile"));
  KILN_ASSIGN_OR_RETURN(Plan plan, loadPlanFile(path));
  inspector::EngineReport report = inspector::reportFromPlan(plan, path);
  inspector::addPlanProfiles(plan, &report);
  if (args.has("profile"))
    KILN_RETURN_IF_ERROR(inspector::applyProfileFile(args.value("profile"), &report));
  return report;
}

// --run, --shapes and --device: what some rules need beyond the report.
Status applyOptions(const Args& args, inspector::EngineReport* report,
                    inspector::AdviseOptions* options) {
  if (args.has("run")) {
    KILN_ASSIGN_OR_RETURN(nlohmann::json run, readJsonFile(args.value("run")));
    auto marked = inspector::applyRunPlacements(run, report);
    if (!marked.isOk())
      return Status(marked.status().code(), args.value("run") + ": " + marked.status().message());
  }
  KILN_RETURN_IF_ERROR(parseShapeList(args.value("shapes"), &options->runShapes));
  if (args.has("device")) {
    if (!inspector::peaksForDevice(args.value("device")))
      return Status(StatusCode::kInvalidArgument,
                    "no peaks for device '" + args.value("device") + "'");
    report->device = args.value("device");
  }
  return Status::ok();
}

}  // namespace

int runAdvise(const std::vector<std::string>& argv) {
  Args args({"profile", "shapes", "run", "device"}, {"json"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("advise", parsed.message(), 2);
  if (args.positional().size() != 1) return printUsage(kAdviseUsage, 2);
  auto report = loadReport(args);
  if (!report.isOk()) return fail("advise", report.status().message());
  inspector::AdviseOptions options;
  Status applied = applyOptions(args, &report.value(), &options);
  if (!applied.isOk())
    return fail("advise", applied.message(),
                applied.code() == StatusCode::kInvalidArgument ? 2 : 1);
  const std::vector<inspector::Finding> findings = inspector::adviseEngine(*report, options);
  if (args.flag("json")) {
    std::printf("%s\n", inspector::adviceJson(findings)
                            .dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
  } else {
    printReportText(inspector::formatAdvice(findings));
  }
  return 0;
}

}  // namespace kiln::cli
