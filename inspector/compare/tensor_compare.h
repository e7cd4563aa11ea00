// Element-wise comparison of a tensor with its expected value under an absolute
// and relative tolerance, as `kiln conformance`, `kiln compare` and the precision
// debugger judge outputs (numpy.allclose's rule: |a - e| <= atol + rtol * |e|).
#pragma once

#include <string>

#include "kiln/tensor.h"

namespace kiln::compare {

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-3;
};

// Tolerance for a data type: float32/64 atol 1e-5 rtol 1e-3 (the ONNX backend test
// runner uses rtol 1e-3), float16/bfloat16/fp8 atol and rtol 1e-2, integers exact.
Tolerance defaultTolerance(DataType type);

// One element pair under `tolerance`: NaN matches only NaN, an infinity only the
// same infinity, finite values by |a - e| <= atol + rtol * |e|.
bool withinTolerance(double actual, double expected, const Tolerance& tolerance);

struct CompareResult {
  bool match = true;
  double maxAbsError = 0;
  double maxRelError = 0;
  std::string reason;  // why it does not match (dtype, shape, first bad element)
};

// Compares every element (strings exactly, integers exactly, floats by
// withinTolerance); dtype and shape must agree.
CompareResult compareTensors(const Tensor& actual, const Tensor& expected,
                             const Tolerance& tolerance);

}  // namespace kiln::compare
