// The variadic Sum / Mean / Max / Min, Where and the conversions Cast and CastLike of the
// CUDA backend; the family's contract is elementwise.cu's header comment.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/elementwise_common.cuh"

namespace kiln::cuda {
namespace {

using namespace ew;

// ---- Variadic Sum, Mean, Max, Min: up to kMaxVariadic inputs per launch, folded left to
// right in the compute type.

constexpr int kMaxVariadic = 8;

enum class VariadicOp : int { kSum, kMax, kMin };

template <class T>
struct VariadicArgs {
  const T* data[kMaxVariadic];
  Operand operands[kMaxVariadic];
  int count = 0;
  VariadicOp op = VariadicOp::kSum;
  int meanDivisor = 0;  // > 0: divide the result by this (Mean's last launch)
};

// Max and Min propagate NaN from either side, as numpy's maximum/minimum do.
template <class C>
__device__ __forceinline__ C fold(VariadicOp op, C x, C y) {
  switch (op) {
    case VariadicOp::kMax:
      return ((x >= y) | isNan(x)) ? x : y;
    case VariadicOp::kMin:
      return ((x <= y) | isNan(x)) ? x : y;
    default:
      if constexpr (std::is_floating_point_v<C>) return x + y;
      return x;  // Sum and Mean take floats only
  }
}

template <class T>
__global__ void variadicKernel(VariadicArgs<T> args, T* out, int64_t n) {
  using C = Compute<T>;
  KILN_FOR_EACH_INDEX(i, n) {
    C acc = load(args.data[0], operandIndex(args.operands[0], i));
    for (int k = 1; k < args.count; ++k) {
      acc = fold(args.op, acc, load(args.data[k], operandIndex(args.operands[k], i)));
    }
    if constexpr (std::is_floating_point_v<C>) {
      if (args.meanDivisor > 0) acc = acc / static_cast<C>(args.meanDivisor);
    }
    store(out, i, acc);
  }
}

// One launch over inputs[first, first + count), after `withOutput` the accumulated output.
template <class T>
Status launchVariadic(GpuKernelContext& ctx, const DeviceTensor& out, bool withOutput, size_t first,
                      size_t count, VariadicOp op, int meanDivisor) {
  VariadicArgs<T> args;
  args.op = op;
  args.meanDivisor = meanDivisor;
  std::vector<const Shape*> shapes;
  if (withOutput) {
    args.data[args.count++] = out.as<T>();
    shapes.push_back(&out.shape);
  }
  for (size_t k = first; k < first + count; ++k) {
    args.data[args.count++] = ctx.input(k).as<T>();
    shapes.push_back(&ctx.input(k).shape);
  }
  KILN_RETURN_IF_ERROR(planOperands(ctx, out.shape, shapes, args.operands));
  const int64_t n = out.numel();
  variadicKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(args, out.as<T>(), n);
  KILN_CUDA_CHECK_LAUNCH("variadicKernel");
  return Status::ok();
}

// Folds all inputs into `out`, kMaxVariadic per launch; later launches read the partial
// result from `out` first. Mean divides in the last launch.
template <class T>
Status foldInputs(GpuKernelContext& ctx, const DeviceTensor& out, VariadicOp op, bool mean) {
  if constexpr (std::is_same_v<T, bool>) {
    return ctx.unsupported("bool inputs");
  } else {
    const size_t count = ctx.inputCount();
    size_t done = 0;
    while (done < count) {
      const bool withOutput = done > 0;
      const size_t take =
          std::min(count - done, static_cast<size_t>(kMaxVariadic - (withOutput ? 1 : 0)));
      const bool last = done + take == count;
      KILN_RETURN_IF_ERROR(launchVariadic<T>(ctx, out, withOutput, done, take, op,
                                             mean && last ? static_cast<int>(count) : 0));
      done += take;
    }
    return Status::ok();
  }
}

Status variadic(GpuKernelContext& ctx, VariadicOp op, TypeSet set, bool mean) {
  const size_t count = ctx.inputCount();
  if (count == 0) return ctx.error("needs at least one input");
  KILN_RETURN_IF_ERROR(requireInputs(ctx, count));
  const DataType type = ctx.input(0).type;
  KILN_RETURN_IF_ERROR(checkType(ctx, "input", type, set));
  Shape shape = ctx.input(0).shape;
  for (size_t i = 1; i < count; ++i) {
    const DeviceTensor& in = ctx.input(i);
    if (in.type != type) {
      return ctx.error("input " + std::to_string(i) + " has type " + dataTypeName(in.type) +
                       " but input 0 has " + dataTypeName(type));
    }
    Shape next;
    KILN_RETURN_IF_ERROR(broadcastPair(ctx, shape, in.shape, &next));
    shape = next;
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, shape));
  if (out.numel() == 0) return Status::ok();
  KILN_DISPATCH_NUMERIC(type, ctx, { return foldInputs<T>(ctx, out, op, mean); });
  return Status::ok();
}

Status sumKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kSum, TypeSet::kFloat, false);
}
Status meanKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kSum, TypeSet::kFloat, true);
}
Status maxKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kMax, TypeSet::kNumeric, false);
}
Status minKernel(GpuKernelContext& ctx) {
  return variadic(ctx, VariadicOp::kMin, TypeSet::kNumeric, false);
}

