// Reshape's requested shape resolved once for both backends (issue 23's op table): 0 copies
// the input dim (unless allowzero), at most one -1 takes the elements left, the product
// checked for overflow. Host-only, no backend header; errors are messages without the
// node's name.
#pragma once

#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// The output shape of Reshape(in, dims). Errors: "allowzero=1 with both 0 and -1 in shape",
// "shape has more than one -1", "shape[3] is 0 but the input has rank 2", "shape has invalid
// dim -2", "shape 3x6148914691236517206 has more elements than a 64-bit count holds" (it
// wrapped to 2 once: a "match" for a 2-element input), "cannot infer the -1 dim reshaping
// 2x3", "cannot reshape 2x3 (6 elements) to 4x2".
Result<Shape> resolveReshape(const Shape& in, std::vector<int64_t> dims, bool allowZero);

}  // namespace kiln::ops
