// Region kernels: Slice, Pad, CenterCropPad, Tile, Expand, ai.kiln StridedCopy and Roll. Each maps
// output positions to input positions axis by axis and moves elements without looking at their
// values (data_movement.h), so every data type, strings included, is served.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "backends/cpu/ops/slice_pad.h"
#include "kiln/passes.h"
#include "ops/pad_params.h"
#include "ops/roll_params.h"
#include "ops/slice_params.h"
#include "ops/strided_copy_params.h"

namespace kiln::cpu {
namespace {

using ops::SliceArgs;

Status readSliceArgs(const KernelContext& ctx, SliceArgs* args) {
  if (ctx.opset() < 10) {
    KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
    args->starts = ctx.node().attrInts("starts");
    args->ends = ctx.node().attrInts("ends");
    args->axes = ctx.node().attrInts("axes");
  } else {
    KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
    KILN_RETURN_IF_ERROR(readIntInput(ctx, 1, "starts", &args->starts));
    KILN_RETURN_IF_ERROR(readIntInput(ctx, 2, "ends", &args->ends));
    KILN_RETURN_IF_ERROR(readIntInput(ctx, 3, "axes", &args->axes));
    KILN_RETURN_IF_ERROR(readIntInput(ctx, 4, "steps", &args->steps));
  }
  Status complete =
      ops::completeSliceArgs(ctx.hasInput(3) || ctx.node().hasAttr("axes"), ctx.hasInput(4), args);
  return complete.isOk() ? complete : ctx.error(complete.message());
}

Status sliceKernel(KernelContext& ctx) {
  SliceArgs args;
  KILN_RETURN_IF_ERROR(readSliceArgs(ctx, &args));
  const Tensor& in = ctx.input(0);
  const int rank = in.rank();
  const std::vector<int64_t> strides = contiguousStrides(in.shape());
  Shape outShape = in.shape();
  std::vector<int64_t> readStrides = strides;
  auto plan = ops::planSlice(in.shape(), args);
  if (!plan.isOk()) return ctx.error(plan.status().message());
  int64_t offset = 0;
  for (int axis = 0; axis < rank; ++axis) {
    const ops::SliceAxis& a = (*plan)[axis];
    outShape[axis] = a.count;
    offset += a.first * strides[axis];
    readStrides[axis] = strides[axis] * a.step;
  }
  Tensor& out = ctx.allocateOutput(0, in.type(), outShape);
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (out.numel() == 0) return Status::ok();
    stridedCopy(elementData<T>(in) + offset, readStrides, elementData<T>(out),
                contiguousStrides(outShape), outShape);
    return Status::ok();
  });
}

// For one axis, the input index each output index reads, or -1 for the constant.
// Negative pads crop first; the mode then pads the cropped region.
Status padAxisMap(const KernelContext& ctx, int64_t dim, int64_t begin, int64_t end,
                  const std::string& mode, std::vector<int64_t>* map) {
  const int64_t regionStart = std::max<int64_t>(0, -begin);
  const int64_t regionLen = dim - regionStart - std::max<int64_t>(0, -end);
  if (regionLen < 0) return ctx.error("pads crop more than the dim " + std::to_string(dim));
  const int64_t padBegin = std::max<int64_t>(0, begin);
  const int64_t outDim = regionLen + padBegin + std::max<int64_t>(0, end);
  if (outDim > kMaxOutputElements) return ctx.error("pads are too large");
  if (mode != "constant" && regionLen == 0 && outDim > 0) {
    return ctx.error("mode '" + mode + "' cannot pad an empty axis");
  }
  map->resize(outDim);
  for (int64_t o = 0; o < outDim; ++o) {
    int64_t t = o - padBegin;
    if (t < 0 || t >= regionLen) {
      if (mode == "constant") {
        t = -1 - regionStart;
      } else if (mode == "edge") {
        t = std::clamp<int64_t>(t, 0, regionLen - 1);
      } else if (mode == "wrap") {
        t = ((t % regionLen) + regionLen) % regionLen;
      } else if (regionLen == 1) {  // reflect of one element repeats it
        t = 0;
      } else {
        const int64_t period = 2 * (regionLen - 1);
        t = ((t % period) + period) % period;
        if (t >= regionLen) t = period - t;
      }
    }
    (*map)[o] = regionStart + t;
  }
  return Status::ok();
}

