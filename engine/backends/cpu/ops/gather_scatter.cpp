// Index-driven kernels: Gather, GatherElements, GatherND, Scatter/ScatterElements
// and ScatterND. Every index read from a tensor is normalized (negative counts from
// the end) and bounds-checked into a list of element offsets before any data moves,
// so bad indices are an error that names the tensor, never a stray write.
// registerGatherScatterKernels also registers the selection kernels (selection_ops.h).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "backends/cpu/ops/selection_ops.h"
#include "kiln/passes.h"
#include "ops/broadcast_gather_params.h"

namespace kiln::cpu {
namespace {

Status readIndices(const KernelContext& ctx, const Tensor& indices, int64_t dim, const char* what,
                   std::vector<int64_t>* out) {
  if (indices.type() != DataType::kInt64 && indices.type() != DataType::kInt32) {
    return ctx.error(std::string(what) + " must be int32 or int64, got " +
                     dataTypeName(indices.type()));
  }
  *out = indices.toInt64Vector();
  for (size_t i = 0; i < out->size(); ++i) {
    int64_t& v = (*out)[i];
    if (v < -dim || v >= dim) {
      return ctx.error(std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(v) +
                       " is out of range [" + std::to_string(-dim) + ", " + std::to_string(dim) +
                       ")");
    }
    if (v < 0) v += dim;
  }
  return Status::ok();
}

Status gatherKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& data = ctx.input(0);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", 0), data.rank(), &axis),
                           ctx.node().describe());
  const int64_t dim = data.shape()[axis];
  std::vector<int64_t> indices;
  KILN_RETURN_IF_ERROR(readIndices(ctx, ctx.input(1), dim, "indices", &indices));
  Shape outShape(data.shape().begin(), data.shape().begin() + axis);
  outShape.insert(outShape.end(), ctx.input(1).shape().begin(), ctx.input(1).shape().end());
  outShape.insert(outShape.end(), data.shape().begin() + axis + 1, data.shape().end());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.shape()[d];
  for (int d = static_cast<int>(axis) + 1; d < data.rank(); ++d) inner *= data.shape()[d];
  Tensor& out = ctx.allocateOutput(0, data.type(), outShape);
  return dispatchByElementSize(data.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gatherBlocks(elementData<T>(data), elementData<T>(out), outer, dim, indices, inner);
    return Status::ok();
  });
}

// Element offsets into `data` for GatherElements/ScatterElements: position p of
// `indices` addresses data at p's coordinates with the axis coordinate replaced.
Status elementOffsets(const KernelContext& ctx, const Tensor& data, const Tensor& indices,
                      int64_t axis, std::vector<int64_t>* offsets) {
  if (indices.rank() != data.rank()) return ctx.error("indices and data differ in rank");
  for (int d = 0; d < data.rank(); ++d) {
    if (d != axis && indices.shape()[d] > data.shape()[d]) {
      return ctx.error("indices dim " + std::to_string(d) + " exceeds the data's");
    }
  }
  std::vector<int64_t> values;
  KILN_RETURN_IF_ERROR(readIndices(ctx, indices, data.shape()[axis], "indices", &values));
  std::vector<int64_t> strides = contiguousStrides(data.shape());
  const int64_t axisStride = strides[axis];
  strides[axis] = 0;
  offsets->resize(values.size());
  forEachBroadcast(indices.shape(), {strides}, [&](int64_t i, const std::vector<int64_t>& base) {
    (*offsets)[i] = base[0] + values[i] * axisStride;
  });
  return Status::ok();
}

Status gatherElementsKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& data = ctx.input(0);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", 0), data.rank(), &axis),
                           ctx.node().describe());
  std::vector<int64_t> offsets;
  KILN_RETURN_IF_ERROR(elementOffsets(ctx, data, ctx.input(1), axis, &offsets));
  Tensor& out = ctx.allocateOutput(0, data.type(), ctx.input(1).shape());
  return dispatchByElementSize(data.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = elementData<T>(data);
    T* dst = elementData<T>(out);
    for (size_t i = 0; i < offsets.size(); ++i) dst[i] = src[offsets[i]];
    return Status::ok();
  });
}

