// Tensor generators on the GPU: Trilu, Range, ConstantOfShape, EyeLike and OneHot.
//
// Contract: every kernel here matches the CPU reference kernel of the same op
// (engine/backends/cpu/ops/generator_ops.cpp; OneHot: selection_ops.cpp): the same opset
// ranges, attribute defaults, output shapes, error messages and arithmetic order where it
// decides results. Trilu moves bytes (dispatch on element size) and reads k on the
// device. Range, ConstantOfShape, EyeLike and OneHot compute their shapes on the host;
// the fill values are converted on the host with castTensor (the CPU's conversion) and
// written as raw bytes.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/op_common.cuh"
#include "ops/scalar_inputs.h"

namespace kiln::cuda {
namespace {

// Tensor::valueAsInt64 on the device: integers as they are, floats truncated
// (non-finite -> 0, saturating at +-9.2e18). Used for OneHot indices and Trilu's k.
__device__ __forceinline__ int64_t floatToInt64(double v) {
  if (!isfinite(v)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}
__device__ int64_t loadAsInt64(const void* data, DataType type, int64_t i) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
      return static_cast<const int8_t*>(data)[i];
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
    case DataType::kBool:
      return static_cast<const uint8_t*>(data)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(data)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(data)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(data)[i];
    case DataType::kUInt32:
      return static_cast<const uint32_t*>(data)[i];
    case DataType::kInt64:
      return static_cast<const int64_t*>(data)[i];
    case DataType::kUInt64:
      return static_cast<int64_t>(static_cast<const uint64_t*>(data)[i]);
    case DataType::kFloat32:
      return floatToInt64(static_cast<const float*>(data)[i]);
    case DataType::kFloat64:
      return floatToInt64(static_cast<const double*>(data)[i]);
    case DataType::kFloat16:
      return floatToInt64(__half2float(static_cast<const __half*>(data)[i]));
    case DataType::kBFloat16:
      return floatToInt64(__bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]));
    default:
      return 0;
  }
}
// The types loadAsInt64 reads.
bool isDeviceIndexType(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
    case DataType::kBool:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return true;
    default:
      return false;
  }
}

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

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of every matrix; k is
// read on the device (0 when absent).
template <class T>
__global__ void triluKernel(const T* in, T* out, int64_t rows, int64_t cols, const void* kData,
                            DataType kType, bool upper, int64_t total) {
  const int64_t k = kData ? loadAsInt64(kData, kType, 0) : 0;
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t j = e % cols;
    const int64_t i = (e / cols) % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    out[e] = keep ? in[e] : T{};
  }
}

template <class T>
Status launchTrilu(const GpuKernelContext& ctx, const DeviceTensor& in, const DeviceTensor& out,
                   const void* kData, DataType kType, bool upper) {
  const int64_t total = out.numel();
  const int64_t rows = in.shape[in.rank() - 2], cols = in.shape[in.rank() - 1];
  triluKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(
      in.as<const T>(), out.as<T>(), rows, cols, kData, kType, upper, total);
  KILN_CUDA_CHECK_LAUNCH("triluKernel");
  return Status::ok();
}

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
  KILN_DISPATCH_BYTES(in.type, ctx, return launchTrilu<T>(ctx, in, out, kData, kType, upper));
  return Status::ok();
}

// ================================================================== Range

// start + i * delta in the compute type, the product rounded on its own as on the host.
template <class T>
__device__ __forceinline__ T rangeValue(AccOf<T> start, AccOf<T> delta, int64_t i) {
  using C = AccOf<T>;
  if constexpr (std::is_same_v<C, float>) {
    return fromAcc<T>(start + __fmul_rn(static_cast<float>(i), delta));
  } else if constexpr (std::is_same_v<C, double>) {
    return start + __dmul_rn(static_cast<double>(i), delta);
  } else {
    return static_cast<T>(start + static_cast<C>(i) * delta);
  }
}

template <class T>
__global__ void rangeKernel(T* out, AccOf<T> start, AccOf<T> delta, int64_t total) {
  KILN_POOL_GRID_LOOP(i, total) {
    out[i] = rangeValue<T>(start, delta, i);
  }
}

