// Accuracy comparison of two sides (kiln compare A B): both run the same input sets;
// every graph output, and optionally every intermediate tensor both sides expose,
// gets error statistics with A as the actual and B as the expected value. Tensors
// only one side has are listed with the layer of the other side that fused them
// away, and the first intermediate (in A's execution order) outside the tolerance
// names the layers and ONNX nodes where the sides start to disagree.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compare/error_stats.h"
#include "compare/model_runner.h"

namespace kiln::compare {

struct CompareOptions {
  Tolerance tolerance;
  bool perTensor = false;  // compare the intermediates both sides expose
  int topK = 5;            // top-k agreement of outputs along the last axis; 0: off
  // Called before each input set runs (0-based), from the calling thread.
  std::function<void(int run, int runs)> onProgress;
};

// An intermediate both sides expose, with the layers that write it on each side.
struct ComparedTensor {
  ErrorStats stats;
  std::string layerA, layerB;
  std::vector<std::string> sourceNodes;  // ONNX nodes of both producing layers, A's first
};

// A tensor one side exposes and the other does not: fused into a bigger layer there.
struct FusedAwayTensor {
  std::string tensor;
  std::string presentIn;  // "A" or "B"
  std::string producer;   // the layer that writes it on the side that has it
  std::string fusedInto;  // the other side's layer holding the producer's ONNX nodes ("" unknown)
};

struct AccuracyReport {
  std::string sideA, sideB;  // descriptions
  Tolerance tolerance;
  int runs = 0;
  std::vector<ErrorStats> outputs;
  bool perTensor = false;
  std::vector<ComparedTensor> intermediates;  // A's execution order
  std::vector<FusedAwayTensor> fusedAway;
  std::string perTensorNote;  // why intermediates are missing ("B exposes none: cuda")
  // The first intermediate outside the tolerance; index into `intermediates`, -1: none.
  int firstDivergent = -1;
  bool pass = true;  // every output within the tolerance
};

// Runs both sides on every input set and compares. Errors: a side fails to run, or
// the sides' graph outputs differ (named).
Result<AccuracyReport> compareAccuracy(ModelRunner& a, ModelRunner& b,
                                       const std::vector<std::map<std::string, Tensor>>& inputSets,
                                       const CompareOptions& options);

// The report as JSON: {"a", "b", "tolerance", "runs", "pass", "outputs": [...],
// "intermediates": [...], "first_divergence", "fused_away": [...]}; `withPlots` adds
// each output's histogram and heatmap.
nlohmann::json accuracyReportJson(const AccuracyReport& report, bool withPlots);
// The inverse, for a report `kiln compare --output` wrote (the studio reads back a
// comparison run on a remote target); an error names what is malformed.
Result<AccuracyReport> accuracyReportFromJson(const nlohmann::json& json);
// The report for the terminal.
std::string formatAccuracyReport(const AccuracyReport& report);

}  // namespace kiln::compare
