// Models and builds shared by the compare and debug tests: the small CNN of
// tests/data/compare (imported once), a copy with one weight perturbed, networks
// built in code, and CPU builds.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "compare/plan_judge.h"
#include "kiln/builder.h"
#include "kiln/graph.h"
#include "kiln/plan.h"

namespace kiln::test {

// tests/data/compare/small_cnn.onnx: conv1..conv3 (+ Relu), pool, gap, flat, classifier.
std::shared_ptr<const Network> smallCnn();
// The same network with conv2's weight [0,0,1,1] increased by `delta`.
std::shared_ptr<const Network> perturbedSmallCnn(float delta);
// Built in code: x [4, 16] -> fc1 (MatMul) -> relu1 -> fc2 -> tanh2 -> shrink (x 1e-3)
// -> wide_proj (MatMul, weights ~ +-2e5: past float16's range) -> rescale (x 1e-3)
// -> tanh3 -> fc4 -> sigmoid4 -> fc5 -> probs (Softmax).
std::shared_ptr<const Network> fp16OverflowNetwork();
// One random input set for the network's single float input.
std::map<std::string, Tensor> randomInputs(const Network& network, uint64_t seed);
// A CPU build; fails the test on error.
std::shared_ptr<const Plan> buildCpu(std::shared_ptr<const Network> network,
                                     const BuilderConfig& config);

// Runs plans on the CPU, adding 1 to every output of the plans `faulty` picks: a
// wrong kernel as seen from outside, for the debuggers' tests.
compare::PlanRunnerFactory shiftedOutputsWhen(std::function<bool(const Plan&)> faulty);

}  // namespace kiln::test