// A host scalar in the compute type of T (exact: every storage value fits).
template <class C>
C scalarAs(const Tensor& t) {
  if constexpr (std::is_floating_point_v<C>) {
    return static_cast<C>(t.valueAsDouble(0));
  } else {
    return static_cast<C>(t.valueAsInt64(0));
  }
}

template <class T>
Status rangeTyped(GpuKernelContext& ctx, DataType type, const Tensor& startT, const Tensor& limitT,
                  const Tensor& deltaT) {
  if constexpr (std::is_same_v<T, bool>) {
    return ctx.unsupported("Range of bool");
  } else {
    using C = AccOf<T>;
    const C start = scalarAs<C>(startT), limit = scalarAs<C>(limitT), delta = scalarAs<C>(deltaT);
    auto counted = ops::rangeCount(start, limit, delta);
    if (!counted.isOk()) return ctx.error(counted.status().message());
    const int64_t count = counted.value();
    KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, {count}));
    if (count == 0) return Status::ok();
    rangeKernel<T>
        <<<gridFor(count), kBlockSize, 0, ctx.stream()>>>(out.as<T>(), start, delta, count);
    KILN_CUDA_CHECK_LAUNCH("rangeKernel");
    return Status::ok();
  }
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
  KILN_DISPATCH_NUMERIC(type, ctx, return rangeTyped<T>(ctx, type, start, limit, delta));
  return Status::ok();
}

// ================================================================== ConstantOfShape / EyeLike

template <class T>
__global__ void fillKernel(T* out, T value, int64_t total) {
  KILN_POOL_GRID_LOOP(i, total) {
    out[i] = value;
  }
}

template <class T>
Status launchFill(const GpuKernelContext& ctx, const DeviceTensor& out, const Tensor& value) {
  const int64_t total = out.numel();
  fillKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(out.as<T>(),
                                                                 firstElementBits<T>(value), total);
  KILN_CUDA_CHECK_LAUNCH("fillKernel");
  return Status::ok();
}

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
  KILN_DISPATCH_BYTES(value.type(), ctx, return launchFill<T>(ctx, out, value));
  return Status::ok();
}

template <class T>
__global__ void eyeLikeKernel(T* out, int64_t cols, int64_t k, T one, int64_t total) {
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t i = e / cols, j = e - i * cols;
    out[e] = j - i == k ? one : T{};
  }
}

template <class T>
Status launchEyeLike(const GpuKernelContext& ctx, const DeviceTensor& out, int64_t k,
                     const Tensor& one) {
  const int64_t total = out.numel();
  eyeLikeKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(
      out.as<T>(), out.shape[1], k, firstElementBits<T>(one), total);
  KILN_CUDA_CHECK_LAUNCH("eyeLikeKernel");
  return Status::ok();
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
  KILN_DISPATCH_BYTES(type, ctx, return launchEyeLike<T>(ctx, out, k, one));
  return Status::ok();
}

// ================================================================== OneHot

// out[o, v, i] = on when the (normalized) index at [o, i] equals v, else off.
template <class T>
__global__ void oneHotKernel(const void* indices, DataType indexType, const T* values, T* out,
                             int64_t depth, int64_t inner, int64_t total) {
  const T off = values[0], on = values[1];
  KILN_POOL_GRID_LOOP(e, total) {
    const int64_t r = e / inner;
    const int64_t i = e - r * inner;
    const int64_t o = r / depth;
    const int64_t v = r - o * depth;
    int64_t index = loadAsInt64(indices, indexType, o * inner + i);
    if (index < 0) index += depth;
    out[e] = index == v ? on : off;
  }
}

template <class T>
Status launchOneHot(const GpuKernelContext& ctx, const DeviceTensor& indices,
                    const DeviceTensor& values, const DeviceTensor& out, int64_t depth,
                    int64_t inner) {
  const int64_t total = out.numel();
  oneHotKernel<T><<<gridFor(total), kBlockSize, 0, ctx.stream()>>>(
      indices.data, indices.type, values.as<const T>(), out.as<T>(), depth, inner, total);
  KILN_CUDA_CHECK_LAUNCH("oneHotKernel");
  return Status::ok();
}

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
  KILN_DISPATCH_BYTES(values.type, ctx,
                      return launchOneHot<T>(ctx, indices, values, out, depth, inner));
  return Status::ok();
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
