// One-value inputs both backends read the same way (issue 23's op table): CumProd's axis
// tensor and the numeric scalars of Dropout, Range and the generators. Each backend gets
// the tensor onto the host its own way, then asks these. Host-only, no backend header;
// errors are messages without the node's name.
#pragma once

#include <cstdint>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// A scalar int32/int64 axis tensor as an axis of a rank-`rank` input, made non-negative
// (a scalar input has axis 0). Errors: "axis must be a scalar int32 or int64 tensor",
// "axis 3 is out of range for rank 2".
Result<int64_t> scalarAxisInput(const Tensor& axis, int64_t rank);

// A one-element numeric tensor as a double. Errors: "input 'ratio' must be numeric",
// "input 'ratio' must hold one value, got shape 2".
Result<double> scalarNumber(const Tensor& t, const char* name);

}  // namespace kiln::ops
