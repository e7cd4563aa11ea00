// Q/DQ parameters shared by the backends (contract: quantize_params.h).
#include "ops/quantize_params.h"

#include <string>

namespace kiln::ops {

Result<QuantLayout> quantLayout(const Node& node, const Shape& x, const Shape& scale,
                                const Shape* zeroPoint) {
  QuantLayout layout;
  const int64_t scaleCount = shapeNumel(scale);
  const bool bothSingle = zeroPoint && shapeNumel(*zeroPoint) == 1 && scaleCount == 1;
  if (zeroPoint && !bothSingle && *zeroPoint != scale)
    return invalidArgument("zero point shape " + shapeToString(*zeroPoint) +
                           " differs from scale shape " + shapeToString(scale));
  const int64_t blockSize = node.attrInt("block_size", 0);
  if (scaleCount == 1 && scale.size() <= 1 && blockSize == 0) return layout;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attrInt("axis", 1);
  if (axis < -rank || axis >= rank)
    return invalidArgument("attribute 'axis': axis " + std::to_string(axis) +
                           " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  layout.axisDim = x[axis];
  for (int64_t d = axis + 1; d < rank; ++d) layout.inner *= x[d];
  if (blockSize <= 0) {
    if (scale.size() != 1 || scale[0] != layout.axisDim)
      return invalidArgument("scale " + shapeToString(scale) + " must be a scalar or 1-D of size " +
                             std::to_string(layout.axisDim) + " (x dim " + std::to_string(axis) +
                             ")");
    layout.kind = QuantLayout::kAxis;
    return layout;
  }
  Shape expected = x;
  // ceil(axisDim / blockSize) without adding: a block_size of INT64_MAX overflowed the sum.
  expected[axis] = layout.axisDim / blockSize + (layout.axisDim % blockSize != 0);
  if (scale != expected)
    return invalidArgument("blocked scale must have shape " + shapeToString(expected) + ", got " +
                           shapeToString(scale));
  layout.kind = QuantLayout::kBlocked;
  layout.blockSize = blockSize;
  layout.scaleAxisDim = expected[axis];
  return layout;
}

bool integerRange(DataType type, double* lo, double* hi) {
  switch (type) {
    case DataType::kUInt8:
      *lo = 0, *hi = 255;
      return true;
    case DataType::kInt8:
      *lo = -128, *hi = 127;
      return true;
    case DataType::kUInt16:
      *lo = 0, *hi = 65535;
      return true;
    case DataType::kInt16:
      *lo = -32768, *hi = 32767;
      return true;
    case DataType::kUInt4:
      *lo = 0, *hi = 15;
      return true;
    case DataType::kInt4:
      *lo = -8, *hi = 7;
      return true;
    case DataType::kUInt2:
      *lo = 0, *hi = 3;
      return true;
    case DataType::kInt2:
      *lo = -2, *hi = 1;
      return true;
    default:
      return false;
  }
}

}  // namespace kiln::ops
