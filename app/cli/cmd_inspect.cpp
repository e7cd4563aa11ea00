// `kiln inspect MODEL.onnx`: model summary without running it.
// `kiln inspect PLAN.kiln`: the engine inspector over a built plan.
// `kiln inspect GRAPH.json`: a trtexec --exportLayerInfo export of a TensorRT engine.
#include <cstdio>
#include <fstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tensor_args.h"
#include "engine_graph_onnx.h"
#include "engine_inspector.h"
#include "memory_timeline.h"
#include "engine_report.h"
#include "kiln/file_io.h"
#include "kiln/onnx_import.h"
#include "kiln/plan.h"
#include "model_summary.h"
#include "roofline.h"

namespace kiln::cli {

const char kInspectUsage[] =
    "usage: kiln inspect MODEL.onnx [--shapes name:1x3x224x224,...] [--json]\n"
    "  Prints inputs/outputs (symbolic dims), opsets, op histogram, parameters, FLOPs at the\n"
    "  given shapes, and unsupported nodes. Unsupported nodes do not stop the report.\n"
    "usage: kiln inspect PLAN.kiln [--layers] [--candidates] [--fusions] [--memory] [--json]\n"
    "                              [--roofline [--device NAME]]\n"
    "                              [--profile PROFILE.json] [--csv OUT.csv] [--export-onnx "
    "OUT.onnx]\n"
    "  Build summary; --layers adds the layer table (type, precision, tactic, time),\n"
    "  --candidates every tactic candidate with its time or why it was rejected, and the\n"
    "               choice inside it that a CUDA plan's engine builds again untimed;\n"
    "  --fusions: which ONNX nodes each engine layer came from, and back;\n"
    "  --memory: the activation bytes alive at each layer, the peak and its tensors;\n"
    "  --json writes the engine inspector JSON (TensorRT's IEngineInspector keys);\n"
    "  --profile takes the layer times from `kiln run PLAN --export-profile` output.\n"
    "usage: kiln inspect GRAPH.json [--profile PROFILE.json] [--json] [--csv OUT.csv]\n"
    "                               [--roofline [--device NAME]]\n"
    "                               [--export-onnx OUT.onnx]\n"
    "  A trtexec --exportLayerInfo export (a JSON file with \"Layers\"), optionally with\n"
    "  its --exportProfile times: the layer table (name, type, precision, tactic, time)\n"
    "  and totals; --json writes the engine report as JSON.\n"
    "  --csv writes the layer table as CSV (name, type, precision, tactic, time, %,\n"
    "  workspace, output bytes, source nodes) for a plan or an export.\n"
    "  --export-onnx OUT.onnx writes the engine's layer graph (one node per layer with its\n"
    "  precision, tactic, time and source nodes) for Netron or Model Explorer, for a plan\n"
    "  or an export.\n"
    "  --roofline [--device NAME] prints each layer's FLOPs, bytes moved, arithmetic\n"
    "  intensity, achieved TFLOP/s and GB/s (timed layers) and percent of the roofline\n"
    "  against the vendor peaks of the plan's device or of NAME (H100 SXM, H100 PCIe, H200,\n"
    "  A100 80GB, A100 40GB, L4, RTX 4090), for a plan or an export; the CSV has the\n"
    "  same columns.\n";

namespace {

Status writeText(const std::string& path, const std::string& text) {
  return writeFileAtomically(path, text, "the report");
}

// --device NAME picks the peaks of a known GPU (an export names no device; a plan's
// device may be a CPU).
int applyDevice(const Args& args, inspector::EngineReport* report) {
  if (!args.has("device")) return 0;
  if (!inspector::peaksForDevice(args.value("device"))) {
    std::string known;
    for (const inspector::DevicePeaks& p : inspector::knownDevicePeaks())
      known += (known.empty() ? "" : ", ") + p.name;
    return fail("inspect",
                "no peaks for device '" + args.value("device") + "' (known: " + known + ")", 2);
  }
  report->device = args.value("device");
  return 0;
}

// The table, JSON and CSV of an engine report, as the options ask.
int printReport(const Args& args, inspector::EngineReport report, bool table) {
  if (int rc = applyDevice(args, &report)) return rc;
  if (args.has("csv")) {
    Status s = writeText(args.value("csv"), inspector::reportCsv(report));
    if (!s.isOk()) return fail("inspect", s.message());
  }
  if (args.has("export-onnx")) {
    Status s = inspector::exportEngineGraphOnnx(report, args.value("export-onnx"));
    if (!s.isOk()) return fail("inspect", s.message());
  }
  if (args.flag("json")) {
    nlohmann::json doc = inspector::reportJson(report);
    std::printf("%s\n", doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (args.flag("roofline")) {
    const auto peaks = inspector::peaksForDevice(report.device);
    printReportText(inspector::formatRooflineTable(report, peaks ? &*peaks : nullptr));
  } else if (table) {
    printReportText(inspector::formatReportTable(report));
  }
  return 0;
}

int inspectPlan(const Args& args) {
  const std::string& path = args.positional()[0];
  auto plan = loadPlanFile(path);
  if (!plan.isOk()) return fail("inspect", plan.status().message());
  if (args.has("profile") || args.has("csv") || args.has("export-onnx") || args.flag("roofline")) {
    inspector::EngineReport report = inspector::reportFromPlan(*plan, path);
    if (args.has("profile")) {
      Status s = inspector::applyProfileFile(args.value("profile"), &report);
      if (!s.isOk()) return fail("inspect", s.message());
    }
    const bool table = args.flag("layers") || args.has("profile");
    if (!args.flag("json")) printReportText(inspector::formatBuildSummary(*plan));
    return printReport(args, report, table);
  }
  if (args.flag("json")) {
    nlohmann::json doc = inspector::engineInspectorJson(*plan);
    std::printf("%s\n", doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  printReportText(inspector::formatBuildSummary(*plan));
  if (args.flag("fusions")) printReportText(inspector::formatFusions(*plan));
  if (args.flag("memory"))
    printReportText(inspector::formatMemoryTimeline(inspector::memoryTimeline(*plan)));
  if (args.flag("layers") || args.flag("candidates"))
    printReportText(inspector::formatLayerTable(*plan, args.flag("candidates")));
  return 0;
}

int inspectTrtexec(const Args& args) {
  auto report = inspector::reportFromTrtexec(args.positional()[0], args.value("profile"));
  if (!report.isOk()) return fail("inspect", report.status().message());
  if (!args.flag("json")) printReportText(report->summary);
  return printReport(args, report.value(), true);
}

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

int runInspect(const std::vector<std::string>& argv) {
  Args args({"shapes", "profile", "csv", "export-onnx", "device"},
            {"json", "layers", "candidates", "fusions", "memory", "roofline"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("inspect", parsed.message(), 2);
  if (args.positional().size() != 1) return printUsage(kInspectUsage, 2);
  const std::string& path = args.positional()[0];
  if (looksLikePlanFile(path)) return inspectPlan(args);
  if (endsWith(path, ".json")) return inspectTrtexec(args);
  if (args.has("profile") || args.has("csv") || args.has("export-onnx") || args.flag("roofline") ||
      args.has("device"))
    return fail("inspect",
                "--profile, --csv, --export-onnx, --roofline and --device apply to a plan or a "
                "trtexec export",
                2);
  std::map<std::string, Shape> shapes;
  Status s = parseShapeList(args.value("shapes"), &shapes);
  if (!s.isOk()) return fail("inspect", s.message(), 2);
  ImportOptions options;
  options.checkSupport = false;  // inspect reports unsupported nodes instead of refusing
  auto network = importOnnxFile(path, options);
  if (!network.isOk()) return fail("inspect", network.status().message());
  auto summary = inspector::summarizeModel(network.value(), shapes);
  if (!summary.isOk()) return fail("inspect", path + ": " + summary.status().message());
  if (args.flag("json"))
    std::printf("%s\n", summary->dump(1).c_str());
  else
    std::printf("%s", inspector::formatModelSummary(summary.value()).c_str());
  return 0;
}

}  // namespace kiln::cli
