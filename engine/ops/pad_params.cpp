// Pad's shared parameters (contract: pad_params.h).
#include "ops/pad_params.h"

#include <string>

#include "ops/output_size.h"

namespace kiln::ops {

Result<PadPlan> planPad(const Node& node, int opset, const Shape& in,
                        const std::vector<int64_t>& pads, std::vector<int64_t> axes,
                        bool axesGiven) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (!axesGiven)
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size())
    return invalidArgument("pads has " + std::to_string(pads.size()) + " entries for " +
                           std::to_string(axes.size()) + " axes");
  PadPlan plan;
  plan.mode = node.attrString("mode", "constant");
  if (plan.mode != "constant" && plan.mode != "reflect" && plan.mode != "edge" &&
      !(plan.mode == "wrap" && opset >= 19))
    return invalidArgument("unsupported mode '" + plan.mode + "'");
  plan.begins.assign(rank, 0);
  plan.ends.assign(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i];
    if (axis < -rank || axis >= rank)
      return invalidArgument("axis " + std::to_string(axis) + " is out of range for rank " +
                             std::to_string(rank));
    if (axis < 0) axis += rank;
    plan.begins[axis] = pads[i];
    plan.ends[axis] = pads[i + axes.size()];
  }
  plan.outShape.resize(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t limit = kMaxOutputElements;
    if (plan.begins[d] < -limit || plan.begins[d] > limit || plan.ends[d] < -limit ||
        plan.ends[d] > limit)
      return invalidArgument("pads are too large");
    plan.outShape[d] = in[d] + plan.begins[d] + plan.ends[d];
  }
  KILN_RETURN_IF_ERROR(checkOutputElements(plan.outShape, "output"));
  return plan;
}

}  // namespace kiln::ops
