// One-value inputs both backends read the same way (issue 23's op table): CumProd's axis
// tensor, the numeric scalars of Dropout, Range and the generators, and Range's count. Each backend
// gets the tensor onto the host its own way, then asks these. Host-only, no backend header; errors
// are messages without the node's name.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"
#include "ops/output_size.h"

namespace kiln::ops {

// A scalar int32/int64 axis tensor as an axis of a rank-`rank` input, made non-negative
// (a scalar input has axis 0). Errors: "axis must be a scalar int32 or int64 tensor",
// "axis 3 is out of range for rank 2".
Result<int64_t> scalarAxisInput(const Tensor& axis, int64_t rank);

// A one-element numeric tensor as a double. Errors: "input 'ratio' must be numeric",
// "input 'ratio' must hold one value, got shape 2".
Result<double> scalarNumber(const Tensor& t, const char* name);

// An integer tensor of rank <= 1 (Slice's starts, Pad's pads, Split's split, ...) as int64
// values. Errors: "starts must be an integer tensor, got float32", "starts must be 1-D, got
// rank 2" (`what` names the input).
Result<std::vector<int64_t>> intListInput(const Tensor& t, const char* what);

// Range's element count, ceil((limit - start) / delta) and at least 0, for its compute type
// C (double / float or an integer type): integer spans in 128 bits (limit - start of two
// int64 values overflows int64: Range(-1, INT64_MAX, 1)). Errors: "delta must not be 0",
// "range is too large" (kMaxOutputElements or more).
template <class C>
Result<int64_t> rangeCount(C start, C limit, C delta) {
  if (delta == C(0)) return invalidArgument("delta must not be 0");
  double n = 0;
  if constexpr (std::is_floating_point_v<C>) {
    n = std::ceil((static_cast<double>(limit) - start) / delta);
  } else {
    const __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start);
    const __int128 step = static_cast<__int128>(delta);
    n = static_cast<double>(span / step + ((span % step != 0) && ((span > 0) == (step > 0))));
  }
  if (!(n < static_cast<double>(kMaxOutputElements))) return invalidArgument("range is too large");
  return n > 0 ? static_cast<int64_t>(n) : int64_t{0};
}

}  // namespace kiln::ops
