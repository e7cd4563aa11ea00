// Networks built in code whose run fails on a named node, for the structured-error
// tests (tests/engine/common/test_structured_errors.cpp, tests/views/test_issue_nodes.cpp).
#pragma once

#include <string>
#include <vector>

#include "kiln/graph.h"
#include "support/test_graph.h"

namespace kiln::test {

// A node name that a reading of the message text gets wrong: quotes and spaces.
inline const std::string kOddNodeName = "scores \"q k\" 'odd' name";

// x [2, 3] -> Relu (`firstName`, #0) -> MatMul (`matMulName`, #1) with w [4, 5] -> y:
// the MatMul's shapes do not agree, which its kernel finds at run time.
inline Network mismatchedMatMul(const std::string& matMulName = kOddNodeName,
                                const std::string& firstName = "first") {
  Network network;
  network.opsets[""] = 17;
  network.graph.inputs = {ValueInfo{"x", DataType::kFloat32, true, {2, 3}}};
  network.graph.outputs = {ValueInfo{"y", DataType::kFloat32, false, {}}};
  network.graph.initializers["w"] =
      Tensor::fromVector(DataType::kFloat32, {4, 5}, std::vector<float>(20, 0.5f));
  network.graph.nodes.push_back(withName(makeNode("Relu", {"x"}, {"r"}), firstName, 0));
  network.graph.nodes.push_back(withName(makeNode("MatMul", {"r", "w"}, {"y"}), matMulName, 1));
  return network;
}

// The input mismatchedMatMul runs on: x, 2x3 ones.
inline Tensor mismatchedMatMulInput() {
  return Tensor::fromVector(DataType::kFloat32, {2, 3}, std::vector<float>(6, 1.f));
}

}  // namespace kiln::test
