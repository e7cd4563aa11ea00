// `kiln inspect MODEL.onnx`: model summary without running it.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tensor_args.h"
#include "kiln/onnx_import.h"
#include "model_summary.h"

namespace kiln::cli {

int runInspect(const std::vector<std::string>& argv) {
  Args args({"shapes"}, {"json", "help"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("inspect", parsed.message(), 2);
  if (args.flag("help") || args.positional().size() != 1) {
    std::printf(
        "usage: kiln inspect MODEL.onnx [--shapes name:1x3x224x224,...] [--json]\n"
        "  Prints inputs/outputs (symbolic dims), opsets, op histogram, parameters, FLOPs at the\n"
        "  given shapes, and unsupported nodes. Unsupported nodes do not stop the report.\n");
    return args.flag("help") ? 0 : 2;
  }
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
