// Indexed data movement of the CUDA backend, the host half: Gather, GatherElements, GatherND,
// ScatterND, ScatterElements/Scatter and ReverseSequence, with the opset ranges, attributes,
// defaults and error messages of the CPU kernels (backends/cpu/ops/gather_scatter.cpp,
// tensor_extra_ops.cpp). The contract of the index tensors and of the scatters' duplicates
// is data_movement.cpp's (its header comment); the shared helpers: data_movement_common.h;
// the device half: gather_scatter_impl.cu, their contract gather_scatter_impl.h.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/ops/data_movement_common.h"
#include "backends/cuda/ops/gather_scatter_impl.h"
#include "kiln/passes.h"
#include "ops/broadcast_gather_params.h"

namespace kiln::cuda {
namespace {

using namespace dm;

DeviceIndices deviceIndices(const DeviceTensor& indices) {
  DeviceIndices out;
  out.data = indices.data;
  out.is64 = indices.type == DataType::kInt64;
  return out;
}

// Before a reduction kernel: the data type in kScatterReductionTypes, else unsupported "data
// type X" (KILN_DISPATCH_NUMERIC's text).
Status checkReductionType(const GpuKernelContext& ctx, DataType type) {
  if (inDeviceTypes(type, kScatterReductionTypes)) return Status::ok();
  return ctx.unsupported(std::string("data type ") + dataTypeName(type));
}

// ============================ Gather family ============================

Status gatherKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.rank(), &axis));
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, indices.type, "indices"));
  const int64_t dim = data.shape[axis];
  Shape outShape(data.shape.begin(), data.shape.begin() + axis);
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), data.shape.begin() + axis + 1, data.shape.end());
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, data.type, outShape));
  if (out.numel() == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(data.type));
  const int64_t innerBytes = dimProduct(data.shape, axis + 1, data.shape.size()) * es;
  const int w = wordWidth({innerBytes}, {data.data, out.data});
  const int64_t inner = innerBytes / w;
  const int64_t n = out.numel() * es / w;
  GatherLaunch gather;
  gather.data = data.data;
  gather.indices = indices.data;
  gather.is64 = indices.type == DataType::kInt64;
  gather.out = out.data;
  gather.dim = dim;
  gather.count = indices.numel();
  gather.inner = inner;
  gather.n = n;
  gather.width = w;
  return launchGather(gather, ctx.stream());
}

// The CPU's elementOffsets checks, as device addressing parameters.
Status elementParams(const GpuKernelContext& ctx, const DeviceTensor& data,
                     const DeviceTensor& indices, int64_t axis, ElementParams* p) {
  if (indices.rank() != data.rank()) return ctx.error("indices and data differ in rank");
  for (int d = 0; d < data.rank(); ++d) {
    if (d != axis && indices.shape[d] > data.shape[d]) {
      return ctx.error("indices dim " + std::to_string(d) + " exceeds the data's");
    }
  }
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, indices.type, "indices"));
  KILN_RETURN_IF_ERROR(checkRank(ctx, data.rank(), "data"));
  const std::vector<int64_t> idxStrides = contiguousStrides(indices.shape);
  const std::vector<int64_t> dataStrides = contiguousStrides(data.shape);
  p->rank = data.rank();
  p->axis = static_cast<int>(axis);
  p->axisDim = data.shape[axis];
  for (int d = 0; d < data.rank(); ++d) {
    p->idxDims[d] = indices.shape[d];
    p->idxStrides[d] = idxStrides[d];
    p->dataStrides[d] = dataStrides[d];
  }
  return Status::ok();
}

Status gatherElementsKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.rank(), &axis));
  ElementParams p;
  KILN_RETURN_IF_ERROR(elementParams(ctx, data, indices, axis, &p));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, data.type, indices.shape));
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(checkElementBytes(ctx, data.type));
  return launchGatherElements(data.data, deviceIndices(indices), out.data, p, n,
                              static_cast<int>(dataTypeSize(data.type)), ctx.stream());
}