// ---- Where: cond ? x : y over the broadcast of all three; moves elements by byte size.

template <class T>
__global__ void whereKernel(const bool* cond, const T* x, const T* y, T* out, int64_t n, Operand oc,
                            Operand ox, Operand oy) {
  KILN_FOR_EACH_INDEX(i, n) {
    out[i] = cond[operandIndex(oc, i)] ? x[operandIndex(ox, i)] : y[operandIndex(oy, i)];
  }
}

Status whereKernelFn(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& cond = ctx.input(0);
  const DeviceTensor& x = ctx.input(1);
  const DeviceTensor& y = ctx.input(2);
  if (cond.type != DataType::kBool) return ctx.error("input condition must be bool");
  if (x.type != y.type) return ctx.error("inputs X and Y must have the same type");
  KILN_RETURN_IF_ERROR(checkType(ctx, "input X", x.type, TypeSet::kAll));
  Shape partial;
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, cond.shape, x.shape, &partial));
  KILN_RETURN_IF_ERROR(broadcastPair(ctx, partial, y.shape, &shape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, x.type, shape));
  const int64_t n = shapeNumel(shape);
  if (n == 0) return Status::ok();
  Operand operands[3];
  KILN_RETURN_IF_ERROR(planOperands(ctx, shape, {&cond.shape, &x.shape, &y.shape}, operands));
  KILN_DISPATCH_BYTES(x.type, ctx, {
    whereKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(
        cond.as<bool>(), x.as<T>(), y.as<T>(), out.as<T>(), n, operands[0], operands[1],
        operands[2]);
  });
  KILN_CUDA_CHECK_LAUNCH("whereKernel");
  return Status::ok();
}

// ---- Cast and CastLike among the numeric types and bool.

// double -> float rounding to odd, so that a second rounding to half or bfloat16 is exact
// (the CPU's toFloatRoundOdd).
__device__ __forceinline__ float toFloatRoundOdd(double d) {
  float f = __double2float_rn(d);
  if (static_cast<double>(f) == d || d != d) return f;
  if ((__float_as_uint(f) & 1u) == 0) f = nextafterf(f, d > f ? INFINITY : -INFINITY);
  return f;
}

// One element with ONNX Cast semantics, from the compute type CF of the source.
template <class To, class CF>
__device__ __forceinline__ To convertValue(CF x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != CF(0);
  } else if constexpr (kIntegerLike<To> && std::is_floating_point_v<CF>) {
    return truncateToInteger<To>(static_cast<double>(x));
  } else if constexpr (kHalfLike<To>) {
    if constexpr (std::is_same_v<CF, float>)
      return fromFloat<To>(x);
    else
      return fromFloat<To>(toFloatRoundOdd(static_cast<double>(x)));
  } else {
    return static_cast<To>(x);
  }
}

