// Slice, Pad, Tile, Expand, ai.kiln StridedCopy and Roll on the CUDA backend, the host half, with
// the opset ranges, attributes, defaults and error messages of the CPU kernels
// (backends/cpu/ops/slice_pad.cpp, shape_ops.cpp). Shape parameters are read on the host;
// Slice, Tile, Expand and StridedCopy are strided copies (data_movement_common.h), Pad and Roll
// kernels of their own (Pad in every mode; their device half
// slice_pad_tile_impl.cu, their contract slice_pad_tile_impl.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/ops/data_movement_common.h"
#include "backends/cuda/ops/slice_pad_tile_impl.h"
#include "kiln/passes.h"
#include "ops/broadcast_params.h"
#include "ops/output_size.h"
#include "ops/pad_params.h"
#include "ops/roll_params.h"
#include "ops/slice_params.h"
#include "ops/strided_copy_params.h"

namespace kiln::cuda {
namespace {

using namespace dm;

// Output sizes past this are refused, as on the CPU.
using ops::kMaxOutputElements;  // ops/output_size.h

// ============================ Slice, Pad, Tile, Expand ============================

using ops::SliceArgs;

Status readSliceArgs(GpuKernelContext& ctx, SliceArgs* args) {
  if (ctx.opset() < 10) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    args->starts = ctx.node().attrInts("starts");
    args->ends = ctx.node().attrInts("ends");
    args->axes = ctx.node().attrInts("axes");
  } else {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
    KILN_RETURN_IF_ERROR(readInts(ctx, 1, "starts", &args->starts));
    KILN_RETURN_IF_ERROR(readInts(ctx, 2, "ends", &args->ends));
    KILN_RETURN_IF_ERROR(readInts(ctx, 3, "axes", &args->axes));
    KILN_RETURN_IF_ERROR(readInts(ctx, 4, "steps", &args->steps));
  }
  Status complete = ops::completeSliceArgs(hasInput(ctx, 3) || ctx.node().hasAttr("axes"),
                                           hasInput(ctx, 4), args);
  return complete.isOk() ? complete : ctx.error(complete.message());
}

Status sliceKernel(GpuKernelContext& ctx) {
  SliceArgs args;
  KILN_RETURN_IF_ERROR(readSliceArgs(ctx, &args));
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  const std::vector<int64_t> strides = contiguousStrides(in.shape);
  StridedCopy copy;
  copy.outDims = in.shape;
  copy.inStrides = strides;
  auto plan = ops::planSlice(in.shape, args);
  if (!plan.isOk()) return ctx.error(plan.status().message());
  for (int axis = 0; axis < rank; ++axis) {
    const ops::SliceAxis& a = (*plan)[axis];
    copy.outDims[axis] = a.count;
    copy.base += a.first * strides[axis];
    // A single element never steps.
    copy.inStrides[axis] = a.count <= 1 ? 0 : strides[axis] * a.step;
  }
  copy.inDims = copy.outDims;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, copy.outDims));
  return launchStrided(ctx, in, out, std::move(copy));
}

// The pad value as the data's storage bytes.
Status padValue(GpuKernelContext& ctx, DataType type, Tensor* value) {
  if (ctx.opset() >= 11 && hasInput(ctx, 2) && ctx.input(2).numel() > 0) {
    KILN_ASSIGN_OR_RETURN(*value, ctx.hostInput(2));
    if (value->type() != type) {
      // A float32 model value stored as float16/bfloat16 converts like the data did.
      if (!isFloatingPoint(value->type()) || !isFloatingPoint(type))
        return ctx.error("constant_value type differs from data");
      *value = castTensor(*value, type);
    }
    return Status::ok();
  }
  *value = castTensor(Tensor::scalarFloat(ctx.node().attrFloat("value", 0.f)), type);
  return Status::ok();
}

// The dims of a pad and which of them keep their whole input (not padded, not cropped).
struct PadDims {
  PadParams& p;
  std::vector<bool> whole;