// ai.kiln BroadcastGatherElements(data, indices; axis): GatherElements of the indices
// broadcast to data's shape but for the axis (the CPU kernel's contract and checks).
Status broadcastGatherElementsKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.rank(), &axis));
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, indices.type, "indices"));
  KILN_RETURN_IF_ERROR(checkRank(ctx, data.rank(), "data"));
  auto geometry = ops::broadcastGatherGeometry(data.shape, indices.shape, axis);
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  const Shape& outShape = geometry->outShape;
  const std::vector<int64_t> dataStrides = contiguousStrides(data.shape);
  ElementParams p;
  p.rank = data.rank();
  p.axis = static_cast<int>(axis);
  p.axisDim = data.shape[axis];
  for (int d = 0; d < data.rank(); ++d) {
    p.idxDims[d] = outShape[d];
    p.idxStrides[d] = geometry->indexStrides[d];
    p.dataStrides[d] = dataStrides[d];
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, data.type, outShape));
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(checkElementBytes(ctx, data.type));
  return launchBroadcastGatherElements(data.data, deviceIndices(indices), out.data, p, n,
                                       static_cast<int>(dataTypeSize(data.type)), ctx.stream());
}

// The CPU's tupleOffsets checks, as device addressing parameters; *tuples the number of
// index tuples, *sliceShape the trailing data dims each selects.
Status ndParams(const GpuKernelContext& ctx, const DeviceTensor& data, const DeviceTensor& indices,
                int64_t batchDims, NdParams* p, int64_t* tuples, Shape* sliceShape) {
  const int q = indices.rank(), r = data.rank();
  if (q < 1) return ctx.error("indices must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(q, r)) return ctx.error("batch_dims is out of range");
  const int64_t k = indices.shape[q - 1];
  if (k < 0 || batchDims + k > r) {
    return ctx.error("indices' last dim " + std::to_string(k) + " exceeds the data rank");
  }
  int64_t batches = 1;
  for (int64_t d = 0; d < batchDims; ++d) {
    if (indices.shape[d] != data.shape[d])
      return ctx.error("batch dims of data and indices differ");
    batches *= data.shape[d];
  }
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, indices.type, "indices"));
  KILN_RETURN_IF_ERROR(checkRank(ctx, k, "index tuples"));
  *tuples = dimProduct(indices.shape, 0, q - 1);
  p->k = static_cast<int>(k);
  p->perBatch = batches == 0 ? 0 : *tuples / batches;
  p->batchSlots = batchDims == 0 ? 0 : dimProduct(data.shape, batchDims, batchDims + k);
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    p->dims[j] = data.shape[batchDims + j];
    p->slotStrides[j] = stride;
    stride *= data.shape[batchDims + j];
  }
  sliceShape->assign(data.shape.begin() + batchDims + k, data.shape.end());
  return Status::ok();
}

Status gatherNdKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  NdParams p;
  int64_t tuples = 0;
  Shape sliceShape;
  KILN_RETURN_IF_ERROR(
      ndParams(ctx, data, indices, ctx.node().attrInt("batch_dims", 0), &p, &tuples, &sliceShape));
  Shape outShape(indices.shape.begin(), indices.shape.end() - 1);
  outShape.insert(outShape.end(), sliceShape.begin(), sliceShape.end());
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, data.type, outShape));
  if (out.numel() == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(data.type));
  const int64_t sliceBytes = shapeNumel(sliceShape) * es;
  const int w = wordWidth({sliceBytes}, {data.data, out.data});
  const int64_t n = out.numel() * es / w;
  return launchGatherNd(data.data, deviceIndices(indices), out.data, p, sliceBytes / w, n, w,
                        ctx.stream());
}

// ============================ Scatter family ============================

Status parseReduction(const GpuKernelContext& ctx, int* op) {
  const std::string name = ctx.node().attrString("reduction", "none");
  if (name == "none") {
    *op = kReduceNone;
  } else if (name == "add") {
    *op = kReduceAdd;
  } else if (name == "mul") {
    *op = kReduceMul;
  } else if (name == "max") {
    *op = kReduceMax;
  } else if (name == "min") {
    *op = kReduceMin;
  } else {
    return ctx.error("unknown reduction '" + name + "'");
  }
  return Status::ok();
}

