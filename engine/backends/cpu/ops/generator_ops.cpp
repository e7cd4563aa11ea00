// Kernels that create tensors from a shape or a pattern: EyeLike, ConstantOfShape,
// Range and Trilu (which masks a triangle of its input).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "ops/scalar_inputs.h"
#include "backends/cpu/ops/slice_pad.h"

namespace kiln::cpu {
namespace {

Status eyeLikeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  if (in.rank() != 2) return ctx.error("input must be 2-D, got " + shapeToString(in.shape()));
  DataType type = in.type();
  if (ctx.node().hasAttr("dtype")) type = static_cast<DataType>(ctx.node().attrInt("dtype", 1));
  if (!isSupportedDataType(type) || type == DataType::kString) {
    return ctx.unsupported(std::string("dtype ") + dataTypeName(type));
  }
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  // A diagonal past either edge sets nothing, as one on the edge does; held there so
  // `i + k` stays in int64 (k = INT64_MAX overflowed it).
  const int64_t k = std::clamp(ctx.node().attrInt("k", 0), -rows, cols);
  const Tensor one = castTensor(Tensor::scalarFloat(1.f), type);
  Tensor& out = ctx.allocateOutput(0, type, in.shape());
  return dispatchByElementSize(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = elementData<T>(out);
    std::fill_n(dst, out.numel(), T{});
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t j = i + k;
      if (j >= 0 && j < cols) dst[i * cols + j] = elementData<T>(one)[0];
    }
    return Status::ok();
  });
}

Status constantOfShapeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  std::vector<int64_t> shape;
  KILN_RETURN_IF_ERROR(readIntInput(ctx, 0, "input", &shape));
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, shape, "shape"));
  Tensor value = Tensor::scalarFloat(0.f);
  if (const Tensor* attr = ctx.node().attrTensor("value")) value = *attr;
  if (value.numel() != 1) return ctx.error("value must hold exactly one element");
  Tensor& out = ctx.allocateOutput(0, value.type(), shape);
  return dispatchByElementSize(value.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::fill_n(elementData<T>(out), out.numel(), elementData<T>(value)[0]);
    return Status::ok();
  });
}

Status rangeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const DataType type = ctx.input(0).type();
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).numel() != 1) return ctx.error("start, limit and delta must be scalars");
    if (ctx.input(i).type() != type) return ctx.error("start, limit and delta differ in type");
  }
  if (type == DataType::kBool) return ctx.unsupported("Range of bool");
  return dispatchAllTypes(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const C start = static_cast<C>(ctx.input(0).data<T>()[0]);
    const C limit = static_cast<C>(ctx.input(1).data<T>()[0]);
    const C delta = static_cast<C>(ctx.input(2).data<T>()[0]);
    auto counted = ops::rangeCount(start, limit, delta);
    if (!counted.isOk()) return ctx.error(counted.status().message());
    const int64_t count = counted.value();
    T* out = ctx.allocateOutput(0, type, {count}).template data<T>();
    if constexpr (std::is_integral_v<C>) {
      // Every value lies in [start, limit), but i * delta alone may not fit C
      // (Range(INT64_MIN, INT64_MAX, 2^62)); unsigned arithmetic wraps back to it.
      const uint64_t base = static_cast<uint64_t>(start), step = static_cast<uint64_t>(delta);
      for (int64_t i = 0; i < count; ++i)
        out[i] = static_cast<T>(base + static_cast<uint64_t>(i) * step);
    } else {
      for (int64_t i = 0; i < count; ++i)
        out[i] = static_cast<T>(start + static_cast<C>(i) * delta);
    }
    return Status::ok();
  });
}

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of every matrix in the
// batch and zeroes the rest.
Status triluKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  if (in.rank() < 2) return ctx.error("input must have rank >= 2");
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    if (ctx.input(1).numel() != 1 || !isInteger(ctx.input(1).type())) {
      return ctx.error("k must be an integer scalar");
    }
    k = ctx.input(1).valueAsInt64(0);
  }
  const bool upper = ctx.node().attrInt("upper", 1) != 0;
  const int64_t rows = in.dim(-2), cols = in.dim(-1);
  const int64_t batch = rows * cols == 0 ? 0 : in.numel() / (rows * cols);
  Tensor& out = ctx.allocateOutput(0, in.type(), in.shape());
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = elementData<T>(in);
    T* dst = elementData<T>(out);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t at = (b * rows + i) * cols + j;
          const bool keep = upper ? j - i >= k : j - i <= k;
          dst[at] = keep ? src[at] : T{};
        }
      }
    }
    return Status::ok();
  });
}

}  // namespace

void registerTensorGeneratorKernels(KernelRegistry& registry) {
  registry.add("EyeLike", 9, 1000, &eyeLikeKernel);
  registry.add("ConstantOfShape", 9, 1000, &constantOfShapeKernel);
  registry.add("Range", 11, 1000, &rangeKernel);
  registry.add("Trilu", 14, 1000, &triluKernel);
}

}  // namespace kiln::cpu
