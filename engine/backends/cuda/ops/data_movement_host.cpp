// Host checks of the CUDA data-movement kernels (data_movement.cpp, slice_pad_tile.cpp,
// gather_scatter.cpp; declared in data_movement_common.h): inputs present, axes, integer
// parameters read on the host, output sizes, index types, ranks, element sizes, word widths.
#include <cuda_runtime_api.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common_host.h"
#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/data_movement_common.h"
#include "backends/cuda/ops/data_movement_impl.h"
#include "backends/cuda/ops/op_common.h"
#include "ops/output_size.h"
#include "ops/scalar_inputs.h"

namespace kiln::cuda::dm {

bool hasInput(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.inputCount() && ctx.hasInput(i);
}

Status requireInputs(const GpuKernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!hasInput(ctx, i)) return ctx.error("required input " + std::to_string(i) + " is missing");
  }
  return Status::ok();
}

// Maps a possibly negative axis into [0, rank) (a scalar has no axis).
Status normalizeAxis(const GpuKernelContext& ctx, int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) {
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

// Reads input i (an integer tensor of rank <= 1) on the host; absent leaves `out` as is.
Status readInts(GpuKernelContext& ctx, size_t i, const char* what, std::vector<int64_t>* out) {
  if (!hasInput(ctx, i)) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(i));
  auto values = ops::intListInput(t, what);
  if (!values.isOk()) return ctx.error(values.status().message());
  *out = std::move(values).value();
  return Status::ok();
}

Status checkElementCount(const GpuKernelContext& ctx, const Shape& shape, const char* what) {
  Status s = ops::checkOutputElements(shape, what);
  return s.isOk() ? s : ctx.error(s.message());
}

Status checkIndexType(const GpuKernelContext& ctx, DataType type, const char* what) {
  if (type == DataType::kInt64 || type == DataType::kInt32) return Status::ok();
  return ctx.error(std::string(what) + " must be int32 or int64, got " + dataTypeName(type));
}

// Ranks above kMaxMovementRank (device_shapes.h's kMaxRank) are refused as unsupported.
Status checkRank(const GpuKernelContext& ctx, int64_t rank, const char* what) {
  if (rank <= kMaxMovementRank) return Status::ok();
  return ctx.unsupported(std::string(what) + " of rank " + std::to_string(rank) + " (at most " +
                         std::to_string(kMaxMovementRank) + ")");
}

// The element sizes the device halves' dispatchWordOfSize binds, refused otherwise with
// the text KILN_DISPATCH_BYTES gave.
Status checkElementBytes(const GpuKernelContext& ctx, DataType type) {
  return isWordSized(type) ? Status::ok() : unsupportedType(ctx, type);
}

std::vector<int64_t> contiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t dimProduct(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end && d < shape.size(); ++d) p *= shape[d];
  return p;
}

// The widest word (16, 8, 4, 2 or 1 bytes) dividing every byte count and address.
int wordWidth(std::initializer_list<int64_t> bytes, std::initializer_list<const void*> pointers) {
  for (int w = 16; w > 1; w /= 2) {
    bool ok = true;
    for (int64_t b : bytes) ok = ok && b % w == 0;
    for (const void* p : pointers) ok = ok && reinterpret_cast<uintptr_t>(p) % w == 0;
    if (ok) return w;
  }
  return 1;
}

char* byteOffset(void* p, int64_t bytes) {
  return static_cast<char*>(p) + bytes;
}

Status copyBytes(GpuKernelContext& ctx, void* dst, const void* src, int64_t bytes) {
  if (bytes <= 0) return Status::ok();
  KILN_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                  ctx.stream()));
  return Status::ok();
}

// Fixed-size elements of 1, 2, 4 or 8 bytes (absent inputs pass).
bool movable(DataType t) {
  if (t == DataType::kUndefined) return true;
  if (t == DataType::kString) return false;
  const size_t size = dataTypeSize(t);
  return size == 1 || size == 2 || size == 4 || size == 8;
}

bool isIndexType(DataType t) {
  return t == DataType::kInt32 || t == DataType::kInt64;
}

std::string typeReason(DataType t) {
  return std::string("no GPU kernel for ") + dataTypeName(t);
}

std::string supportsMovableTypes(const Node&, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (!movable(t)) return typeReason(t) + " inputs";
  }
  return "";
}

}  // namespace kiln::cuda::dm