// Validates updates' type and the reduction, allocates the output as a copy of data.
Status startScatter(GpuKernelContext& ctx, int* op, DeviceTensor* out) {
  const DeviceTensor& data = ctx.input(0);
  if (ctx.input(2).type != data.type) return ctx.error("updates and data differ in type");
  KILN_RETURN_IF_ERROR(parseReduction(ctx, op));
  KILN_ASSIGN_OR_RETURN(*out, ctx.allocateOutput(0, data.type, data.shape));
  return copyBytes(ctx, out->data, data.data, static_cast<int64_t>(data.byteSize()));
}

// Reduction "none" of `rows` update rows of rowBytes: when rows may collide, the last
// writer of each of the `slots` output rows is marked first (in the workspace, zeroed here).
// Params: NdParams or ElementParams, the addressing of `indices`.
template <class Params>
Status scatterLastWins(GpuKernelContext& ctx, const Params& params, DeviceIndices indices,
                       int64_t rows, int64_t slots, const void* updates, void* out,
                       int64_t rowBytes) {
  unsigned long long* winner = nullptr;
  if (rows > 1) {
    const size_t bytes = static_cast<size_t>(slots) * sizeof(unsigned long long);
    KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(bytes));
    winner = static_cast<unsigned long long*>(scratch);
    KILN_CUDA_CHECK(cudaMemsetAsync(winner, 0, bytes, ctx.stream()));
  }
  ScatterRows scatter;
  scatter.indices = indices;
  scatter.winner = winner;
  scatter.updates = updates;
  scatter.out = out;
  scatter.width = wordWidth({rowBytes}, {updates, out});
  scatter.rows = rows;
  scatter.row = rowBytes / scatter.width;
  scatter.n = rows * scatter.row;
  return launchScatterRows(params, scatter, ctx.stream());
}

Status scatterNdKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  const DeviceTensor& updates = ctx.input(2);
  NdParams p;
  int64_t tuples = 0;
  Shape sliceShape;
  KILN_RETURN_IF_ERROR(ndParams(ctx, data, indices, 0, &p, &tuples, &sliceShape));
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), sliceShape.begin(), sliceShape.end());
  if (updates.shape != expected) {
    return ctx.error("updates shape " + shapeToString(updates.shape) + " should be " +
                     shapeToString(expected));
  }
  int op = kReduceNone;
  DeviceTensor out;
  KILN_RETURN_IF_ERROR(startScatter(ctx, &op, &out));
  const int64_t slice = shapeNumel(sliceShape);
  if (tuples == 0 || slice == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(data.type));
  if (op == kReduceNone) {
    const int64_t slots = dimProduct(data.shape, 0, p.k);
    ctx.setImplementation("last writer wins, " + std::to_string(tuples) + " slices");
    return scatterLastWins(ctx, p, deviceIndices(indices), tuples, slots, updates.data, out.data,
                           slice * es);
  }
  KILN_RETURN_IF_ERROR(checkReductionType(ctx, data.type));
  KILN_RETURN_IF_ERROR(launchScatterNdReduce(p, deviceIndices(indices), updates.data, out.data,
                                             data.type, tuples, slice, op, ctx.stream()));
  ctx.setImplementation("reduction in index order: " + std::to_string(tuples) +
                        " sequential updates of " + std::to_string(slice) + " parallel elements");
  return Status::ok();
}

// Below this many lines, reduction "none" uses the last-writer marking instead of lines.
constexpr int64_t kMinParallelLines = 2048;

Status scatterElementsKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  const DeviceTensor& updates = ctx.input(2);
  if (updates.shape != indices.shape) return ctx.error("updates and indices differ in shape");
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.rank(), &axis));
  ElementParams p;
  KILN_RETURN_IF_ERROR(elementParams(ctx, data, indices, axis, &p));
  int op = kReduceNone;
  DeviceTensor out;
  KILN_RETURN_IF_ERROR(startScatter(ctx, &op, &out));
  const int64_t count = indices.numel();
  if (count == 0) return Status::ok();
  const int64_t axisLen = indices.shape[axis];
  const int64_t lines = count / axisLen;
  if (op == kReduceNone && lines < kMinParallelLines && axisLen > 8) {
    ctx.setImplementation("last writer wins, " + std::to_string(count) + " elements");
    return scatterLastWins(ctx, p, deviceIndices(indices), count, data.numel(), updates.data,
                           out.data, static_cast<int64_t>(dataTypeSize(data.type)));
  }
  if (op == kReduceNone) {
    KILN_RETURN_IF_ERROR(checkElementBytes(ctx, data.type));
  } else {
    KILN_RETURN_IF_ERROR(checkReductionType(ctx, data.type));
  }
  KILN_RETURN_IF_ERROR(launchScatterElementsLines(p, deviceIndices(indices), updates.data, out.data,
                                                  data.type, op, lines, ctx.stream()));
  ctx.setImplementation("in index order along the axis: " + std::to_string(lines) +
                        " parallel lines of " + std::to_string(axisLen));
  return Status::ok();
}

