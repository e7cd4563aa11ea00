// Shared helpers of the builder and plan tests: models, builds on the CPU
// backend, and runs of a network with or without a plan's choices.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "kiln/builder.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"

namespace kiln::test {

// The PP-OCR classifier (dynamic batch, height and width) and a tiny BERT layer
// (dynamic batch and sequence), imported once.
std::shared_ptr<const Network> classifierNetwork();
std::shared_ptr<const Network> tinyBertNetwork();
// One profile for the classifier's input "x": batch min..max at 48x192.
OptimizationProfile classifierProfile(int64_t minBatch, int64_t optBatch, int64_t maxBatch);
OptimizationProfile bertProfile(Shape min, Shape opt, Shape max);

// Builds on the CPU backend; fails the test on error.
Plan buildOnCpu(std::shared_ptr<const Network> network, const BuilderConfig& config);
// Runs `network` on random inputs (seed) of `shape` for its single input; with a
// plan, through the plan's per-layer implementations.
std::vector<NamedTensor> runNetwork(const Network& network, const std::string& input,
                                    const Shape& shape, uint64_t seed, const Plan* plan = nullptr);
// A temporary file path unique to the running test.
std::string tempPath(const std::string& suffix);

}  // namespace kiln::test
