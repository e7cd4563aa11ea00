#include "cli/calibration_inputs.h"

#include <filesystem>

#include "compare/error_stats.h"
#include "kiln/calibration_data.h"
#include "kiln/reference_backend.h"

namespace kiln::cli {
namespace {

std::vector<const ValueInfo*> runtimeInputs(const Network& network) {
  std::vector<const ValueInfo*> inputs;
  for (const ValueInfo& in : network.graph.inputs)
    if (!network.graph.initializers.count(in.name)) inputs.push_back(&in);
  return inputs;
}

std::string inputNames(const std::vector<const ValueInfo*>& inputs) {
  std::string names;
  for (const ValueInfo* in : inputs) names += (names.empty() ? "" : ", ") + in->name;
  return names;
}

Result<const ValueInfo*> chooseInput(const Network& network, const std::string& name) {
  const std::vector<const ValueInfo*> inputs = runtimeInputs(network);
  if (!name.empty()) {
    for (const ValueInfo* in : inputs)
      if (in->name == name) return in;
    return invalidArgument("the model has no input '" + name + "'");
  }
  if (inputs.size() != 1)
    return invalidArgument("calibration data feeds one input; the model has " +
                           std::to_string(inputs.size()) + " (" + inputNames(inputs) +
                           "): name it with --input, or give the folder one subfolder per "
                           "input named after it");
  return inputs.front();
}

// `input`'s batches from the samples of `directory`.
Result<std::vector<std::map<std::string, Tensor>>> batchesOf(const ValueInfo& input,
                                                             const std::string& directory,
                                                             const CalibrationDataOptions& options,
                                                             int batchSize) {
  if (!input.hasShape) return invalidArgument("input '" + input.name + "' has no declared rank");
  KILN_ASSIGN_OR_RETURN(auto samples, loadCalibrationFolder(directory, options));
  return makeCalibrationBatches(samples, input.name, static_cast<int>(input.shape.size()),
                                batchSize);
}

}  // namespace

Result<std::vector<std::map<std::string, Tensor>>> loadDataBatches(
    const Network& network, const std::string& directory, const std::string& preprocessPath,
    const std::string& inputName, int batchSize) {
  PreprocessSpec spec;
  CalibrationDataOptions options;
  if (!preprocessPath.empty()) {
    KILN_ASSIGN_OR_RETURN(spec, loadPreprocessSpec(preprocessPath));
    options.preprocess = &spec;
  }
  const std::vector<const ValueInfo*> inputs = runtimeInputs(network);
  std::vector<std::string> names;
  for (const ValueInfo* in : inputs) names.push_back(in->name);
  if (inputName.empty() && hasSubfolderPerInput(names, directory)) {
    std::vector<InputSamples> all;
    for (const ValueInfo* in : inputs) {
      if (!in->hasShape) return invalidArgument("input '" + in->name + "' has no declared rank");
      const std::string folder = (std::filesystem::path(directory) / in->name).string();
      KILN_ASSIGN_OR_RETURN(auto samples, loadCalibrationFolder(folder, options));
      all.push_back({in->name, static_cast<int>(in->shape.size()), folder, std::move(samples)});
    }
    return makeMultiInputCalibrationBatches(all, batchSize);
  }
  KILN_ASSIGN_OR_RETURN(const ValueInfo* input, chooseInput(network, inputName));
  return batchesOf(*input, directory, options, batchSize);
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
