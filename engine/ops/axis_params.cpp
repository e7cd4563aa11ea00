// Axis parameters shared by the backends (contract: axis_params.h).
#include "ops/axis_params.h"

#include <string>

namespace kiln::ops {

Result<int64_t> axisAttribute(const Node& node, int64_t fallback, int64_t rank, int64_t upper) {
  const int64_t axis = node.attrInt("axis", fallback);
  if (axis < -rank || axis > upper)
    return invalidArgument("attribute 'axis' " + std::to_string(axis) +
                           " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

AxisSplit splitAround(const Shape& shape, int64_t axis, bool through) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis || through)
      s.n *= shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

Shape shapeWithoutAxis(const Shape& shape, int64_t axis, bool keepDims) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d != axis)
      out.push_back(shape[d]);
    else if (keepDims)
      out.push_back(1);
  }
  return out;
}

}  // namespace kiln::ops
