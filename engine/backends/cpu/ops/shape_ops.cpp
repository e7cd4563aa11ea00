// Shape-only and layout kernels: Shape, Size, the reshape family (Reshape, Flatten,
// Squeeze, Unsqueeze: views that share the input's storage), Transpose, Concat,
// Split, DepthToSpace and SpaceToDepth. registerShapeKernels also registers the
// slice/pad family and the tensor generators (slice_pad.h).
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "backends/cpu/ops/slice_pad.h"
#include "kiln/tensor_size.h"
#include "ops/block_rearrange_params.h"
#include "ops/reshape_params.h"
#include "ops/split_params.h"

namespace kiln::cpu {
namespace {

Status shapeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Shape& shape = ctx.input(0).shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  // Opset 15 added start/end, clamped like Python slicing.
  auto clampDim = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clampDim(ctx.node().attrInt("start", 0));
  const int64_t end = clampDim(ctx.node().attrInt("end", rank));
  const int64_t count = std::max<int64_t>(end - start, 0);
  Tensor& out = ctx.allocateOutput(0, DataType::kInt64, {count});
  std::copy_n(shape.begin() + start, count, out.data<int64_t>());
  return Status::ok();
}

Status sizeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  ctx.allocateOutput(0, DataType::kInt64, {}).data<int64_t>()[0] = ctx.input(0).numel();
  return Status::ok();
}

Status reshapeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.opset() < 5 ? 1 : 2));
  std::vector<int64_t> dims = ctx.node().attrInts("shape");
  if (ctx.opset() >= 5) KILN_RETURN_IF_ERROR(readIntInput(ctx, 1, "shape", &dims));
  const bool allowZero = ctx.node().attrInt("allowzero", 0) != 0;
  auto shape = ops::resolveReshape(ctx.input(0).shape(), std::move(dims), allowZero);
  if (!shape.isOk()) return ctx.error(shape.status().message());
  ctx.setOutput(0, ctx.input(0).reshaped(std::move(shape.value())));
  return Status::ok();
}

Status flattenKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  int64_t axis = ctx.node().attrInt("axis", 1);
  if (axis < 0) axis += in.rank();
  if (axis < 0 || axis > in.rank()) {
    return ctx.error("axis " + std::to_string(ctx.node().attrInt("axis", 1)) +
                     " is out of range for rank " + std::to_string(in.rank()));
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in.shape()[d];
  int64_t inner = 1;
  for (int64_t d = axis; d < in.rank(); ++d) inner *= in.shape()[d];
  ctx.setOutput(0, in.reshaped({outer, inner}));
  return Status::ok();
}

// Axes from the attribute (opset < 13) or the optional second input (opset >= 13).
Status readAxes(const KernelContext& ctx, std::vector<int64_t>* axes, bool* given) {
  *given = false;
  if (ctx.opset() < 13) {
    *given = ctx.node().hasAttr("axes");
    *axes = ctx.node().attrInts("axes");
    return Status::ok();
  }
  *given = ctx.hasInput(1);
  return readIntInput(ctx, 1, "axes", axes);
}

// Normalizes axes against `rank`, rejecting out-of-range and repeated ones.
Status normalizeAxes(const KernelContext& ctx, std::vector<int64_t>* axes, int64_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t& axis : *axes) {
    KILN_RETURN_IF_ERROR_CTX(normalizeAxis(axis, rank, &axis), ctx.node().describe());
    if (seen[axis]) return ctx.error("axis " + std::to_string(axis) + " is repeated");
    seen[axis] = true;
  }
  return Status::ok();
}

Status squeezeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> axes;
  bool given = false;
  KILN_RETURN_IF_ERROR(readAxes(ctx, &axes, &given));
  KILN_RETURN_IF_ERROR(normalizeAxes(ctx, &axes, in.rank()));
  std::vector<bool> drop(in.rank(), false);
  for (int64_t axis : axes) {
    if (in.shape()[axis] != 1) {
      return ctx.error("cannot squeeze axis " + std::to_string(axis) + " of size " +
                       std::to_string(in.shape()[axis]));
    }
    drop[axis] = true;
  }
  Shape shape;
  for (int d = 0; d < in.rank(); ++d) {
    // No axes (absent or empty, as ONNX Runtime reads it) squeezes every dim of size 1.
    const bool squeeze = axes.empty() ? in.shape()[d] == 1 : drop[d];
    if (!squeeze) shape.push_back(in.shape()[d]);
  }
  ctx.setOutput(0, in.reshaped(std::move(shape)));
  return Status::ok();
}

