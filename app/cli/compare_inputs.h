// Input sets shared by `kiln compare` and `kiln debug`: --shapes, --load-inputs,
// --seed and --runs (random sets with seeds N, N+1, ...), or --data (a calibration
// or accuracy folder).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/args.h"
#include "kiln/builder_config.h"
#include "kiln/graph.h"
#include "kiln/plan.h"

namespace kiln::cli {

using InputSet = std::map<std::string, Tensor>;

// With --data DIR (--preprocess SPEC, --input NAME, --batch N (1)): the folder's
// samples in batches, as `kiln calibrate` reads them. Otherwise one set per run for
// the graph inputs of `network`. --shapes wins over
// `defaultShapes` (a plan's or a build's profile 0 opt shapes); files are the same
// in every set. Errors name the option or the input.
Result<std::vector<InputSet>> prepareInputSets(const Args& args, const Network& network,
                                               const std::map<std::string, Shape>& defaultShapes);
// The same, with the defaults taken from the first of `plans` (null allowed) that
// has profiles.
Result<std::vector<InputSet>> prepareInputSets(const Args& args, const Network& network,
                                               const std::vector<const Plan*>& plans);

}  // namespace kiln::cli
