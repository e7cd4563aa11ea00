// The elementwise family's broadcast planning on the host (contract: elementwise_common.h):
// the broadcast shape of two inputs and how each operand of a launch is read.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/ops/elementwise_common.h"
#include "ops/broadcast_params.h"

namespace kiln::cuda::ew {
namespace {

// Element strides of `in` read as if broadcast to `out` (0 on broadcast dims).
std::vector<int64_t> fullStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const size_t offset = out.size() - in.size();
  int64_t stride = 1;
  for (size_t k = in.size(); k-- > 0;) {
    if (in[k] != 1) strides[k + offset] = stride;
    stride *= in[k];
  }
  return strides;
}

}  // namespace

Status broadcastPair(const GpuKernelContext& ctx, const Shape& a, const Shape& b, Shape* out) {
  const Status s = ops::broadcastShapes(a, b, out);
  return s.isOk() ? s : ctx.error(s.message());
}

Status planOperands(const GpuKernelContext& ctx, const Shape& out,
                    const std::vector<const Shape*>& inputs, Operand* operands) {
  const int64_t n = shapeNumel(out);
  const size_t count = inputs.size();
  bool anyStrided = false;
  for (size_t k = 0; k < count; ++k) {
    const int64_t nk = shapeNumel(*inputs[k]);
    operands[k] = Operand{};
    operands[k].mode = nk == n ? kContiguous : (nk == 1 ? kScalar : kStrided);
    anyStrided = anyStrided || operands[k].mode == kStrided;
  }
  if (!anyStrided) return Status::ok();
  std::vector<std::vector<int64_t>> full(count);
  for (size_t k = 0; k < count; ++k) full[k] = fullStrides(*inputs[k], out);
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(count);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < count && merge; ++k) merge = full[k][d] * out[d] == strides[k].back();
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < count; ++k) strides[k].back() = full[k][d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < count; ++k) strides[k].push_back(full[k][d]);
    }
  }
  if (dims.size() > static_cast<size_t>(kMaxOperandRank)) {
    return ctx.unsupported("broadcast over " + std::to_string(dims.size()) +
                           " dimensions that do not merge (at most " +
                           std::to_string(kMaxOperandRank) + ")");
  }
  const bool small = n <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max());
  for (size_t k = 0; k < count; ++k) {
    if (operands[k].mode != kStrided) continue;
    OperandShape& info = operands[k].info;
    info.rank = static_cast<int>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      info.dims[d] = dims[d];
      info.strides[d] = strides[k][d];
    }
    operands[k].small = small;
    const int64_t innerDim = dims.back();
    const int64_t innerStride = strides[k].back();
    operands[k].packRows = innerDim % 8 == 0 && (innerStride == 0 || innerStride == 1);
    operands[k].innerStride = static_cast<int>(innerStride);
  }
  return Status::ok();
}

}  // namespace kiln::cuda::ew
