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

// A model of several inputs fed from DIR/<input name>/ each: the k-th sample of every
// folder (name order) belongs together; equal sample counts and batch rows required.
Result<std::vector<std::map<std::string, Tensor>>> multiInputBatches(
    const std::vector<const ValueInfo*>& inputs, const std::string& directory,
    const CalibrationDataOptions& options, int batchSize) {
  std::vector<std::map<std::string, Tensor>> merged;
  for (const ValueInfo* input : inputs) {
    const std::string folder = (std::filesystem::path(directory) / input->name).string();
    KILN_ASSIGN_OR_RETURN(auto batches, batchesOf(*input, folder, options, batchSize));
    if (merged.empty()) {
      merged = std::move(batches);
      continue;
    }
    if (batches.size() != merged.size())
      return invalidArgument(folder + ": " + std::to_string(batches.size()) +
                             " batches of samples, unlike the first input's " +
                             std::to_string(merged.size()) + " (give each input as many samples)");
    for (size_t b = 0; b < batches.size(); ++b) {
      Tensor& t = batches[b].begin()->second;
      const Tensor& first = merged[b].begin()->second;
      if (t.dim(0) != first.dim(0))
        return invalidArgument(folder + ": batch " + std::to_string(b) + " has " +
                               std::to_string(t.dim(0)) + " rows, unlike the first input's " +
                               std::to_string(first.dim(0)));
      merged[b].emplace(input->name, std::move(t));
    }
  }
  return merged;
}

bool hasSubfolderPerInput(const std::vector<const ValueInfo*>& inputs,
                          const std::string& directory) {
  std::error_code ec;
  for (const ValueInfo* input : inputs)
    if (!std::filesystem::is_directory(std::filesystem::path(directory) / input->name, ec))
      return false;
  return !inputs.empty();
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
  if (inputName.empty() && inputs.size() > 1 && hasSubfolderPerInput(inputs, directory))
    return multiInputBatches(inputs, directory, options, batchSize);
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
