// Reshape's shared shape resolution (contract: reshape_params.h).
#include "ops/reshape_params.h"

#include <algorithm>
#include <string>

namespace kiln::ops {

Result<Shape> resolveReshape(const Shape& in, std::vector<int64_t> dims, bool allowZero) {
  if (allowZero && std::count(dims.begin(), dims.end(), 0) &&
      std::count(dims.begin(), dims.end(), -1))
    return invalidArgument("allowzero=1 with both 0 and -1 in shape");
  int inferAxis = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (inferAxis >= 0) return invalidArgument("shape has more than one -1");
      inferAxis = static_cast<int>(i);
      continue;
    }
    if (dims[i] == 0 && !allowZero) {
      if (i >= in.size())
        return invalidArgument("shape[" + std::to_string(i) + "] is 0 but the input has rank " +
                               std::to_string(in.size()));
      dims[i] = in[i];
    }
    if (dims[i] < 0) return invalidArgument("shape has invalid dim " + std::to_string(dims[i]));
    // 3 x 6148914691236517206 wraps to 2: a "match" for a 2-element input.
    if (__builtin_mul_overflow(known, dims[i], &known))
      return invalidArgument("shape " + shapeToString(dims) +
                             " has more elements than a 64-bit count holds");
  }
  const int64_t total = shapeNumel(in);
  if (inferAxis >= 0) {
    if (known == 0 || total % known != 0)
      return invalidArgument("cannot infer the -1 dim reshaping " + shapeToString(in));
    dims[inferAxis] = total / known;
  } else if (known != total) {
    return invalidArgument("cannot reshape " + shapeToString(in) + " (" + std::to_string(total) +
                           " elements) to " + shapeToString(dims));
  }
  return Shape(std::move(dims));
}

}  // namespace kiln::ops