Status unsqueezeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.opset() < 13 ? 1 : 2));
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> axes;
  bool given = false;
  KILN_RETURN_IF_ERROR(readAxes(ctx, &axes, &given));
  if (!given) return ctx.error("axes is required");
  const int64_t outRank = in.rank() + static_cast<int64_t>(axes.size());
  KILN_RETURN_IF_ERROR(normalizeAxes(ctx, &axes, outRank));
  std::vector<bool> inserted(outRank, false);
  for (int64_t axis : axes) inserted[axis] = true;
  Shape shape;
  int next = 0;
  for (int64_t d = 0; d < outRank; ++d) shape.push_back(inserted[d] ? 1 : in.shape()[next++]);
  ctx.setOutput(0, in.reshaped(std::move(shape)));
  return Status::ok();
}

// Copies `in` into a new output 0 whose axis d is the input's axis perm[d].
Status permuteInto(KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> inStrides = contiguousStrides(in.shape());
  Shape outShape(perm.size());
  std::vector<int64_t> readStrides(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    outShape[d] = in.shape()[perm[d]];
    readStrides[d] = inStrides[perm[d]];
  }
  Tensor& out = ctx.allocateOutput(0, in.type(), outShape);
  const std::vector<int64_t> outStrides = contiguousStrides(outShape);
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    stridedCopy(elementData<T>(in), readStrides, elementData<T>(out), outStrides, outShape);
    return Status::ok();
  });
}

Status transposeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> perm(in.rank());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (ctx.node().hasAttr("perm")) perm = ctx.node().attrInts("perm");
  if (static_cast<int>(perm.size()) != in.rank()) {
    return ctx.error("perm has " + std::to_string(perm.size()) + " entries for rank " +
                     std::to_string(in.rank()));
  }
  std::vector<bool> seen(in.rank(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank() || seen[p]) return ctx.error("perm is not a permutation");
    seen[p] = true;
  }
  return permuteInto(ctx, in, perm);
}

Status concatKernel(KernelContext& ctx) {
  if (ctx.inputCount() == 0) return ctx.error("needs at least one input");
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.inputCount()));
  const Tensor& first = ctx.input(0);
  if (!ctx.node().hasAttr("axis") && ctx.opset() >= 4)
    return ctx.error("attribute axis is required");
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", 1), first.rank(), &axis),
                           ctx.node().describe());
  Shape outShape = first.shape();
  outShape[axis] = 0;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    const Tensor& t = ctx.input(i);
    bool same = t.type() == first.type() && t.rank() == first.rank();
    for (int d = 0; same && d < t.rank(); ++d) same = d == axis || t.shape()[d] == first.shape()[d];
    if (!same) {
      return ctx.error("input " + std::to_string(i) + " (" + dataTypeName(t.type()) + " " +
                       shapeToString(t.shape()) + ") does not match input 0 (" +
                       dataTypeName(first.type()) + " " + shapeToString(first.shape()) +
                       ") outside axis " + std::to_string(axis));
    }
    outShape[axis] += t.shape()[axis];
  }
  Tensor& out = ctx.allocateOutput(0, first.type(), outShape);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= outShape[d];
  const int64_t outBlock = outer == 0 ? 0 : out.numel() / outer;
  return dispatchByElementSize(first.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = elementData<T>(out);
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.inputCount(); ++i) {
      const Tensor& t = ctx.input(i);
      const int64_t block = outer == 0 ? 0 : t.numel() / outer;
      const T* src = elementData<T>(t);
      for (int64_t o = 0; o < outer; ++o)
        std::copy_n(src + o * block, block, dst + o * outBlock + offset);
      offset += block;
    }
    return Status::ok();
  });
}

// The sizes Split cuts along its axis (ops/split_params.h), the explicit ones read here.
Status splitSizes(const KernelContext& ctx, int64_t dim, std::vector<int64_t>* sizes) {
  auto parts = ops::splitSizes(
      ctx.node(), ctx.opset(), dim, ctx.outputCount(), ctx.hasInput(1),
      [&](std::vector<int64_t>* given) { return readIntInput(ctx, 1, "split", given); });
  if (!parts.isOk())  // the reader's errors name the node already
    return parts.status().node() ? parts.status() : ctx.error(parts.status().message());
  *sizes = std::move(parts.value());
  return Status::ok();
}

