// Tensor generators on the GPU: Trilu, Range, ConstantOfShape, EyeLike and OneHot.
//
// Contract: every kernel here matches the CPU reference kernel of the same op
// (engine/backends/cpu/ops/generator_ops.cpp; OneHot: selection_ops.cpp): the same opset
// ranges, attribute defaults, output shapes, error messages and arithmetic order where it
// decides results. Trilu moves bytes (dispatch on element size) and reads k on the
// device. Range, ConstantOfShape, EyeLike and OneHot compute their shapes on the host;
// the fill values are converted on the host with castTensor (the CPU's conversion) and
// written as raw bytes. The kernels: generators_impl.cu (contract: generators_impl.h).
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/generators_impl.h"
#include "backends/cuda/ops/op_common.h"
#include "ops/output_size.h"
#include "ops/scalar_inputs.h"

namespace kiln::cuda {
namespace {

// ------------------------------------------------------------------ support predicates

std::string supportsRangeTypes(const Node& node, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t == DataType::kBool) return "Range of bool";
  }
  return supportsNumericTypes(node, types);
}

std::string checkGeneratedType(DataType t) {
  if (t == DataType::kString || !isSupportedDataType(t))
    return std::string("no GPU kernel for ") + dataTypeName(t) + " outputs";
  return "";
}

std::string supportsConstantOfShape(const Node& node, const std::vector<DataType>&) {
  const Tensor* value = node.attrTensor("value");
  return value ? checkGeneratedType(value->type()) : "";
}

std::string supportsEyeLike(const Node& node, const std::vector<DataType>& types) {
  if (node.hasAttr("dtype"))
    return checkGeneratedType(static_cast<DataType>(node.attrInt("dtype", 1)));
  const DataType t = firstType(types);
  return t == DataType::kUndefined ? "" : checkGeneratedType(t);
}

std::string supportsOneHot(const Node&, const std::vector<DataType>& types) {
  const DataType indices = firstType(types);
  if (indices != DataType::kUndefined && !isDeviceIndexType(indices))
    return std::string("no GPU OneHot for ") + dataTypeName(indices) + " indices";
  for (DataType t : types) {
    if (t == DataType::kString) return "strings stay on the host";
  }
  return "";
}

std::string supportsTrilu(const Node&, const std::vector<DataType>& types) {
  if (types.size() > 1 && types[1] != DataType::kUndefined && !isDeviceIndexType(types[1]))
    return std::string("no GPU Trilu for k of type ") + dataTypeName(types[1]);
  const DataType t = firstType(types);
  return t == DataType::kString ? "strings stay on the host" : "";
}

// ================================================================== Trilu

Status triluOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  if (in.rank() < 2) return ctx.error("input must have rank >= 2");
  const void* kData = nullptr;
  DataType kType = DataType::kInt64;
  if (ctx.hasInput(1)) {
    const DeviceTensor& k = ctx.input(1);
    if (k.numel() != 1 || !isInteger(k.type)) return ctx.error("k must be an integer scalar");
    if (!isDeviceIndexType(k.type))
      return ctx.unsupported(std::string("k of type ") + dataTypeName(k.type));
    kData = k.data;
    kType = k.type;
  }
  const bool upper = ctx.node().attrInt("upper", 1) != 0;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, in.shape));
  if (out.numel() == 0) return Status::ok();
  if (!isMovableElement(in.type)) return unsupportedType(ctx, in.type);
  TriluLaunch args;
  args.in = in.data;
  args.out = out.data;
  args.type = in.type;
  args.total = out.numel();
  args.rows = in.shape[in.rank() - 2];
  args.cols = in.shape[in.rank() - 1];
  args.k = kData;
  args.kType = kType;
  args.upper = upper;
  return launchTrilu(args, ctx.stream());
}

// ================================================================== Range

// A host scalar in the compute type of T (exact: every storage value fits).
template <class C>
C scalarAs(const Tensor& t) {
  if constexpr (std::is_floating_point_v<C>) {
    return static_cast<C>(t.valueAsDouble(0));
  } else {
    return static_cast<C>(t.valueAsInt64(0));
  }
}

// Range in compute type C (RangeLaunch): the count on the host, the values on the device.
template <class C>
Status rangeIn(GpuKernelContext& ctx, DataType type, const Tensor& startT, const Tensor& limitT,
               const Tensor& deltaT) {
  const C start = scalarAs<C>(startT), limit = scalarAs<C>(limitT), delta = scalarAs<C>(deltaT);
  auto counted = ops::rangeCount(start, limit, delta);
  if (!counted.isOk()) return ctx.error(counted.status().message());
  const int64_t count = counted.value();
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, {count}));
  if (count == 0) return Status::ok();
  RangeLaunch args;
  args.out = out.data;
  args.type = type;
  args.count = count;
  if constexpr (std::is_floating_point_v<C>) {
    args.floatStart = start;
    args.floatDelta = delta;
  } else {
    args.intStart = static_cast<int64_t>(start);
    args.intDelta = static_cast<int64_t>(delta);
  }
  return launchRange(args, ctx.stream());
}

