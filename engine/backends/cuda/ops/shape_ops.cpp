// Shape-family ops on the CUDA backend. Reshape, Flatten, Squeeze, Unsqueeze and
// Identity are views: the output shares its input's bytes (the planner keeps the
// root alive) and no kernel runs. Shape and Size usually fold at prepare time;
// when an input shape is only known at run time they write their int64 values
// with a kernel whose parameters carry the dims (capturable, no host copy; the kernel:
// shape_ops_impl.cu).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/shape_ops_impl.h"
#include "ops/reshape_params.h"

namespace kiln::cuda {
namespace {

Status writeInt64s(GpuKernelContext& ctx, const std::vector<int64_t>& values, const Shape& shape) {
  if (values.size() > static_cast<size_t>(kMaxShapeValues)) return ctx.unsupported("rank above 8");
  auto out = ctx.allocateOutput(0, DataType::kInt64, shape);
  if (!out.isOk()) return out.status();
  if (values.empty()) return Status::ok();
  SmallInt64s params;
  params.count = static_cast<int>(values.size());
  std::copy(values.begin(), values.end(), params.values);
  return launchWriteInt64s(params, out.value().as<int64_t>(), ctx.stream());
}

Status shapeKernel(GpuKernelContext& ctx) {
  const Shape& shape = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto clampDim = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clampDim(ctx.node().attrInt("start", 0));
  const int64_t end = clampDim(ctx.node().attrInt("end", rank));
  const int64_t count = std::max<int64_t>(end - start, 0);
  std::vector<int64_t> dims(shape.begin() + start, shape.begin() + start + count);
  return writeInt64s(ctx, dims, {count});
}

Status sizeKernel(GpuKernelContext& ctx) {
  return writeInt64s(ctx, {ctx.input(0).numel()}, {});
}

Status viewAs(GpuKernelContext& ctx, Shape shape) {
  auto out = ctx.allocateOutput(0, ctx.input(0).type, shape);
  return out.isOk() ? Status::ok() : out.status();
}

Status intsFromInput(GpuKernelContext& ctx, size_t index, std::vector<int64_t>* values) {
  auto host = ctx.hostInput(index);
  if (!host.isOk()) return host.status();
  *values = host.value().toInt64Vector();
  return Status::ok();
}

Status reshapeKernel(GpuKernelContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  std::vector<int64_t> dims = ctx.node().attrInts("shape");
  if (ctx.opset() >= 5) {
    if (!ctx.hasInput(1)) return ctx.error("the shape input is required");
    KILN_RETURN_IF_ERROR(intsFromInput(ctx, 1, &dims));
  }
  const bool allowZero = ctx.node().attrInt("allowzero", 0) != 0;
  auto shape = ops::resolveReshape(in, std::move(dims), allowZero);
  if (!shape.isOk()) return ctx.error(shape.status().message());
  return viewAs(ctx, *shape);
}

Status flattenKernel(GpuKernelContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.node().attrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank)
    return ctx.error("axis is out of range for rank " + std::to_string(rank));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[d];
  return viewAs(ctx, {outer, inner});
}

Status readAxes(GpuKernelContext& ctx, std::vector<int64_t>* axes, bool* given) {
  if (ctx.opset() < 13) {
    *given = ctx.node().hasAttr("axes");
    *axes = ctx.node().attrInts("axes");
    return Status::ok();
  }
  *given = ctx.hasInput(1);
  if (*given) KILN_RETURN_IF_ERROR(intsFromInput(ctx, 1, axes));
  return Status::ok();
}

Status normalizeAxes(GpuKernelContext& ctx, std::vector<int64_t>* axes, int64_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t& axis : *axes) {
    if (axis < -rank || axis >= rank) {
      return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                       std::to_string(rank));
    }
    if (axis < 0) axis += rank;
    if (seen[axis]) return ctx.error("axis " + std::to_string(axis) + " is repeated");
    seen[axis] = true;
  }
  return Status::ok();
}

Status squeezeKernel(GpuKernelContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  std::vector<int64_t> axes;
  bool given = false;
  KILN_RETURN_IF_ERROR(readAxes(ctx, &axes, &given));
  KILN_RETURN_IF_ERROR(normalizeAxes(ctx, &axes, static_cast<int64_t>(in.size())));
  std::vector<bool> drop(in.size(), false);
  for (int64_t axis : axes) {
    if (in[axis] != 1)
      return ctx.error("cannot squeeze axis " + std::to_string(axis) + " of size " +
                       std::to_string(in[axis]));
    drop[axis] = true;
  }
  Shape shape;
  for (size_t d = 0; d < in.size(); ++d) {
    bool squeeze = axes.empty() ? in[d] == 1 : drop[d];
    if (!squeeze) shape.push_back(in[d]);
  }
  return viewAs(ctx, shape);
}

Status unsqueezeKernel(GpuKernelContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  std::vector<int64_t> axes;
  bool given = false;
  KILN_RETURN_IF_ERROR(readAxes(ctx, &axes, &given));
  if (!given) return ctx.error("axes is required");
  const int64_t outRank = static_cast<int64_t>(in.size() + axes.size());
  KILN_RETURN_IF_ERROR(normalizeAxes(ctx, &axes, outRank));
  std::vector<bool> inserted(outRank, false);
  for (int64_t axis : axes) inserted[axis] = true;
  Shape shape;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d) shape.push_back(inserted[d] ? 1 : in[next++]);
  return viewAs(ctx, shape);
}

Status identityKernel(GpuKernelContext& ctx) {
  return viewAs(ctx, ctx.input(0).shape);
}

std::string viewSupport(const Node& node, const std::vector<DataType>& types) {
  return types.empty() ? "no input" : supportsAnyFixedSizeType(node, {types[0]});
}

void addView(GpuKernelRegistry& registry, const std::string& op, GpuKernelFn fn) {
  GpuKernelEntry entry;
  entry.opType = op;
  entry.sinceVersion = 1;
  entry.untilVersion = 1000;
  entry.fn = fn;
  entry.supports = viewSupport;
  entry.aliasesInput0 = true;
  registry.add(std::move(entry));
}

}  // namespace

void registerShapeGpuKernels(GpuKernelRegistry& registry) {
  addView(registry, "Reshape", reshapeKernel);
  addView(registry, "Flatten", flattenKernel);
  addView(registry, "Squeeze", squeezeKernel);
  addView(registry, "Unsqueeze", unsqueezeKernel);
  addView(registry, "Identity", identityKernel);
  registry.add("Shape", 1, 1000, shapeKernel, supportsAnyFixedSizeType);
  registry.add("Size", 1, 1000, sizeKernel, supportsAnyFixedSizeType);
}

}  // namespace kiln::cuda