  void drop(int d) {
    for (int k = d; k + 1 < p.rank; ++k) {
      p.outDims[k] = p.outDims[k + 1];
      p.inStrides[k] = p.inStrides[k + 1];
      p.padBegin[k] = p.padBegin[k + 1];
      p.regionStart[k] = p.regionStart[k + 1];
      p.regionLen[k] = p.regionLen[k + 1];
    }
    whole.erase(whole.begin() + d);
    --p.rank;
  }
};

// Pad's kernel divides every output index by each dim it keeps: dims neither padded nor cropped
// are folded away first. Two such adjacent dims are one dim; trailing ones become part of a
// wider element (a word of at most 8 bytes, when both buffers are aligned to it), the pad value
// repeated across it. CoaT's zero row before the tokens [B, heads, N, 8] (fp16) is then a pad of
// [B * heads, N, 2] 8-byte words: a quarter of the threads, two divisions each instead of four.
void foldUntouchedPadDims(PadParams& p, const Shape& inShape, int* elementBytes, const void* in,
                          const void* out) {
  PadDims dims{p, std::vector<bool>(p.rank)};
  for (int d = 0; d < p.rank; ++d)
    dims.whole[d] = p.padBegin[d] == 0 && p.regionStart[d] == 0 && p.regionLen[d] == inShape[d] &&
                    p.outDims[d] == inShape[d];
  // Adjacent whole dims (contiguous input strides): one dim of their product.
  for (int d = p.rank - 2; d >= 0; --d) {
    if (!dims.whole[d] || !dims.whole[d + 1]) continue;
    p.outDims[d] *= p.outDims[d + 1];
    p.regionLen[d] = p.outDims[d];
    p.inStrides[d] = p.inStrides[d + 1];
    dims.drop(d + 1);
  }
  // The last dim, whole: as many of its elements as make a word of <= 8 bytes become one.
  const int last = p.rank - 1;
  if (p.rank < 2 || !dims.whole[last]) return;
  int64_t factor = 1;
  while (*elementBytes * factor * 2 <= 8 && p.outDims[last] % (factor * 2) == 0) factor *= 2;
  const int64_t bytes = *elementBytes * factor;
  const auto aligned = [bytes](const void* ptr) {
    return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(bytes) == 0;
  };
  if (factor == 1 || !aligned(in) || !aligned(out)) return;
  p.outDims[last] /= factor;
  p.regionLen[last] = p.outDims[last];
  for (int d = 0; d < last; ++d) p.inStrides[d] /= factor;
  *elementBytes = static_cast<int>(bytes);
  if (p.outDims[last] == 1) dims.drop(last);
}

Status padKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, ctx.opset() >= 11 ? 2 : 1));
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  std::vector<int64_t> pads = ctx.node().attrInts(ctx.opset() < 2 ? "paddings" : "pads");
  std::vector<int64_t> axes;
  KILN_RETURN_IF_ERROR(readInts(ctx, 1, "pads", &pads));
  const bool axesGiven = ctx.opset() >= 18 && hasInput(ctx, 3);
  if (axesGiven) KILN_RETURN_IF_ERROR(readInts(ctx, 3, "axes", &axes));
  auto plan = ops::planPad(ctx.node(), ctx.opset(), in.shape, pads, axes, axesGiven);
  if (!plan.isOk()) return ctx.error(plan.status().message());
  const std::string& mode = plan->mode;
  const std::vector<int64_t>&begins = plan->begins, &ends = plan->ends;
  const Shape& outShape = plan->outShape;
  PadParams p;
  p.mode = plan->mode == "reflect" ? kPadReflect
           : plan->mode == "edge"  ? kPadEdge
           : plan->mode == "wrap"  ? kPadWrap
                                   : kPadConstant;
  KILN_RETURN_IF_ERROR(checkRank(ctx, rank, "Pad input"));
  const std::vector<int64_t> strides = contiguousStrides(in.shape);
  p.rank = rank;
  for (int d = 0; d < rank; ++d) {
    // The CPU's padAxisMap checks: negative pads crop first, the mode pads the rest.
    const int64_t dim = in.shape[d];
    const int64_t regionStart = std::max<int64_t>(0, -begins[d]);
    const int64_t regionLen = dim - regionStart - std::max<int64_t>(0, -ends[d]);
    if (regionLen < 0) return ctx.error("pads crop more than the dim " + std::to_string(dim));
    if (mode != "constant" && regionLen == 0 && outShape[d] > 0)
      return ctx.error("mode '" + mode + "' cannot pad an empty axis");
    p.outDims[d] = outShape[d];
    p.inStrides[d] = strides[d];
    p.padBegin[d] = std::max<int64_t>(0, begins[d]);
    p.regionStart[d] = regionStart;
    p.regionLen[d] = regionLen;
  }
  Tensor value;
  KILN_RETURN_IF_ERROR(padValue(ctx, in.type, &value));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(checkElementBytes(ctx, in.type));
  PadLaunch launch;
  launch.in = in.data;
  launch.out = out.data;
  launch.elementBytes = static_cast<int>(dataTypeSize(in.type));
  foldUntouchedPadDims(p, in.shape, &launch.elementBytes, in.data, out.data);
  launch.params = p;
  // The pad value once per element of the (possibly wider) word.
  const size_t valueBytes = dataTypeSize(in.type);
  uint8_t word[8] = {};
  for (size_t at = 0; at + valueBytes <= static_cast<size_t>(launch.elementBytes); at += valueBytes)
    std::memcpy(word + at, value.rawData(), valueBytes);
  launch.value = word;
  launch.n = n / (launch.elementBytes / static_cast<int64_t>(valueBytes));
  return launchPad(launch, ctx.stream());
}

