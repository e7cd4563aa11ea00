#include "cli/calibration_inputs.h"

#include "compare/error_stats.h"
#include "kiln/calibration_data.h"
#include "kiln/reference_backend.h"

namespace kiln::cli {
namespace {

Result<const ValueInfo*> chooseInput(const Network& network, const std::string& name) {
  std::vector<const ValueInfo*> inputs;
  for (const ValueInfo& in : network.graph.inputs)
    if (!network.graph.initializers.count(in.name)) inputs.push_back(&in);
  if (!name.empty()) {
    for (const ValueInfo* in : inputs)
      if (in->name == name) return in;
    return invalidArgument("the model has no input '" + name + "'");
  }
  if (inputs.size() != 1) {
    std::string names;
    for (const ValueInfo* in : inputs) names += (names.empty() ? "" : ", ") + in->name;
    return invalidArgument("calibration data feeds one input; the model has " +
                           std::to_string(inputs.size()) + " (" + names +
                           "): name it with --input");
  }
  return inputs.front();
}

}  // namespace

Result<std::vector<std::map<std::string, Tensor>>> loadDataBatches(
    const Network& network, const std::string& directory, const std::string& preprocessPath,
    const std::string& inputName, int batchSize) {
  KILN_ASSIGN_OR_RETURN(const ValueInfo* input, chooseInput(network, inputName));
  if (!input->hasShape) return invalidArgument("input '" + input->name + "' has no declared rank");
  PreprocessSpec spec;
  CalibrationDataOptions options;
  if (!preprocessPath.empty()) {
    KILN_ASSIGN_OR_RETURN(spec, loadPreprocessSpec(preprocessPath));
    options.preprocess = &spec;
  }
  KILN_ASSIGN_OR_RETURN(auto samples, loadCalibrationFolder(directory, options));
  return makeCalibrationBatches(samples, input->name, static_cast<int>(input->shape.size()),
                                batchSize);
}

Result<std::string> int8AccuracyReport(const Network& network, const Plan& plan,
                                       const std::vector<std::map<std::string, Tensor>>& batches) {
  ReferenceBackend reference(network);
  ReferenceBackend engine(*plan.network);
  ReferenceRunOptions planOptions;
  planOptions.layerImplementations = plan.layers;
  std::vector<std::vector<NamedTensor>> expected, actual;
  for (size_t b = 0; b < batches.size(); ++b) {
    std::vector<NamedTensor> ref, out;
    KILN_RETURN_IF_ERROR_CTX(reference.run(batches[b], &ref),
                             "FP32 reference, batch " + std::to_string(b));
    KILN_RETURN_IF_ERROR_CTX(engine.run(batches[b], &out, planOptions),
                             "plan, batch " + std::to_string(b));
    expected.push_back(std::move(ref));
    actual.push_back(std::move(out));
  }
  // Top-1 only: the report is about the INT8 plan keeping the FP32 answer.
  KILN_ASSIGN_OR_RETURN(
      auto stats,
      compare::compareOutputRuns(actual, expected, compare::defaultTolerance(DataType::kFloat32),
                                 /*topK=*/1));
  return compare::formatAccuracySummary(stats);
}

}  // namespace kiln::cli
