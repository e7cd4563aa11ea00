// One-value inputs shared by the backends (contract: scalar_inputs.h).
#include "ops/scalar_inputs.h"

#include <algorithm>
#include <string>

namespace kiln::ops {

Result<int64_t> scalarAxisInput(const Tensor& t, int64_t rank) {
  if ((t.type() != DataType::kInt32 && t.type() != DataType::kInt64) || t.numel() != 1 ||
      t.rank() > 1)
    return invalidArgument("axis must be a scalar int32 or int64 tensor");
  const int64_t axis = t.valueAsInt64(0), r = std::max<int64_t>(rank, 1);
  if (axis < -r || axis >= r)
    return invalidArgument("axis " + std::to_string(axis) + " is out of range for rank " +
                           std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

Result<double> scalarNumber(const Tensor& t, const char* name) {
  if (t.type() == DataType::kString || !isSupportedDataType(t.type()))
    return invalidArgument(std::string("input '") + name + "' must be numeric");
  if (t.numel() != 1)
    return invalidArgument(std::string("input '") + name + "' must hold one value, got shape " +
                           shapeToString(t.shape()));
  return t.valueAsDouble(0);
}

Result<std::vector<int64_t>> intListInput(const Tensor& t, const char* what) {
  if (!isInteger(t.type()))
    return invalidArgument(std::string(what) + " must be an integer tensor, got " +
                           dataTypeName(t.type()));
  if (t.rank() > 1)
    return invalidArgument(std::string(what) + " must be 1-D, got rank " +
                           std::to_string(t.rank()));
  return t.toInt64Vector();
}

}  // namespace kiln::ops
