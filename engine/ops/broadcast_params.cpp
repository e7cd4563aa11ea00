#include "ops/broadcast_params.h"

#include <algorithm>

namespace kiln::ops {

Status broadcastShapes(const Shape& a, const Shape& b, Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      (*out)[i] = da;
    } else if (da == 1) {
      (*out)[i] = db;
    } else {
      return invalidArgument("shapes " + shapeToString(a) + " and " + shapeToString(b) +
                             " cannot broadcast");
    }
  }
  return Status::ok();
}

}  // namespace kiln::ops
