// Comparison of an output tensor with its expected value, as conformance and
// `kiln run --compare` report it.
#pragma once

#include <string>

#include "kiln/tensor.h"

namespace kiln::cli {

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-3;
};

// Tolerance for a data type: float32/64 atol 1e-5 rtol 1e-3 (the ONNX backend test
// runner uses rtol 1e-3), float16/bfloat16/fp8 atol and rtol 1e-2, integers exact.
Tolerance defaultTolerance(DataType type);

struct CompareResult {
  bool match = true;
  double maxAbsError = 0;
  double maxRelError = 0;
  std::string reason;  // why it does not match (dtype, shape, first bad element)
};

CompareResult compareTensors(const Tensor& actual, const Tensor& expected,
                             const Tolerance& tolerance);

}  // namespace kiln::cli
