#include "backends/cpu/ops/op_utils.h"

#include "ops/broadcast_params.h"

namespace kiln::cpu {

Status broadcastShapes(const Shape& a, const Shape& b, Shape* out) {
  return ops::broadcastShapes(a, b, out);
}

std::vector<int64_t> contiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  std::vector<int64_t> own = contiguousStrides(in);
  const size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) strides[i + offset] = in[i] == 1 ? 0 : own[i];
  return strides;
}

Status normalizeAxis(int64_t axis, int64_t rank, int64_t* out) {
  // [0, rank) as the contract says: a scalar has no axis. (Axis 0 of a rank-0 tensor
  // was once accepted, and Split, Scan, Concat, Gather and Slice then indexed its
  // empty shape; ops whose axis may equal the rank pass rank + 1.)
  if (axis < -rank || axis >= rank) {
    return invalidArgument("axis " + std::to_string(axis) + " is out of range for rank " +
                           std::to_string(rank));
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

Status resolveAxis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what,
                   int64_t* out) {
  if (axis < -rank || axis >= rank) {
    return ctx.error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

std::vector<int64_t> readInt64s(const Tensor& tensor) {
  return tensor.toInt64Vector();
}

}  // namespace kiln::cpu
