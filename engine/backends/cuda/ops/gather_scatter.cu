// Indexed data movement of the CUDA backend: Gather, GatherElements, GatherND, ScatterND,
// ScatterElements/Scatter and ReverseSequence, with the opset ranges, attributes, defaults
// and error messages of the CPU kernels (backends/cpu/ops/gather_scatter.cpp,
// tensor_extra_ops.cpp). The contract of the index tensors and of the scatters' duplicates
// is data_movement.cu's (its header comment); the shared helpers: data_movement_common.cuh.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/data_movement_common.cuh"
#include "ops/output_size.h"

namespace kiln::cuda {
namespace {

using namespace dm;

enum ReduceOp : int { kReduceNone = 0, kReduceAdd, kReduceMul, kReduceMax, kReduceMin };

template <class T>
__device__ __forceinline__ typename ComputeType<T>::type toCompute(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return toFloat(v);
  } else {
    return v;
  }
}

template <class T, class C>
__device__ __forceinline__ T fromCompute(C v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return fromFloat<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// The CPU's reduceInto for one element: `a` the current value, `b` the update.
template <class T>
__device__ __forceinline__ T applyReduction(T a, T b, int op) {
  if (op == kReduceNone) return b;
  const auto x = toCompute(a);
  const auto y = toCompute(b);
  switch (op) {
    case kReduceAdd:
      return fromCompute<T>(x + y);
    case kReduceMul:
      return fromCompute<T>(x * y);
    case kReduceMax:
      return x < y ? b : a;  // std::max(x, y)
    default:
      return y < x ? b : a;  // std::min(x, y)
  }
}

// ============================ Gather family ============================

// data [outer, dim, inner] -> out [outer, count, inner]; rows of `inner` words.
template <class V>
__global__ void gatherKernel(const V* data, const void* indices, bool is64, V* out, int64_t dim,
                             int64_t count, int64_t inner, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t c = 0, t = 0;
    const int64_t row = divMod(i, inner, &c);
    const int64_t o = divMod(row, count, &t);
    const int64_t v = normalizeIndex(loadIndex(indices, is64, t), dim);
    out[i] = v < 0 ? V{} : data[(o * dim + v) * inner + c];
  }
}

// GatherElements/ScatterElements addressing: position i of `indices` (shape idxDims)
// addresses data at i's coordinates with the axis coordinate replaced by the index.
struct ElementParams {
  int rank = 0;
  int axis = 0;
  int64_t axisDim = 0;  // data's dim along axis
  int64_t idxDims[kMaxRank] = {};
  int64_t idxStrides[kMaxRank] = {};
  int64_t dataStrides[kMaxRank] = {};
};

__device__ __forceinline__ int64_t elementOffset(const ElementParams& p, const void* indices,
                                                 bool is64, int64_t i) {
  const int64_t v = normalizeIndex(loadIndex(indices, is64, i), p.axisDim);
  if (v < 0) return -1;
  int64_t rest = i;
  int64_t offset = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= p.rank) continue;
    int64_t c = 0;
    rest = divMod(rest, p.idxDims[d], &c);
    offset += (d == p.axis ? v : c) * p.dataStrides[d];
  }
  return offset;
}

template <class T>
__global__ void gatherElementsKernel(const T* data, const void* indices, bool is64, T* out,
                                     ElementParams p, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    const int64_t offset = elementOffset(p, indices, is64, i);
    out[i] = offset < 0 ? T{} : data[offset];
  }
}

// GatherND/ScatterND addressing: tuple t of k indices selects slot
// (t / perBatch) * batchSlots + sum_j index_j * slotStrides[j], in units of slices.
struct NdParams {
  int k = 0;
  int64_t perBatch = 0;
  int64_t batchSlots = 0;
  int64_t dims[kMaxRank] = {};
  int64_t slotStrides[kMaxRank] = {};
};

__device__ __forceinline__ int64_t ndSlot(const NdParams& p, const void* indices, bool is64,
                                          int64_t t) {
  int64_t slot = p.perBatch == 0 ? 0 : (t / p.perBatch) * p.batchSlots;
  for (int j = 0; j < p.k; ++j) {
    const int64_t v = normalizeIndex(loadIndex(indices, is64, t * p.k + j), p.dims[j]);
    if (v < 0) return -1;
    slot += v * p.slotStrides[j];
  }
  return slot;
}

template <class V>
__global__ void gatherNdKernel(const V* data, const void* indices, bool is64, V* out, NdParams p,
                               int64_t slice, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t s = 0;
    const int64_t t = divMod(i, slice, &s);
    const int64_t slot = ndSlot(p, indices, is64, t);
    out[i] = slot < 0 ? V{} : data[slot * slice + s];
  }
}

// ============================ Scatter family ============================

