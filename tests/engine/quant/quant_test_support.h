// What the INT8 build tests (tests/engine/quant/) share.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kiln/plan.h"
#include "kiln/reference_backend.h"

namespace kiln::test {

// `network`'s outputs on the CPU reference; with `plan` (whose network it is), each
// layer runs the implementation the plan chose (its INT8 kernels). A failed run fails
// the test and returns what it has.
inline std::vector<NamedTensor> runOnCpu(const Network& network,
                                         const std::map<std::string, Tensor>& inputs,
                                         const Plan* plan = nullptr) {
  ReferenceBackend backend(network);
  ReferenceRunOptions options;
  if (plan) options.layerImplementations = plan->layers;
  std::vector<NamedTensor> outputs;
  const Status status = backend.run(inputs, &outputs, options);
  EXPECT_TRUE(status.isOk()) << status.toString();
  return outputs;
}

}  // namespace kiln::test
