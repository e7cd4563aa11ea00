// Roll's shifts (contract: roll_params.h).
#include "ops/roll_params.h"

#include <string>

namespace kiln::ops {

Result<std::vector<int64_t>> rollShifts(const Node& node, const Shape& in) {
  std::vector<int64_t> shifts = node.attrInts("shifts");
  if (shifts.size() != in.size())
    return invalidArgument("shifts has " + std::to_string(shifts.size()) + " entries for rank " +
                           std::to_string(in.size()));
  for (size_t k = 0; k < shifts.size(); ++k) {
    if (in[k] <= 0) {
      shifts[k] = 0;
      continue;
    }
    shifts[k] %= in[k];  // in (-d, d): no overflow whatever the attribute holds
    if (shifts[k] < 0) shifts[k] += in[k];
  }
  return shifts;
}

}  // namespace kiln::ops
