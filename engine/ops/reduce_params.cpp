// Reduced axes shared by the backends (contract: reduce_params.h).
#include "ops/reduce_params.h"

#include <string>

namespace kiln::ops {

Result<std::vector<bool>> reducedAxes(const Node& node, bool axesFromInput, int rank,
                                      const Tensor* axesInput) {
  std::vector<int64_t> axes;
  bool noop = false;
  if (axesFromInput) {
    if (axesInput) {
      if (axesInput->type() != DataType::kInt64 && axesInput->type() != DataType::kInt32)
        return invalidArgument("input 'axes' must be int64, got " +
                               std::string(dataTypeName(axesInput->type())));
      if (axesInput->rank() > 1) return invalidArgument("input 'axes' must be 1-D");
      axes = axesInput->toInt64Vector();
    } else {
      // Some converters keep the pre-18 'axes' attribute; honour it rather than
      // silently reducing everything.
      axes = node.attrInts("axes");
    }
    noop = node.attrInt("noop_with_empty_axes", 0) != 0;
  } else {
    axes = node.attrInts("axes");
  }
  std::vector<bool> reduced(rank, axes.empty() && !noop);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return invalidArgument("axis " + std::to_string(axis) + " is out of range for rank " +
                             std::to_string(rank));
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (reduced[a])
      return invalidArgument("axis " + std::to_string(axis) + " is repeated in 'axes'");
    reduced[a] = true;
  }
  return reduced;
}

}  // namespace kiln::ops