Status splitKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& in = ctx.input(0);
  // normalizeAxis takes axis 0 of a scalar (ops that treat it as a 1-element
  // vector); a scalar has no dim to split, and in.shape()[0] would read past it.
  if (in.rank() == 0) return ctx.error("cannot split a scalar (rank 0) input");
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR_CTX(normalizeAxis(ctx.node().attrInt("axis", 0), in.rank(), &axis),
                           ctx.node().describe());
  std::vector<int64_t> sizes;
  KILN_RETURN_IF_ERROR(splitSizes(ctx, in.shape()[axis], &sizes));
  if (in.numel() == 0) {
    // Every part is empty too. The copy loop below would still walk the outer dims,
    // which an empty tensor may hold by the 2^40 (and whose product may overflow).
    for (size_t i = 0; i < sizes.size(); ++i) {
      Shape shape = in.shape();
      shape[axis] = sizes[i];
      ctx.allocateOutput(i, in.type(), shape);
    }
    return Status::ok();
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in.shape()[d];
  const int64_t inner =
      in.shape()[axis] == 0 || outer == 0 ? 0 : in.numel() / outer / in.shape()[axis];
  return dispatchByElementSize(in.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = elementData<T>(in);
    int64_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      Shape shape = in.shape();
      shape[axis] = sizes[i];
      T* dst = elementData<T>(ctx.allocateOutput(i, in.type(), shape));
      const int64_t block = sizes[i] * inner;
      for (int64_t o = 0; o < outer; ++o) {
        std::copy_n(src + o * in.shape()[axis] * inner + offset, block, dst + o * block);
      }
      offset += block;
    }
    return Status::ok();
  });
}

// DepthToSpace and SpaceToDepth are a reshape to 6-D, a transpose and a reshape back;
// `perm` is the transpose, `split` the 6-D view of the input.
Status blockRearrange(KernelContext& ctx, const Shape& split, const std::vector<int64_t>& perm,
                      const Shape& outShape) {
  Tensor view = ctx.input(0).reshaped(split);
  KILN_RETURN_IF_ERROR(permuteInto(ctx, view, perm));
  ctx.outputs()[0] = ctx.outputs()[0].reshaped(outShape);
  return Status::ok();
}

// DepthToSpace / SpaceToDepth: the 6-D view and permutation of ops/block_rearrange_params.h.
Status blockRearrangeKernel(KernelContext& ctx, bool toSpace) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  auto r = ops::blockRearrangeOf(ctx.node(), ctx.input(0).shape(), toSpace);
  if (!r.isOk()) return ctx.error(r.status().message());
  return blockRearrange(ctx, r->split, std::vector<int64_t>(r->perm.begin(), r->perm.end()),
                        r->outShape);
}

Status depthToSpaceKernel(KernelContext& ctx) {
  return blockRearrangeKernel(ctx, true);
}

Status spaceToDepthKernel(KernelContext& ctx) {
  return blockRearrangeKernel(ctx, false);
}

}  // namespace

void registerShapeKernels(KernelRegistry& registry) {
  registry.add("Shape", 1, 1000, &shapeKernel);
  registry.add("Size", 1, 1000, &sizeKernel);
  registry.add("Reshape", 1, 1000, &reshapeKernel);
  registry.add("Flatten", 1, 1000, &flattenKernel);
  registry.add("Squeeze", 1, 1000, &squeezeKernel);
  registry.add("Unsqueeze", 1, 1000, &unsqueezeKernel);
  registry.add("Transpose", 1, 1000, &transposeKernel);
  registry.add("Concat", 1, 1000, &concatKernel);
  registry.add("Split", 1, 1000, &splitKernel);
  registry.add("DepthToSpace", 1, 1000, &depthToSpaceKernel);
  registry.add("SpaceToDepth", 1, 1000, &spaceToDepthKernel);
  registerSlicePadKernels(registry);
  registerTensorGeneratorKernels(registry);
}

}  // namespace kiln::cpu
