// Slice's shared parameters (contract: slice_params.h).
#include "ops/slice_params.h"

#include <algorithm>
#include <string>

namespace kiln::ops {
namespace {

// The first index and the element count of one axis's slice (numpy semantics); `step`
// is non-zero and within [-max(dim, 1), max(dim, 1)], so nothing here leaves int64.
void clampSlice(int64_t dim, int64_t start, int64_t end, int64_t step, SliceAxis* a) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  a->step = step;
  if (dim == 0) {
    a->first = 0;
    a->count = 0;
  } else if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    a->first = start;
    a->count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    a->first = start;
    a->count = start > end ? (start - end - 1) / -step + 1 : 0;
  }
}

}  // namespace

Status completeSliceArgs(bool axesGiven, bool stepsGiven, SliceArgs* args) {
  const size_t n = args->starts.size();
  if (args->ends.size() != n) return invalidArgument("starts and ends differ in length");
  if (args->axes.empty() && !axesGiven)
    for (size_t i = 0; i < n; ++i) args->axes.push_back(static_cast<int64_t>(i));
  if (args->steps.empty() && !stepsGiven) args->steps.assign(n, 1);
  if (args->axes.size() != n || args->steps.size() != n)
    return invalidArgument("starts, ends, axes and steps differ in length");
  return Status::ok();
}

Result<std::vector<SliceAxis>> planSlice(const Shape& in, const SliceArgs& args) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<SliceAxis> plan(in.size());
  for (size_t d = 0; d < in.size(); ++d) plan[d].count = in[d];
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < args.axes.size(); ++i) {
    int64_t axis = args.axes[i];
    if (axis < -rank || axis >= rank)
      return invalidArgument("axis " + std::to_string(axis) + " is out of range for rank " +
                             std::to_string(rank));
    if (axis < 0) axis += rank;
    if (seen[axis]) return invalidArgument("axis " + std::to_string(axis) + " is repeated");
    seen[axis] = true;
    if (args.steps[i] == 0) return invalidArgument("steps must not be 0");
    const int64_t dim = in[axis], most = std::max<int64_t>(dim, 1);
    clampSlice(dim, args.starts[i], args.ends[i], std::clamp(args.steps[i], -most, most),
               &plan[axis]);
  }
  return plan;
}

}  // namespace kiln::ops
