// Shared checks of the fusion pass tests: run a graph on the CPU reference, and run
// the level-1 pipeline and compare every output of the rewritten graph with the
// original's.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/passes.h"
#include "kiln/reference_backend.h"

namespace kiln::test {

// Runs `network` on the reference backend; a failed run fails the test.
std::vector<NamedTensor> runOnReference(const Network& network,
                                        const std::map<std::string, Tensor>& inputs);

// The graph's float32 inputs as seeded random tensors (seeds 1, 2, ... in input order; every
// dim a constant), for a run on the reference backend.
std::map<std::string, Tensor> randomFloatInputs(const Network& network);

// Constant dims for a graph input's ValueInfo.
std::vector<DimExpr> constantDims(const Shape& shape);

// The nodes of op type `op` in the graph.
int countOps(const Network& network, const std::string& op);

using NetworkRunner = std::function<std::vector<NamedTensor>(const Network&)>;

// Runs the pipeline at level 1 on a copy of `original`, without the passes named in
// `disabled`; checks the node count and every output (through `run`) against the original
// graph's at 1e-5; returns the records of pass `pass` and, when asked, the rewritten network.
std::vector<PassApplication> fuseAndCompareOutputs(const std::string& pass,
                                                   const NetworkRunner& run,
                                                   const Network& original, size_t expectedNodes,
                                                   Network* fusedOut = nullptr,
                                                   const std::vector<std::string>& disabled = {});

}  // namespace kiln::test
