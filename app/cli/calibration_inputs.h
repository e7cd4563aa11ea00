// Calibration data for the CLI: a folder of samples batched for a network's input
// (kiln calibrate, kiln build --accuracy-data), and the INT8 accuracy report of a plan
// against the FP32 reference on such data.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/plan.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cli {

// Batches of `directory`'s samples for `network`'s input `inputName` ("" picks the only
// input). A model of several inputs without a name is fed from one subfolder per input
// named after it (DIR/input_ids/, DIR/attention_mask/ ...): the k-th sample of each, in
// name order, belong together, and every input gets as many samples (BERT-style INT8
// calibration); otherwise it needs the name. `preprocessPath` ("" for none) is the spec
// images need. Errors name the folder, file, spec or input.
Result<std::vector<std::map<std::string, Tensor>>> loadDataBatches(
    const Network& network, const std::string& directory, const std::string& preprocessPath,
    const std::string& inputName, int batchSize);

// Runs `plan` (CPU backend) and `network` (the FP32 reference) on every batch and
// returns the per-output accuracy lines (compare/error_stats.h).
Result<std::string> int8AccuracyReport(const Network& network, const Plan& plan,
                                       const std::vector<std::map<std::string, Tensor>>& batches);

}  // namespace kiln::cli
