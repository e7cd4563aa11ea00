// `kiln advise PLAN.kiln|GRAPH.json [--profile P.json] [--json]`: the advisor's findings
// (inspector/advisor.h) for a Kiln plan or a TensorRT engine exported by trtexec.
#include <cstdio>

#include "advisor.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "engine_report.h"
#include "kiln/plan.h"

namespace kiln::cli {
namespace {

void printUsage() {
  std::printf(
      "usage: kiln advise PLAN.kiln|GRAPH.json [--profile PROFILE.json] [--json]\n"
      "  Performance lint of an engine: a Kiln plan, or a TensorRT engine exported by\n"
      "  trtexec (--exportLayerInfo, with its --exportProfile for times). Each finding has a\n"
      "  rule id, a severity, the layers it hits, their summed time when the engine is timed,\n"
      "  and a fix. Rules: reformat-changes-type, layout-copies, int8-conv-wide-output,\n"
      "  channel-alignment, fp32-layers. --json writes {\"findings\": [...]}.\n"
      "  Exit 0 with findings or without; 1 when the file cannot be read.\n");
}

}  // namespace

int runAdvise(const std::vector<std::string>& argv) {
  Args args({"profile"}, {"json", "help"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("advise", parsed.message(), 2);
  if (args.flag("help") || args.positional().size() != 1) {
    printUsage();
    return args.flag("help") ? 0 : 2;
  }
  const std::string& path = args.positional()[0];
  inspector::EngineReport report;
  if (looksLikePlanFile(path)) {
    auto plan = loadPlanFile(path);
    if (!plan.isOk()) return fail("advise", plan.status().message());
    report = inspector::reportFromPlan(*plan, path);
    if (args.has("profile")) {
      Status s = inspector::applyProfileFile(args.value("profile"), &report);
      if (!s.isOk()) return fail("advise", s.message());
    }
  } else {  // a trtexec --exportLayerInfo export (or Kiln's report JSON)
    auto loaded = inspector::reportFromTrtexec(path, args.value("profile"));
    if (!loaded.isOk()) return fail("advise", loaded.status().message());
    report = std::move(loaded.value());
  }
  const std::vector<inspector::Finding> findings = inspector::adviseEngine(report);
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
