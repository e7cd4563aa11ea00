// The shared output-size check (contract: output_size.h).
#include "ops/output_size.h"

#include <string>

namespace kiln::ops {

Status checkOutputElements(const Shape& shape, const char* what) {
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return invalidArgument(std::string(what) + " has a negative dim: " + shapeToString(shape));
    if (d != 0 && total > kMaxOutputElements / d)
      return invalidArgument(std::string(what) + " " + shapeToString(shape) + " is too large");
    total *= d;
  }
  return Status::ok();
}

}  // namespace kiln::ops