// Tile: output coordinate c_d reads input coordinate c_d mod dim_d.
Status tileKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& in = ctx.input(0);
  std::vector<int64_t> repeats;
  KILN_RETURN_IF_ERROR(readInts(ctx, 1, "repeats", &repeats));
  if (static_cast<int>(repeats.size()) != in.rank()) {
    return ctx.error("repeats has " + std::to_string(repeats.size()) + " entries for rank " +
                     std::to_string(in.rank()));
  }
  StridedCopy copy;
  copy.inDims = in.shape;
  copy.inStrides = contiguousStrides(in.shape);
  for (int d = 0; d < in.rank(); ++d) {
    if (repeats[d] < 0) return ctx.error("repeats must not be negative");
    if (repeats[d] > kMaxOutputElements) return ctx.error("repeats are too large");
    copy.outDims.push_back(in.shape[d] * repeats[d]);
  }
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, copy.outDims, "output"));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, copy.outDims));
  return launchStrided(ctx, in, out, std::move(copy));
}

Status broadcastShapes(const GpuKernelContext& ctx, const Shape& a, const Shape& b, Shape* out) {
  const Status s = ops::broadcastShapes(a, b, out);  // ops/broadcast_params.h
  return s.isOk() ? s : ctx.error(s.message());
}

Status expandKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& in = ctx.input(0);
  std::vector<int64_t> shape;
  KILN_RETURN_IF_ERROR(readInts(ctx, 1, "shape", &shape));
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, shape, "shape"));
  Shape outShape;
  KILN_RETURN_IF_ERROR(broadcastShapes(ctx, in.shape, shape, &outShape));
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, outShape, "output"));
  StridedCopy copy;
  copy.outDims = outShape;
  copy.inDims = outShape;
  const std::vector<int64_t> strides = contiguousStrides(in.shape);
  const size_t offset = outShape.size() - in.shape.size();
  for (size_t d = 0; d < outShape.size(); ++d) {
    const bool broadcast = d < offset || in.shape[d - offset] == 1;
    copy.inStrides.push_back(broadcast ? 0 : strides[d - offset]);
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  return launchStrided(ctx, in, out, std::move(copy));
}

// ai.kiln StridedCopy (ops/strided_copy_params.h): its strides and offset are the strided
// copy's, checked inside the input before the launch.
Status stridedCopyOpKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  auto geometry = ops::stridedCopyGeometry(ctx.node(), in.numel());
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  StridedCopy copy;
  copy.outDims = geometry->shape;
  copy.inDims = geometry->shape;
  copy.inStrides = geometry->strides;
  copy.base = geometry->offset;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, copy.outDims));
  return launchStrided(ctx, in, out, std::move(copy));
}