// ============================ ReverseSequence ============================

Status reverseSequenceKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& lens = ctx.input(1);
  const int64_t batchAxis = ctx.node().attrInt("batch_axis", 1);
  const int64_t timeAxis = ctx.node().attrInt("time_axis", 0);
  if (x.rank() < 2) return ctx.error("input must have rank >= 2, got " + shapeToString(x.shape));
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0))) {
    return ctx.error("batch_axis and time_axis must be 0 and 1 in some order");
  }
  const int64_t batch = x.shape[batchAxis];
  const int64_t steps = x.shape[timeAxis];
  if (lens.rank() != 1 || lens.shape[0] != batch) {
    return ctx.error("sequence_lens must be 1-D of the batch size " + std::to_string(batch));
  }
  KILN_RETURN_IF_ERROR(checkIndexType(ctx, lens.type, "sequence_lens"));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (y.numel() == 0) return Status::ok();
  const int64_t es = static_cast<int64_t>(dataTypeSize(x.type));
  const int64_t innerBytes = dimProduct(x.shape, 2, x.shape.size()) * es;
  const int w = wordWidth({innerBytes}, {x.data, y.data});
  const int64_t n = y.numel() * es / w;
  ReverseSequenceLaunch reverse;
  reverse.in = x.data;
  reverse.out = y.data;
  reverse.lens = deviceIndices(lens);
  reverse.timeFirst = timeAxis == 0;
  reverse.dim1 = x.shape[1];
  reverse.steps = steps;
  reverse.inner = innerBytes / w;
  reverse.n = n;
  reverse.width = w;
  return launchReverseSequence(reverse, ctx.stream());
}

// ============================ support predicates ============================

// Types the Scatter reductions compute on (the CPU's dispatchAllTypes).
bool reducible(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64 || t == DataType::kBool ||
         (isInteger(t) && dataTypeSize(t) >= 1 && packedElementBits(t) == 0);
}

// Data at input 0 (and 2), int32/int64 indices at input 1; reductions need numeric data.
std::string supportsIndexedTypes(const Node& node, const std::vector<DataType>& types) {
  const bool reduces = node.attrString("reduction", "none") != "none";
  for (size_t i = 0; i < types.size(); ++i) {
    const DataType t = types[i];
    if (t == DataType::kUndefined) continue;
    if (i == 1) {
      if (!isIndexType(t)) return typeReason(t) + " indices";
    } else if (!movable(t)) {
      return typeReason(t) + " data";
    } else if (reduces && !reducible(t)) {
      return typeReason(t) + " data with a reduction";
    }
  }
  return "";
}

}  // namespace

void registerIndexedMovementGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Gather", 1, 1000, gatherKernel, supportsIndexedTypes);
  registry.add("GatherElements", 11, 1000, gatherElementsKernel, supportsIndexedTypes);
  registry.add("GatherND", 11, 1000, gatherNdKernel, supportsIndexedTypes);
  GpuKernelEntry broadcastGather;
  broadcastGather.domain = kKilnDomain;
  broadcastGather.opType = "BroadcastGatherElements";
  broadcastGather.fn = broadcastGatherElementsKernel;
  broadcastGather.supports = supportsIndexedTypes;
  registry.add(broadcastGather);
  registry.add("Scatter", 9, 10, scatterElementsKernel, supportsIndexedTypes);
  registry.add("ScatterElements", 11, 1000, scatterElementsKernel, supportsIndexedTypes);
  registry.add("ScatterND", 11, 1000, scatterNdKernel, supportsIndexedTypes);
  registry.add("ReverseSequence", 10, 1000, reverseSequenceKernel, supportsIndexedTypes);
}

}  // namespace kiln::cuda
