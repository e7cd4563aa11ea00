#include "cli/compare_inputs.h"

#include "cli/calibration_inputs.h"
#include "cli/tensor_args.h"
#include "compare/model_runner.h"

namespace kiln::cli {

Result<std::vector<InputSet>> prepareInputSets(const Args& args, const Network& network,
                                               const std::map<std::string, Shape>& defaultShapes) {
  if (args.has("data")) {  // a folder of samples, batched as kiln calibrate batches them
    int64_t batch;
    KILN_RETURN_IF_ERROR(args.intValue("batch", 1, &batch));
    if (batch < 1 || batch > 65536) return invalidArgument("--batch must be in 1..65536");
    return loadDataBatches(network, args.value("data"), args.value("preprocess"),
                           args.value("input"), static_cast<int>(batch));
  }
  int64_t seed, runs;
  KILN_RETURN_IF_ERROR(args.intValue("seed", 1, &seed));
  KILN_RETURN_IF_ERROR(args.intValue("runs", 1, &runs));
  if (runs < 1 || runs > 1000) return invalidArgument("--runs must be in 1..1000");
  std::map<std::string, Shape> shapes = defaultShapes, given;
  std::map<std::string, std::string> files;
  KILN_RETURN_IF_ERROR(parseShapeList(args.value("shapes"), &given));
  KILN_RETURN_IF_ERROR(parseFileList(args.value("load-inputs"), &files));
  for (const auto& [name, shape] : given) shapes[name] = shape;
  for (const auto& [name, path] : files) shapes.erase(name);
  std::vector<InputSet> sets(static_cast<size_t>(runs));
  for (int64_t run = 0; run < runs; ++run) {
    KILN_RETURN_IF_ERROR(
        prepareInputs(network.graph, shapes, files, static_cast<uint32_t>(seed + run), &sets[run]));
  }
  return sets;
}

Result<std::vector<InputSet>> prepareInputSets(const Args& args, const Network& network,
                                               const std::vector<const Plan*>& plans) {
  for (const Plan* plan : plans) {
    if (plan && !compare::optShapesOf(plan->profiles).empty())
      return prepareInputSets(args, network, compare::optShapesOf(plan->profiles));
  }
  return prepareInputSets(args, network, std::map<std::string, Shape>{});
}

}  // namespace kiln::cli