// ai.kiln Roll (ops/roll_params.h): the dims after the last shifted one are whole rows moved in
// the widest words their bytes, both pointers and the row length allow; adjacent unshifted
// outer dims merge (RollLaunch).
Status rollKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  auto shifts = ops::rollShifts(ctx.node(), in.shape);
  if (!shifts.isOk()) return ctx.error(shifts.status().message());
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, in.shape));
  if (out.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(checkElementBytes(ctx, in.type));
  const int64_t es = static_cast<int64_t>(dataTypeSize(in.type));
  int lastShifted = -1;
  for (int d = 0; d < in.rank(); ++d)
    if (shifts.value()[d] != 0) lastShifted = d;
  int64_t rowBytes = es;
  for (int d = lastShifted + 1; d < in.rank(); ++d) rowBytes *= in.shape[d];
  RollLaunch roll;
  roll.in = in.data;
  roll.out = out.data;
  roll.wordBytes = 16;
  const auto fits = [&](int word) {
    return rowBytes % word == 0 && reinterpret_cast<uintptr_t>(in.data) % word == 0 &&
           reinterpret_cast<uintptr_t>(out.data) % word == 0;
  };
  while (roll.wordBytes > es && !fits(roll.wordBytes)) roll.wordBytes /= 2;
  roll.rowWords = rowBytes / roll.wordBytes;
  // Outer dims, an unshifted one merged into the unshifted one before it.
  std::vector<int64_t> dims, rolled;
  for (int d = 0; d <= lastShifted; ++d) {
    const int64_t shift = shifts.value()[d];
    if (!dims.empty() && shift == 0 && rolled.back() == 0) {
      dims.back() *= in.shape[d];
      continue;
    }
    dims.push_back(in.shape[d]);
    rolled.push_back(shift);
  }
  KILN_RETURN_IF_ERROR(checkRank(ctx, static_cast<int64_t>(dims.size()), "roll"));
  roll.rank = static_cast<int>(dims.size());
  int64_t stride = 1;
  for (int d = roll.rank - 1; d >= 0; --d) {
    roll.dims[d] = dims[d];
    roll.shifts[d] = rolled[d];
    roll.rowStrides[d] = stride;
    stride *= dims[d];
  }
  roll.n = out.numel() * es / roll.wordBytes;
  KILN_RETURN_IF_ERROR(launchRoll(roll, ctx.stream()));
  ctx.setImplementation("roll, rows of " + std::to_string(roll.rowWords) + " " +
                        std::to_string(roll.wordBytes) + "-byte words");
  return Status::ok();
}

// A StridedCopy that reads one contiguous run of its input (MViTv2's Q, K and V taken out of
// one packed tensor, a Split along the outermost dim) is a view of the run's bytes.
int64_t stridedCopyViewOffset(const Node& node, const std::vector<Shape>& inputShapes,
                              size_t elementBytes) {
  if (inputShapes.empty()) return -1;
  auto geometry = ops::stridedCopyGeometry(node, shapeNumel(inputShapes[0]));
  if (!geometry.isOk() || !ops::stridedCopyIsContiguousRun(geometry.value())) return -1;
  return geometry.value().offset * static_cast<int64_t>(elementBytes);
}

}  // namespace

void registerSlicePadTileGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Slice", 1, 1000, sliceKernel, supportsMovableTypes);
  registry.add("Pad", 1, 1000, padKernel, supportsMovableTypes);
  registry.add("Tile", 6, 1000, tileKernel, supportsMovableTypes);
  registry.add("Expand", 8, 1000, expandKernel, supportsMovableTypes);
  GpuKernelEntry stridedCopy;
  stridedCopy.domain = kKilnDomain;
  stridedCopy.opType = ops::kStridedCopyOp;
  stridedCopy.fn = stridedCopyOpKernel;
  stridedCopy.supports = supportsMovableTypes;
  stridedCopy.viewOffset = stridedCopyViewOffset;
  registry.add(stridedCopy);
  GpuKernelEntry roll;
  roll.domain = kKilnDomain;
  roll.opType = ops::kRollOp;
  roll.fn = rollKernel;
  roll.supports = supportsMovableTypes;
  registry.add(roll);
}

}  // namespace kiln::cuda