// The pad value as a one-element tensor of the data's type.
Status padValue(const KernelContext& ctx, DataType type, Tensor* value) {
  if (ctx.opset() >= 11 && ctx.hasInput(2) && ctx.input(2).numel() > 0) {
    if (ctx.input(2).type() != type) return ctx.error("constant_value type differs from data");
    *value = ctx.input(2);
    return Status::ok();
  }
  if (type == DataType::kString) {
    *value = Tensor(DataType::kString, {1});
    return Status::ok();
  }
  *value = castTensor(Tensor::scalarFloat(ctx.node().attrFloat("value", 0.f)), type);
  return Status::ok();
}

Status padKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.opset() >= 11 ? 2 : 1));
  const Tensor& in = ctx.input(0);
  const int rank = in.rank();
  std::vector<int64_t> pads = ctx.node().attrInts(ctx.opset() < 2 ? "paddings" : "pads");
  std::vector<int64_t> axes;
  KILN_RETURN_IF_ERROR(readIntInput(ctx, 1, "pads", &pads));
  const bool axesGiven = ctx.opset() >= 18 && ctx.hasInput(3);
  if (axesGiven) KILN_RETURN_IF_ERROR(readIntInput(ctx, 3, "axes", &axes));
  auto plan = ops::planPad(ctx.node(), ctx.opset(), in.shape(), pads, axes, axesGiven);
  if (!plan.isOk()) return ctx.error(plan.status().message());
  const std::string& mode = plan->mode;
  const std::vector<int64_t>&begins = plan->begins, &ends = plan->ends;
  const Shape& outShape = plan->outShape;
  std::vector<std::vector<int64_t>> maps(rank);
  for (int d = 0; d < rank; ++d) {
    KILN_RETURN_IF_ERROR(padAxisMap(ctx, in.shape()[d], begins[d], ends[d], mode, &maps[d]));
  }
  Tensor value;
  KILN_RETURN_IF_ERROR(padValue(ctx, in.type(), &value));
  Tensor& out = ctx.allocateOutput(0, in.type(), outShape);
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gatherByAxisMaps(elementData<T>(in), in.shape(), elementData<T>(out), outShape, maps,
                     elementData<T>(value)[0]);
    return Status::ok();
  });
}

// Crops or zero-pads each listed axis symmetrically (the extra element of an odd
// difference goes to the end) to the requested shape.
Status centerCropPadKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& in = ctx.input(0);
  const int rank = in.rank();
  std::vector<int64_t> target;
  KILN_RETURN_IF_ERROR(readIntInput(ctx, 1, "shape", &target));
  std::vector<int64_t> axes = ctx.node().attrInts("axes");
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (target.size() != axes.size()) return ctx.error("shape and axes differ in length");
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, target, "shape"));
  std::vector<std::vector<int64_t>> maps(rank);
  Shape outShape = in.shape();
  for (int d = 0; d < rank; ++d) {
    KILN_RETURN_IF_ERROR(padAxisMap(ctx, in.shape()[d], 0, 0, "constant", &maps[d]));
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = 0;
    KILN_RETURN_IF_ERROR_CTX(normalizeAxis(axes[i], rank, &axis), ctx.node().describe());
    const int64_t diff = target[i] - in.shape()[axis];  // > 0 pads, < 0 crops
    const int64_t begin = diff >= 0 ? diff / 2 : -((-diff) / 2);
    KILN_RETURN_IF_ERROR(
        padAxisMap(ctx, in.shape()[axis], begin, diff - begin, "constant", &maps[axis]));
    outShape[axis] = target[i];
  }
  Tensor& out = ctx.allocateOutput(0, in.type(), outShape);
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gatherByAxisMaps(elementData<T>(in), in.shape(), elementData<T>(out), outShape, maps, T{});
    return Status::ok();
  });
}