// Where update t (a row of the updates) lands, in units of rows of the output; -1 skips.
struct NdLocator {
  NdParams p;
  const void* indices = nullptr;
  bool is64 = false;
  __device__ int64_t operator()(int64_t t) const { return ndSlot(p, indices, is64, t); }
};
struct ElementLocator {
  ElementParams p;
  const void* indices = nullptr;
  bool is64 = false;
  __device__ int64_t operator()(int64_t t) const { return elementOffset(p, indices, is64, t); }
};

// winner[slot] = 1 + the last update index landing on slot.
template <class L>
__global__ void markLastWriterKernel(L locate, unsigned long long* winner, int64_t n) {
  KILN_DM_GRID_LOOP(t, n) {
    const int64_t slot = locate(t);
    if (slot >= 0) atomicMax(&winner[slot], static_cast<unsigned long long>(t + 1));
  }
}

// Reduction "none": each row lands where it points, unless a later row (winner) does too.
template <class L, class V>
__global__ void scatterRowsKernel(L locate, const unsigned long long* winner, const V* updates,
                                  V* out, int64_t row, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t s = 0;
    const int64_t t = divMod(i, row, &s);
    const int64_t slot = locate(t);
    if (slot < 0) continue;
    if (winner != nullptr && winner[slot] != static_cast<unsigned long long>(t + 1)) continue;
    out[slot * row + s] = updates[i];
  }
}

// ScatterND reductions: the slice's elements in parallel, the updates in index order.
template <class T>
__global__ void scatterNdReduceKernel(NdLocator locate, const T* updates, T* out, int64_t tuples,
                                      int64_t slice, int op) {
  KILN_DM_GRID_LOOP(s, slice) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t slot = locate(t);
      if (slot < 0) continue;
      T* dst = out + slot * slice + s;
      *dst = applyReduction(*dst, updates[t * slice + s], op);
    }
  }
}

// ScatterElements by lines: every position but the axis in parallel, the axis in order.
template <class T>
__global__ void scatterElementsLinesKernel(ElementParams p, const void* indices, bool is64,
                                           const T* updates, T* out, int op, int64_t lines) {
  KILN_DM_GRID_LOOP(line, lines) {
    int64_t rest = line;
    int64_t idxBase = 0, dataBase = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= p.rank || d == p.axis) continue;
      int64_t c = 0;
      rest = divMod(rest, p.idxDims[d], &c);
      idxBase += c * p.idxStrides[d];
      dataBase += c * p.dataStrides[d];
    }
    const int64_t len = p.idxDims[p.axis];
    for (int64_t j = 0; j < len; ++j) {
      const int64_t pos = idxBase + j * p.idxStrides[p.axis];
      const int64_t v = normalizeIndex(loadIndex(indices, is64, pos), p.axisDim);
      if (v < 0) continue;
      T* dst = out + dataBase + v * p.dataStrides[p.axis];
      *dst = applyReduction(*dst, updates[pos], op);
    }
  }
}

// ============================ ReverseSequence ============================

// x is [steps, batch, inner] (timeFirst) or [batch, steps, inner]; rows of `inner` words.
template <class V>
__global__ void reverseSequenceKernel(const V* in, V* out, const void* lens, bool is64,
                                      bool timeFirst, int64_t dim1, int64_t steps, int64_t inner,
                                      int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t c = 0, a = 0;
    const int64_t rest = divMod(i, inner, &c);
    const int64_t z = divMod(rest, dim1, &a);
    const int64_t b = timeFirst ? a : z;
    const int64_t t = timeFirst ? z : a;
    int64_t len = loadIndex(lens, is64, b);
    len = len < 0 ? 0 : (len > steps ? steps : len);
    const int64_t from = t < len ? len - 1 - t : t;
    const int64_t row = timeFirst ? from * dim1 + b : b * dim1 + from;
    out[i] = in[row * inner + c];
  }
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
  const bool is64 = indices.type == DataType::kInt64;
  KILN_DM_DISPATCH_WIDTH(w, {
    gatherKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        data.as<const V>(), indices.data, is64, out.as<V>(), dim, indices.numel(), inner, n);
  });
  KILN_CUDA_CHECK_LAUNCH("gatherKernel");
  return Status::ok();
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
  const bool is64 = indices.type == DataType::kInt64;
  KILN_DISPATCH_BYTES(data.type, ctx, {
    gatherElementsKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        data.as<const T>(), indices.data, is64, out.as<T>(), p, n);
  });
  KILN_CUDA_CHECK_LAUNCH("gatherElementsKernel");
  return Status::ok();
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
  const bool is64 = indices.type == DataType::kInt64;
  KILN_DM_DISPATCH_WIDTH(w, {
    gatherNdKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        data.as<const V>(), indices.data, is64, out.as<V>(), p, sliceBytes / w, n);
  });
  KILN_CUDA_CHECK_LAUNCH("gatherNdKernel");
  return Status::ok();
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
// writer of each of the `slots` output rows is marked first.
template <class L>
Status scatterLastWins(GpuKernelContext& ctx, const L& locate, int64_t rows, int64_t slots,
                       const void* updates, void* out, int64_t rowBytes) {
  unsigned long long* winner = nullptr;
  if (rows > 1) {
    const size_t bytes = static_cast<size_t>(slots) * sizeof(unsigned long long);
    KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(bytes));
    winner = static_cast<unsigned long long*>(scratch);
    KILN_CUDA_CHECK(cudaMemsetAsync(winner, 0, bytes, ctx.stream()));
    markLastWriterKernel<<<gridFor(rows), kBlockSize, 0, ctx.stream()>>>(locate, winner, rows);
    KILN_CUDA_CHECK_LAUNCH("markLastWriterKernel");
  }
  const int w = wordWidth({rowBytes}, {updates, out});
  const int64_t row = rowBytes / w;
  const int64_t n = rows * row;
  KILN_DM_DISPATCH_WIDTH(w, {
    scatterRowsKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        locate, winner, static_cast<const V*>(updates), static_cast<V*>(out), row, n);
  });
  KILN_CUDA_CHECK_LAUNCH("scatterRowsKernel");
  return Status::ok();
}