// ai.kiln BroadcastGatherElements(data, indices; axis): GatherElements of the indices
// broadcast to data's shape but for the axis, whose size stays the indices'. Same rank;
// every other indices dim is 1 (broadcast) or data's. fold_expand_into_broadcast makes it
// from GatherElements(data, Expand(indices)), whose Expand would copy the indices out.
Status broadcastGatherElementsKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", 0), data.rank(), &axis),
                           ctx.node().describe());
  auto geometry = ops::broadcastGatherGeometry(data.shape(), indices.shape(), axis);
  if (!geometry.isOk()) return ctx.error(geometry.status().message());
  const Shape& outShape = geometry->outShape;
  std::vector<int64_t> values;
  KILN_RETURN_IF_ERROR(readIndices(ctx, indices, data.shape()[axis], "indices", &values));
  std::vector<int64_t> dataStrides = contiguousStrides(data.shape());
  const int64_t axisStride = dataStrides[axis];
  dataStrides[axis] = 0;
  Tensor& out = ctx.allocateOutput(0, data.type(), outShape);
  return dispatchByElementSize(data.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = elementData<T>(data);
    T* dst = elementData<T>(out);
    forEachBroadcast(outShape, {dataStrides, geometry->indexStrides},
                     [&](int64_t i, const std::vector<int64_t>& base) {
                       dst[i] = src[base[0] + values[base[1]] * axisStride];
                     });
    return Status::ok();
  });
}

// GatherND/ScatterND addressing: indices [..., k] picks slices of data.shape[b+k:]
// within batch b. `offsets` gets one slice start per index tuple; `sliceShape` the
// trailing dims each tuple selects.
Status tupleOffsets(const KernelContext& ctx, const Tensor& data, const Tensor& indices,
                    int64_t batchDims, std::vector<int64_t>* offsets, Shape* sliceShape) {
  const int q = indices.rank(), r = data.rank();
  if (q < 1) return ctx.error("indices must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(q, r)) return ctx.error("batch_dims is out of range");
  const int64_t k = indices.shape()[q - 1];
  if (k < 0 || batchDims + k > r) {
    return ctx.error("indices' last dim " + std::to_string(k) + " exceeds the data rank");
  }
  int64_t batches = 1;
  for (int64_t d = 0; d < batchDims; ++d) {
    if (indices.shape()[d] != data.shape()[d])
      return ctx.error("batch dims of data and indices differ");
    batches *= data.shape()[d];
  }
  if (indices.type() != DataType::kInt64 && indices.type() != DataType::kInt32) {
    return ctx.error("indices must be int32 or int64");
  }
  const std::vector<int64_t> values = indices.toInt64Vector();
  const std::vector<int64_t> strides = contiguousStrides(data.shape());
  const int64_t tuples = shapeNumel(Shape(indices.shape().begin(), indices.shape().end() - 1));
  const int64_t perBatch = batches == 0 ? 0 : tuples / batches;
  const int64_t batchStride = batchDims == 0 ? 0 : strides[batchDims - 1];
  offsets->assign(tuples, 0);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = perBatch == 0 ? 0 : (t / perBatch) * batchStride;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = data.shape()[batchDims + j];
      int64_t v = values[t * k + j];
      if (v < -dim || v >= dim) {
        return ctx.error("indices[" + std::to_string(t * k + j) + "] = " + std::to_string(v) +
                         " is out of range for dim " + std::to_string(dim));
      }
      offset += (v < 0 ? v + dim : v) * strides[batchDims + j];
    }
    (*offsets)[t] = offset;
  }
  sliceShape->assign(data.shape().begin() + batchDims + k, data.shape().end());
  return Status::ok();
}

Status gatherNdKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  std::vector<int64_t> offsets;
  Shape sliceShape;
  KILN_RETURN_IF_ERROR(
      tupleOffsets(ctx, data, indices, ctx.node().attrInt("batch_dims", 0), &offsets, &sliceShape));
  Shape outShape(indices.shape().begin(), indices.shape().end() - 1);
  outShape.insert(outShape.end(), sliceShape.begin(), sliceShape.end());
  const int64_t slice = shapeNumel(sliceShape);
  Tensor& out = ctx.allocateOutput(0, data.type(), outShape);
  return dispatchByElementSize(data.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = elementData<T>(data);
    T* dst = elementData<T>(out);
    for (size_t t = 0; t < offsets.size(); ++t)
      std::copy_n(src + offsets[t], slice, dst + t * slice);
    return Status::ok();
  });
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Status parseReduction(const KernelContext& ctx, Reduction* reduction) {
  const std::string name = ctx.node().attrString("reduction", "none");
  if (name == "none")
    *reduction = Reduction::kNone;
  else if (name == "add")
    *reduction = Reduction::kAdd;
  else if (name == "mul")
    *reduction = Reduction::kMul;
  else if (name == "max")
    *reduction = Reduction::kMax;
  else if (name == "min")
    *reduction = Reduction::kMin;
  else
    return ctx.error("unknown reduction '" + name + "'");
  return Status::ok();
}