template <class To, class CF>
__device__ __forceinline__ void storeConverted(void* dst, int64_t i, CF x) {
  static_cast<To*>(dst)[i] = convertValue<To>(x);
}

template <class From>
__global__ void castKernel(const From* src, void* dst, DataType to, int64_t n) {
  KILN_FOR_EACH_INDEX(i, n) {
    const Compute<From> x = load(src, i);
    switch (to) {
      case DataType::kFloat32:
        storeConverted<float>(dst, i, x);
        break;
      case DataType::kFloat16:
        storeConverted<__half>(dst, i, x);
        break;
      case DataType::kBFloat16:
        storeConverted<__nv_bfloat16>(dst, i, x);
        break;
      case DataType::kFloat64:
        storeConverted<double>(dst, i, x);
        break;
      case DataType::kInt8:
        storeConverted<int8_t>(dst, i, x);
        break;
      case DataType::kUInt8:
        storeConverted<uint8_t>(dst, i, x);
        break;
      case DataType::kInt16:
        storeConverted<int16_t>(dst, i, x);
        break;
      case DataType::kUInt16:
        storeConverted<uint16_t>(dst, i, x);
        break;
      case DataType::kInt32:
        storeConverted<int32_t>(dst, i, x);
        break;
      case DataType::kUInt32:
        storeConverted<uint32_t>(dst, i, x);
        break;
      case DataType::kInt64:
        storeConverted<int64_t>(dst, i, x);
        break;
      case DataType::kUInt64:
        storeConverted<uint64_t>(dst, i, x);
        break;
      default:
        storeConverted<bool>(dst, i, x);
        break;
    }
  }
}

// Casts input 0 into storage type `to`.
Status castInto(GpuKernelContext& ctx, DataType to) {
  const DeviceTensor& in = ctx.input(0);
  if (!inTypeSet(in.type, TypeSet::kAll)) {
    return ctx.unsupported(std::string("input has data type ") + dataTypeName(in.type));
  }
  if (!inTypeSet(to, TypeSet::kAll)) {
    return ctx.unsupported(std::string("cannot cast to data type ") + dataTypeName(to));
  }
  const std::string roundMode = ctx.node().attrString("round_mode", "up");
  if (roundMode != "up" && roundMode != "down" && roundMode != "nearest")
    return ctx.error("attribute 'round_mode' = '" + roundMode + "' is not up, down or nearest");
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, to, in.shape));
  const int64_t n = in.numel();
  if (n == 0) return Status::ok();
  if (in.type == to) {
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(out.data, in.data, in.byteSize(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return Status::ok();
  }
  KILN_DISPATCH_NUMERIC(in.type, ctx, {
    castKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(in.as<T>(), out.data, to, n);
  });
  KILN_CUDA_CHECK_LAUNCH("castKernel");
  return Status::ok();
}

Status castKernelFn(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  if (!ctx.node().hasAttr("to")) return ctx.error("attribute 'to' is required");
  const int64_t to = ctx.node().attrInt("to", 0);
  if (to <= 0 || to > kLastDataTypeCode) {
    return ctx.unsupported("attribute 'to' = " + std::to_string(to) + " is not a known data type");
  }
  return castInto(ctx, ctx.storageType(static_cast<DataType>(to)));
}

// CastLike: Cast to the (storage) type of input 1, whose values are ignored.
Status castLikeKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  return castInto(ctx, ctx.input(1).type);
}

}  // namespace

void registerNaryAndCastGpuKernels(GpuKernelRegistry& registry) {
  using namespace ew;
  registry.add("Max", 1, 1000, maxKernel, kSupportsNumeric);
  registry.add("Min", 1, 1000, minKernel, kSupportsNumeric);
  registry.add("Sum", 1, 1000, sumKernel, kSupportsFloat);
  registry.add("Mean", 1, 1000, meanKernel, kSupportsFloat);
  registry.add("Where", 9, 1000, whereKernelFn, supportsWhere);
  registry.add("Cast", 6, 1000, castKernelFn, supportsCast);
  registry.add("CastLike", 15, 1000, castLikeKernel, supportsCastLike);
}

}  // namespace kiln::cuda