Status rangeOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DataType type = ctx.input(0).type;
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).numel() != 1) return ctx.error("start, limit and delta must be scalars");
    if (ctx.input(i).type != type) return ctx.error("start, limit and delta differ in type");
  }
  if (type == DataType::kBool) return ctx.unsupported("Range of bool");
  KILN_ASSIGN_OR_RETURN(Tensor start, ctx.hostInput(0));
  KILN_ASSIGN_OR_RETURN(Tensor limit, ctx.hostInput(1));
  KILN_ASSIGN_OR_RETURN(Tensor delta, ctx.hostInput(2));
  // The compute type of each of kRangeTypes (generators_impl.h).
  switch (type) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt8:
    case DataType::kUInt8:
      return rangeIn<float>(ctx, type, start, limit, delta);
    case DataType::kFloat64:
      return rangeIn<double>(ctx, type, start, limit, delta);
    case DataType::kInt16:
      return rangeIn<int16_t>(ctx, type, start, limit, delta);
    case DataType::kUInt16:
      return rangeIn<uint16_t>(ctx, type, start, limit, delta);
    case DataType::kInt32:
      return rangeIn<int32_t>(ctx, type, start, limit, delta);
    case DataType::kUInt32:
      return rangeIn<uint32_t>(ctx, type, start, limit, delta);
    case DataType::kInt64:
      return rangeIn<int64_t>(ctx, type, start, limit, delta);
    case DataType::kUInt64:
      return rangeIn<uint64_t>(ctx, type, start, limit, delta);
    default:
      return unsupportedType(ctx, type);
  }
}

// ================================================================== ConstantOfShape / EyeLike

// A host scalar in the engine's storage type (float32 becomes the storage float).
Tensor inStorageType(const GpuKernelContext& ctx, const Tensor& value) {
  const DataType storage = ctx.storageType(value.type());
  return storage == value.type() ? value : castTensor(value, storage);
}

Status constantOfShapeOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  std::vector<int64_t> shape;
  KILN_RETURN_IF_ERROR(readInts(ctx, 0, "input", &shape));
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, shape, "shape"));
  Tensor value = Tensor::scalarFloat(0.f);
  if (const Tensor* attr = ctx.node().attrTensor("value")) value = *attr;
  if (value.numel() != 1) return ctx.error("value must hold exactly one element");
  if (value.type() == DataType::kString) return ctx.unsupported("a string value");
  value = inStorageType(ctx, value);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, value.type(), shape));
  if (out.numel() == 0) return Status::ok();
  if (!isMovableElement(value.type())) return unsupportedType(ctx, value.type());
  return launchFill(out.data, value.type(), value.rawData(), out.numel(), ctx.stream());
}

Status eyeLikeOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  if (in.rank() != 2) return ctx.error("input must be 2-D, got " + shapeToString(in.shape));
  DataType type = in.type;
  if (ctx.node().hasAttr("dtype")) {
    const auto modelType = static_cast<DataType>(ctx.node().attrInt("dtype", 1));
    if (!isSupportedDataType(modelType) || modelType == DataType::kString)
      return ctx.unsupported(std::string("dtype ") + dataTypeName(modelType));
    type = ctx.storageType(modelType);
  }
  if (type == DataType::kString) return ctx.unsupported("dtype string");
  const int64_t k = ctx.node().attrInt("k", 0);
  const Tensor one = castTensor(Tensor::scalarFloat(1.f), type);
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, in.shape));
  if (out.numel() == 0) return Status::ok();
  if (!isMovableElement(type)) return unsupportedType(ctx, type);
  EyeLikeLaunch args;
  args.out = out.data;
  args.type = type;
  args.one = one.rawData();
  args.cols = out.shape[1];
  args.k = k;
  args.total = out.numel();
  return launchEyeLike(args, ctx.stream());
}

// ================================================================== OneHot

Status oneHotOp(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& indices = ctx.input(0);
  const DeviceTensor& values = ctx.input(2);
  if (ctx.input(1).numel() != 1 || ctx.input(1).type == DataType::kString) {
    return ctx.error("depth must be a numeric scalar");
  }
  if (values.numel() != 2) return ctx.error("values must hold [off_value, on_value]");
  if (indices.type == DataType::kString) return ctx.error("indices must be numeric");
  if (!isDeviceIndexType(indices.type))
    return ctx.unsupported(std::string("indices of type ") + dataTypeName(indices.type));
  KILN_ASSIGN_OR_RETURN(Tensor depthT, ctx.hostInput(1));
  const int64_t depth = static_cast<int64_t>(depthT.valueAsDouble(0));
  if (depth < 1) return ctx.error("depth must be positive, got " + std::to_string(depth));
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(
      normalizeAxis(ctx, ctx.node().attrInt("axis", -1), indices.rank() + 1, &axis));
  Shape outShape = indices.shape;
  outShape.insert(outShape.begin() + axis, depth);
  KILN_RETURN_IF_ERROR(checkElementCount(ctx, outShape, "output"));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= indices.shape[d];
  const int64_t inner = outer == 0 ? 0 : indices.numel() / outer;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, values.type, outShape));
  if (out.numel() == 0) return Status::ok();
  if (!isMovableElement(values.type)) return unsupportedType(ctx, values.type);
  OneHotLaunch args;
  args.indices = indices.data;
  args.indexType = indices.type;
  args.values = values.data;
  args.out = out.data;
  args.type = values.type;
  args.depth = depth;
  args.inner = inner;
  args.total = out.numel();
  return launchOneHot(args, ctx.stream());
}

}  // namespace

void registerGeneratorGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Trilu", 14, 1000, &triluOp, supportsTrilu);
  registry.add("EyeLike", 9, 1000, &eyeLikeOp, supportsEyeLike);
  registry.add("ConstantOfShape", 9, 1000, &constantOfShapeOp, supportsConstantOfShape);
  registry.add("Range", 11, 1000, &rangeOp, supportsRangeTypes);
  registry.add("OneHot", 9, 1000, &oneHotOp, supportsOneHot);
}

}  // namespace kiln::cuda
