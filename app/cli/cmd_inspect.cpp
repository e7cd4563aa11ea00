// `kiln inspect MODEL.onnx`: model summary without running it.
// `kiln inspect PLAN.kiln`: the engine inspector over a built plan.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tensor_args.h"
#include "kiln/onnx_import.h"
#include "engine_inspector.h"
#include "kiln/plan.h"
#include "model_summary.h"

namespace kiln::cli {

namespace {

int inspectPlan(const Args& args) {
  const std::string& path = args.positional()[0];
  auto plan = loadPlanFile(path);
  if (!plan.isOk()) return fail("inspect", plan.status().message());
  if (args.flag("json")) {
    nlohmann::json doc = inspector::engineInspectorJson(*plan);
    std::printf("%s\n", doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("%s", inspector::formatBuildSummary(*plan).c_str());
  if (args.flag("fusions")) std::printf("%s", inspector::formatFusions(*plan).c_str());
  if (args.flag("layers") || args.flag("candidates"))
    std::printf("%s", inspector::formatLayerTable(*plan, args.flag("candidates")).c_str());
  return 0;
}

}  // namespace

int runInspect(const std::vector<std::string>& argv) {
  Args args({"shapes"}, {"json", "help", "layers", "candidates", "fusions"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("inspect", parsed.message(), 2);
  if (args.flag("help") || args.positional().size() != 1) {
    std::printf(
        "usage: kiln inspect MODEL.onnx [--shapes name:1x3x224x224,...] [--json]\n"
        "  Prints inputs/outputs (symbolic dims), opsets, op histogram, parameters, FLOPs at the\n"
        "  given shapes, and unsupported nodes. Unsupported nodes do not stop the report.\n"
        "usage: kiln inspect PLAN.kiln [--layers] [--candidates] [--fusions] [--json]\n"
        "  --fusions: which ONNX nodes each engine layer came from, and back;\n"
        "  Build summary; --layers adds the layer table (type, precision, tactic, time),\n"
        "  --candidates every tactic candidate with its time or why it was rejected;\n"
        "  --json writes the engine inspector JSON (TensorRT's IEngineInspector keys).\n");
    return args.flag("help") ? 0 : 2;
  }
  if (looksLikePlanFile(args.positional()[0])) return inspectPlan(args);
  std::map<std::string, Shape> shapes;
  Status s = parseShapeList(args.value("shapes"), &shapes);
  if (!s.isOk()) return fail("inspect", s.message(), 2);
  ImportOptions options;
  options.checkSupport = false;  // inspect reports unsupported nodes instead of refusing
  auto network = importOnnxFile(args.positional()[0], options);
  if (!network.isOk()) return fail("inspect", network.status().message());
  auto summary = inspector::summarizeModel(network.value(), shapes);
  if (!summary.isOk())
    return fail("inspect", args.positional()[0] + ": " + summary.status().message());
  if (args.flag("json"))
    std::printf("%s\n", summary->dump(1).c_str());
  else
    std::printf("%s", inspector::formatModelSummary(summary.value()).c_str());
  return 0;
}

}  // namespace kiln::cli
