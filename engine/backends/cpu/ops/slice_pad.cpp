// Region kernels: Slice, Pad, CenterCropPad, Tile and Expand. Each maps output
// positions to input positions axis by axis and moves elements without looking at
// their values (data_movement.h), so every data type, strings included, is served.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "backends/cpu/ops/slice_pad.h"

namespace kiln::cpu {
namespace {

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Opsets 1-9 carry starts/ends/axes as attributes; 10 moved them to inputs and added steps.
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
  const size_t n = args->starts.size();
  if (args->ends.size() != n) return ctx.error("starts and ends differ in length");
  if (args->axes.empty() && !(ctx.hasInput(3) || ctx.node().hasAttr("axes"))) {
    for (size_t i = 0; i < n; ++i) args->axes.push_back(static_cast<int64_t>(i));
  }
  if (args->steps.empty() && !ctx.hasInput(4)) args->steps.assign(n, 1);
  if (args->axes.size() != n || args->steps.size() != n) {
    return ctx.error("starts, ends, axes and steps differ in length");
  }
  return Status::ok();
}

// Clamps one axis's slice the way the ONNX spec does (numpy semantics) and returns the
// first index and the element count. `step` is non-zero and held to [-max(dim, 1), max(dim, 1)].
void clampSlice(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t* first,
                int64_t* count) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (dim == 0) {
    *first = 0;
    *count = 0;
  } else if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    *first = start;
    *count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    const int64_t stride = -step;  // the caller holds |step| to the dim
    *first = start;
    *count = start > end ? (start - end - 1) / stride + 1 : 0;
  }
}

Status sliceKernel(KernelContext& ctx) {
  SliceArgs args;
  KILN_RETURN_IF_ERROR(readSliceArgs(ctx, &args));
  const Tensor& in = ctx.input(0);
  const int rank = in.rank();
  const std::vector<int64_t> strides = contiguousStrides(in.shape());
  Shape outShape = in.shape();
  std::vector<int64_t> readStrides = strides;
  std::vector<bool> seen(rank, false);
  int64_t offset = 0;
  for (size_t i = 0; i < args.axes.size(); ++i) {
    int64_t axis = 0;
    KILN_RETURN_IF_ERROR_CTX(normalizeAxis(args.axes[i], rank, &axis), ctx.node().describe());
    if (seen[axis]) return ctx.error("axis " + std::to_string(axis) + " is repeated");
    seen[axis] = true;
    if (args.steps[i] == 0) return ctx.error("steps must not be 0");
    // A step past the dim takes one element at most, as a step of the dim does; held there
    // so the read stride stays in int64 (a step of INT64_MAX overflowed it, and the count's
    // `step - 1`, which clampSlice no longer adds).
    const int64_t dim = in.shape()[axis], most = std::max<int64_t>(dim, 1);
    const int64_t step = std::clamp(args.steps[i], -most, most);
    int64_t first = 0;
    clampSlice(dim, args.starts[i], args.ends[i], step, &first, &outShape[axis]);
    offset += first * strides[axis];
    readStrides[axis] = strides[axis] * step;
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
  if (ctx.opset() >= 18 && ctx.hasInput(3)) {
    KILN_RETURN_IF_ERROR(readIntInput(ctx, 3, "axes", &axes));
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size()) {
    return ctx.error("pads has " + std::to_string(pads.size()) + " entries for " +
                     std::to_string(axes.size()) + " axes");
  }
  const std::string mode = ctx.node().attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      !(mode == "wrap" && ctx.opset() >= 19)) {
    return ctx.error("unsupported mode '" + mode + "'");
  }
  std::vector<int64_t> begins(rank, 0), ends(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = 0;
    KILN_RETURN_IF_ERROR_CTX(normalizeAxis(axes[i], rank, &axis), ctx.node().describe());
    begins[axis] = pads[i];
    ends[axis] = pads[i + axes.size()];
  }
  Shape outShape(rank);
  for (int d = 0; d < rank; ++d) {
    const int64_t limit = kMaxOutputElements;
    if (begins[d] < -limit || begins[d] > limit || ends[d] < -limit || ends[d] > limit) {
      return ctx.error("pads are too large");
    }
    outShape[d] = in.shape()[d] + begins[d] + ends[d];
  }
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, outShape, "output"));
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

}  // namespace

void registerSlicePadKernels(KernelRegistry& registry) {
  registry.add("Slice", 1, 1000, &sliceKernel);
  registry.add("Pad", 1, 1000, &padKernel);
  registry.add("CenterCropPad", 18, 1000, &centerCropPadKernel);
  registry.add("Tile", 6, 1000, &tileKernel);
  registry.add("Expand", 8, 1000, &expandKernel);
}

}  // namespace kiln::cpu