Status scatterNdKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& data = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  const DeviceTensor& updates = ctx.input(2);
  NdLocator locate;
  int64_t tuples = 0;
  Shape sliceShape;
  KILN_RETURN_IF_ERROR(ndParams(ctx, data, indices, 0, &locate.p, &tuples, &sliceShape));
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
  locate.indices = indices.data;
  locate.is64 = indices.type == DataType::kInt64;
  const int64_t es = static_cast<int64_t>(dataTypeSize(data.type));
  if (op == kReduceNone) {
    const int64_t slots = dimProduct(data.shape, 0, locate.p.k);
    ctx.setImplementation("last writer wins, " + std::to_string(tuples) + " slices");
    return scatterLastWins(ctx, locate, tuples, slots, updates.data, out.data, slice * es);
  }
  KILN_DISPATCH_NUMERIC(data.type, ctx, {
    scatterNdReduceKernel<<<gridFor(slice), kBlockSize, 0, ctx.stream()>>>(
        locate, updates.as<const T>(), out.as<T>(), tuples, slice, op);
  });
  KILN_CUDA_CHECK_LAUNCH("scatterNdReduceKernel");
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
  ElementLocator locate;
  KILN_RETURN_IF_ERROR(elementParams(ctx, data, indices, axis, &locate.p));
  int op = kReduceNone;
  DeviceTensor out;
  KILN_RETURN_IF_ERROR(startScatter(ctx, &op, &out));
  const int64_t count = indices.numel();
  if (count == 0) return Status::ok();
  locate.indices = indices.data;
  locate.is64 = indices.type == DataType::kInt64;
  const int64_t axisLen = indices.shape[axis];
  const int64_t lines = count / axisLen;
  if (op == kReduceNone && lines < kMinParallelLines && axisLen > 8) {
    ctx.setImplementation("last writer wins, " + std::to_string(count) + " elements");
    return scatterLastWins(ctx, locate, count, data.numel(), updates.data, out.data,
                           static_cast<int64_t>(dataTypeSize(data.type)));
  }
  if (op == kReduceNone) {
    KILN_DISPATCH_BYTES(data.type, ctx, {
      scatterElementsLinesKernel<<<gridFor(lines), kBlockSize, 0, ctx.stream()>>>(
          locate.p, indices.data, locate.is64, updates.as<const T>(), out.as<T>(), op, lines);
    });
  } else {
    KILN_DISPATCH_NUMERIC(data.type, ctx, {
      scatterElementsLinesKernel<<<gridFor(lines), kBlockSize, 0, ctx.stream()>>>(
          locate.p, indices.data, locate.is64, updates.as<const T>(), out.as<T>(), op, lines);
    });
  }
  KILN_CUDA_CHECK_LAUNCH("scatterElementsLinesKernel");
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
  const bool is64 = lens.type == DataType::kInt64;
  KILN_DM_DISPATCH_WIDTH(w, {
    reverseSequenceKernel<<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        x.as<const V>(), y.as<V>(), lens.data, is64, timeAxis == 0, x.shape[1], steps,
        innerBytes / w, n);
  });
  KILN_CUDA_CHECK_LAUNCH("reverseSequenceKernel");
  return Status::ok();
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
  registry.add("Scatter", 9, 10, scatterElementsKernel, supportsIndexedTypes);
  registry.add("ScatterElements", 11, 1000, scatterElementsKernel, supportsIndexedTypes);
  registry.add("ScatterND", 11, 1000, scatterNdKernel, supportsIndexedTypes);
  registry.add("ReverseSequence", 10, 1000, reverseSequenceKernel, supportsIndexedTypes);
}

}  // namespace kiln::cuda