template <class T>
void reduceInto(T* out, const T* updates, const std::vector<int64_t>& offsets, int64_t slice,
                Reduction reduction) {
  using C = ComputeType<T>;
  for (size_t t = 0; t < offsets.size(); ++t) {
    T* dst = out + offsets[t];
    const T* upd = updates + t * slice;
    for (int64_t s = 0; s < slice; ++s) {
      const C a = static_cast<C>(dst[s]), b = static_cast<C>(upd[s]);
      switch (reduction) {
        case Reduction::kAdd:
          dst[s] = static_cast<T>(a + b);
          break;
        case Reduction::kMul:
          dst[s] = static_cast<T>(a * b);
          break;
        case Reduction::kMax:
          dst[s] = static_cast<T>(std::max(a, b));
          break;
        case Reduction::kMin:
          dst[s] = static_cast<T>(std::min(a, b));
          break;
        case Reduction::kNone:
          dst[s] = upd[s];
          break;
      }
    }
  }
}

// Output = copy of data, then each update slice written (or reduced) at its offset,
// in index order so later duplicates win for reduction "none".
Status scatterInto(KernelContext& ctx, const std::vector<int64_t>& offsets, int64_t slice) {
  const Tensor& data = ctx.input(0);
  const Tensor& updates = ctx.input(2);
  if (updates.type() != data.type()) return ctx.error("updates and data differ in type");
  Reduction reduction = Reduction::kNone;
  KILN_RETURN_IF_ERROR(parseReduction(ctx, &reduction));
  Tensor& out = ctx.allocateOutput(0, data.type(), data.shape());
  if (reduction == Reduction::kNone) {
    return dispatchByElementSize(data.type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = elementData<T>(out);
      std::copy_n(elementData<T>(data), data.numel(), dst);
      const T* upd = elementData<T>(updates);
      for (size_t t = 0; t < offsets.size(); ++t)
        std::copy_n(upd + t * slice, slice, dst + offsets[t]);
      return Status::ok();
    });
  }
  return dispatchAllTypes(data.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::copy_n(data.data<T>(), data.numel(), out.data<T>());
    reduceInto(out.data<T>(), updates.data<T>(), offsets, slice, reduction);
    return Status::ok();
  });
}

Status scatterElementsKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& data = ctx.input(0);
  if (ctx.input(2).shape() != ctx.input(1).shape())
    return ctx.error("updates and indices differ in shape");
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", 0), data.rank(), &axis),
                           ctx.node().describe());
  std::vector<int64_t> offsets;
  KILN_RETURN_IF_ERROR(elementOffsets(ctx, data, ctx.input(1), axis, &offsets));
  return scatterInto(ctx, offsets, 1);
}

Status scatterNdKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& indices = ctx.input(1);
  std::vector<int64_t> offsets;
  Shape sliceShape;
  KILN_RETURN_IF_ERROR(tupleOffsets(ctx, ctx.input(0), indices, 0, &offsets, &sliceShape));
  Shape expected(indices.shape().begin(), indices.shape().end() - 1);
  expected.insert(expected.end(), sliceShape.begin(), sliceShape.end());
  if (ctx.input(2).shape() != expected) {
    return ctx.error("updates shape " + shapeToString(ctx.input(2).shape()) + " should be " +
                     shapeToString(expected));
  }
  return scatterInto(ctx, offsets, shapeNumel(sliceShape));
}

}  // namespace

void registerGatherScatterKernels(KernelRegistry& registry) {
  registry.add("Gather", 1, 1000, &gatherKernel);
  registry.add("GatherElements", 11, 1000, &gatherElementsKernel);
  registry.add("BroadcastGatherElements", 1, 1000, &broadcastGatherElementsKernel, kKilnDomain);
  registry.add("GatherND", 11, 1000, &gatherNdKernel);
  registry.add("Scatter", 9, 10, &scatterElementsKernel);
  registry.add("ScatterElements", 11, 1000, &scatterElementsKernel);
  registry.add("ScatterND", 11, 1000, &scatterNdKernel);
  registerSelectionKernels(registry);
}

}  // namespace kiln::cpu