// Tile copies the input into every tile: the output is viewed as [r0, d0, r1, d1, ...]
// where the repeat axes have input stride 0.
Status tileKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> repeats;
  KILN_RETURN_IF_ERROR(readIntInput(ctx, 1, "repeats", &repeats));
  if (static_cast<int>(repeats.size()) != in.rank()) {
    return ctx.error("repeats has " + std::to_string(repeats.size()) + " entries for rank " +
                     std::to_string(in.rank()));
  }
  const std::vector<int64_t> inStrides = contiguousStrides(in.shape());
  Shape outShape(in.rank()), viewShape, viewIn, viewOut;
  for (int d = 0; d < in.rank(); ++d) {
    if (repeats[d] < 0) return ctx.error("repeats must not be negative");
    // A dim of 2^32 repeated 2^32 times wrapped to 0 and the copy overran the output.
    if (repeats[d] > kMaxOutputElements ||
        __builtin_mul_overflow(in.shape()[d], repeats[d], &outShape[d]))
      return ctx.error("repeats are too large");
  }
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, outShape, "output"));
  const std::vector<int64_t> outStrides = contiguousStrides(outShape);
  for (int d = 0; d < in.rank(); ++d) {
    viewShape.insert(viewShape.end(), {repeats[d], in.shape()[d]});
    viewIn.insert(viewIn.end(), {0, inStrides[d]});
    viewOut.insert(viewOut.end(), {outStrides[d] * in.shape()[d], outStrides[d]});
  }
  Tensor& out = ctx.allocateOutput(0, in.type(), outShape);
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    stridedCopy(elementData<T>(in), viewIn, elementData<T>(out), viewOut, viewShape);
    return Status::ok();
  });
}

Status expandKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> shape;
  KILN_RETURN_IF_ERROR(readIntInput(ctx, 1, "shape", &shape));
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, shape, "shape"));
  Shape outShape;
  KILN_RETURN_IF_ERROR_CTX(broadcastShapes(in.shape(), shape, &outShape), ctx.node().describe());
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, outShape, "output"));
  Tensor& out = ctx.allocateOutput(0, in.type(), outShape);
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    stridedCopy(elementData<T>(in), broadcastStrides(in.shape(), outShape), elementData<T>(out),
                contiguousStrides(outShape), outShape);
    return Status::ok();
  });
}

// ai.kiln StridedCopy: Y[i] = X_flat[offset + i . strides] (ops/strided_copy_params.h), the
// reads checked inside X before any is made.
Status stridedCopyKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  auto geometry = ops::stridedCopyGeometry(ctx.node(), in.numel());
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  const Shape& shape = geometry->shape;
  Tensor& out = ctx.allocateOutput(0, in.type(), shape);
  if (out.numel() == 0) return Status::ok();
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    stridedCopy(elementData<T>(in) + geometry->offset, geometry->strides, elementData<T>(out),
                contiguousStrides(shape), shape);
    return Status::ok();
  });
}

// ai.kiln Roll: Y[c] = X[(c - shifts) mod dims] (ops/roll_params.h). Row by row over every dim
// but the last: the source row's coordinates rolled, then the row in two runs (the last dim's
// own shift).
Status rollKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  auto shifts = ops::rollShifts(ctx.node(), in.shape());
  if (!shifts.isOk()) return ctx.error(shifts.status().message());
  Tensor& out = ctx.allocateOutput(0, in.type(), in.shape());
  if (out.numel() == 0) return Status::ok();
  const Shape& dims = in.shape();
  const size_t rank = dims.size();
  const int64_t inner = rank ? dims.back() : 1, lastShift = rank ? shifts->back() : 0;
  const std::vector<int64_t> strides = contiguousStrides(dims);
  const int64_t rows = out.numel() / inner;
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = elementData<T>(in);
    T* y = elementData<T>(out);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t rest = row, source = 0;
      for (size_t d = rank - (rank ? 1 : 0); d-- > 0;) {
        const int64_t c = rest % dims[d];
        rest /= dims[d];
        source += (c >= (*shifts)[d] ? c - (*shifts)[d] : c - (*shifts)[d] + dims[d]) * strides[d];
      }
      T* to = y + row * inner;
      // Y[.., j] = X[.., (j - shift) mod inner]: j < shift reads the row's tail.
      for (int64_t j = 0; j < inner; ++j)
        to[j] = x[source + (j >= lastShift ? j - lastShift : j - lastShift + inner)];
    }
    return Status::ok();
  });
}

}  // namespace

void registerSlicePadKernels(KernelRegistry& registry) {
  registry.add("Slice", 1, 1000, &sliceKernel);
  registry.add("Pad", 1, 1000, &padKernel);
  registry.add("CenterCropPad", 18, 1000, &centerCropPadKernel);
  registry.add("Tile", 6, 1000, &tileKernel);
  registry.add("Expand", 8, 1000, &expandKernel);
  registry.add(ops::kStridedCopyOp, 1, 1000, &stridedCopyKernel, kKilnDomain);
  registry.add(ops::kRollOp, 1, 1000, &rollKernel, kKilnDomain);
}

}  // namespace kiln::cpu
