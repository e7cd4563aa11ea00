// CUDA kernels for TopK, CumProd, Dropout (inference) and NonZero.
//
// Contract: the CPU kernels' opset ranges, attributes, defaults, error messages and
// results (cpu/ops/scan_ops.cpp, tensor_extra_ops.cpp, misc.cpp, selection_ops.cpp).
// - TopK orders (value, index) pairs like the CPU's TopKOrder: larger (or smaller)
//   first, NaN above every number, equal values by lower index, so results are
//   exact. A row of up to kTopKBitonicMax elements is bitonic-sorted in shared memory by
//   one block; longer rows run k selection passes (each the best element ranking
//   after the previous one) when k <= kTopKSelectMaxK, else the node moves to the host.
// - CumProd runs each [outer, inner] column sequentially like the CPU: float types
//   in double, integers in wrapping uint64.
// - Dropout is inference-only here (training_mode input present: host fallback):
//   a copy, with an all-true (opset < 10: all-one, x's type) mask.
// - NonZero counts per block, scans the counts, reads the total on the host (a
//   synchronizing copy; refused during graph capture), then writes coordinates in
//   row-major order. Non-zero is tested on the element bits (sign bit masked off for
//   floats, so -0 is zero and NaN is non-zero, as the CPU's float compare).
// The kernels: selection_impl.cu (contract: selection_impl.h).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/selection_impl.h"
#include "backends/cuda/ops/op_common.h"
#include "ops/scalar_inputs.h"

namespace kiln::cuda {
namespace {

Status resolveAxis(const GpuKernelContext& ctx, int64_t axis, int64_t rank, const char* what,
                   int64_t* out) {
  if (axis < -rank || axis >= rank) {
    return ctx.error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

bool isTopKType(DataType t) {
  return isFloatData(t) || t == DataType::kInt8 || t == DataType::kUInt8 || t == DataType::kInt32 ||
         t == DataType::kInt64;
}

// ---- TopK -----------------------------------------------------------------------------

// Reads TopK's one-element K input (the CPU's readScalarInput).
Status readK(GpuKernelContext& ctx, int64_t* k) {
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(1));
  if (t.type() != DataType::kInt64 && t.type() != DataType::kInt32) {
    return ctx.error(std::string("input 'K' must be int32 or int64, got ") +
                     dataTypeName(t.type()));
  }
  if (t.numel() != 1 || t.rank() > 1) {
    return ctx.error("input 'K' must hold one value, got shape " + shapeToString(t.shape()));
  }
  *k = t.valueAsInt64(0);
  return Status::ok();
}

Status topKKernel(GpuKernelContext& ctx) {
  const bool kFromInput = ctx.opset() >= 10;  // opset 1 had a 'k' attribute
  KILN_RETURN_IF_ERROR(requireInputs(ctx, kFromInput ? 2 : 1));
  const DeviceTensor& x = ctx.input(0);
  int64_t axis = 0, k = ctx.node().attrInt("k", -1);
  KILN_RETURN_IF_ERROR(
      resolveAxis(ctx, ctx.node().attrInt("axis", -1), x.rank(), "attribute 'axis'", &axis));
  if (kFromInput) KILN_RETURN_IF_ERROR(readK(ctx, &k));
  int64_t outer = 1, inner = 1;
  const int64_t n = x.shape[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  if (k < 0 || k > n) {
    return ctx.error("k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) +
                     "] for axis " + std::to_string(axis) + " of " + shapeToString(x.shape));
  }
  // 'sorted' = 0 allows any order; sorted output satisfies that too.
  const bool largest = ctx.node().attrInt("largest", 1) != 0;
  if (n > kTopKBitonicMax && k > kTopKSelectMaxK) {
    return ctx.unsupported("TopK with k = " + std::to_string(k) + " of a row of " +
                           std::to_string(n) + " elements");
  }
  Shape outShape = x.shape;
  outShape[axis] = k;
  KILN_ASSIGN_OR_RETURN(DeviceTensor values, ctx.allocateOutput(0, x.type, outShape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor indices, ctx.allocateOutput(1, DataType::kInt64, outShape));
  const int64_t rows = outer * inner;
  if (rows == 0 || k == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, x.type, kTopKTypes));
  TopKLaunch args;
  args.x = x.data;
  args.values = values.data;
  args.indices = indices.as<int64_t>();
  args.type = x.type;
  args.rows = rows;
  args.n = n;
  args.inner = inner;
  args.k = k;
  args.largest = largest;
  return launchTopK(args, ctx.stream());
}

std::string supportsTopK(const Node& node, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0);
  if (!isTopKType(x))
    return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(x);
  return "";
}

// ---- CumProd --------------------------------------------------------------------------

Status cumProdGpuKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor axisIn, ctx.hostInput(1));
  auto axisOr = ops::scalarAxisInput(axisIn, x.rank());
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t axis = *axisOr;
  const bool exclusive = ctx.node().attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.node().attrInt("reverse", 0) != 0;
  int64_t outer = 1, inner = 1, n = 1;
  if (x.rank() > 0) {
    n = x.shape[axis];
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, x.type, kCumProdTypes));
  CumProdLaunch args;
  args.x = x.data;
  args.y = y.data;
  args.type = x.type;
  args.outer = outer;
  args.n = n;
  args.inner = inner;
  args.exclusive = exclusive;
  args.reverse = reverse;
  return launchCumProd(args, ctx.stream());
}

std::string supportsCumProd(const Node& node, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0);
  const bool ok = isFloatData(x) || (isInteger(x) && packedElementBits(x) == 0);
  if (!ok) return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(x);
  return "";
}

// ---- Dropout (inference) ---------------------------------------------------------------

// A one-element numeric input as double (the CPU's readScalarDouble).
Status readScalarDouble(GpuKernelContext& ctx, size_t index, const char* name, double* out) {
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(index));
  auto value = ops::scalarNumber(t, name);
  if (!value.isOk()) return ctx.error(value.status().message());
  *out = *value;
  return Status::ok();
}

Status dropoutKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& x = ctx.input(0);
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 12) {
    ratio = ctx.node().attrFloat("ratio", 0.5f);
  } else {
    if (ctx.inputCount() > 1 && ctx.hasInput(1))
      KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 1, "ratio", &ratio));
    if (ctx.inputCount() > 2 && ctx.hasInput(2)) {
      double flag = 0;
      KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 2, "training_mode", &flag));
      training = flag != 0;
    }
  }
  if (!(ratio >= 0.0 && ratio <= 1.0)) {
    return ctx.error("ratio must be in [0, 1], got " + std::to_string(ratio));
  }
  if (training && ratio > 0.0) return ctx.unsupported("Dropout in training mode");
  if (!isFloatData(x.type)) {
    return unsupportedType(ctx, x.type);
  }
  cudaStream_t stream = ctx.stream();
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, x.shape));
  if (x.numel() > 0 && y.data != x.data) {
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(y.data, x.data, x.byteSize(), cudaMemcpyDeviceToDevice, stream));
  }
  if (ctx.outputCount() < 2 || !ctx.wantsOutput(1)) return Status::ok();
  // Opsets 7..9 typed the mask like the input; 10 made it bool.
  const DataType maskType = ctx.opset() < 10 ? x.type : DataType::kBool;
  KILN_ASSIGN_OR_RETURN(DeviceTensor mask, ctx.allocateOutput(1, maskType, x.shape));
  const int64_t n = x.numel();
  if (n == 0) return Status::ok();
  if (maskType == DataType::kBool) {
    KILN_CUDA_CHECK(cudaMemsetAsync(mask.data, 1, mask.byteSize(), stream));
    return Status::ok();
  }
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, maskType, device_types::kFloats));
  return launchFillOnes(mask.data, maskType, n, stream);
}

std::string supportsDropout(const Node& node, const std::vector<DataType>& types) {
  const DataType x = typeAt(types, 0);
  if (!isFloatData(x)) return std::string("no GPU kernel for Dropout on ") + dataTypeName(x);
  if (node.opset >= 12 && node.inputs.size() > 2 && !node.inputs[2].empty())
    return "Dropout with a training_mode input runs on the host";
  return "";
}

// ---- NonZero --------------------------------------------------------------------------

constexpr int kNonZeroMaxBlocks = 1024;
constexpr int64_t kNonZeroMinChunk = 4096;

Status nonZeroKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DeviceTensor& in = ctx.input(0);
  const Shape shape = in.rank() == 0 ? Shape{1} : in.shape;
  const int rank = static_cast<int>(shape.size());
  if (rank > kNonZeroMaxRank) return ctx.unsupported("NonZero above rank 8");
  cudaStream_t stream = ctx.stream();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  KILN_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    return ctx.unsupported(
        "NonZero reads its output size on the host, which a CUDA graph cannot "
        "capture");
  }
  const int64_t n = in.numel();
  const DataType type = in.type;
  if (!(isFloatData(type) || type == DataType::kBool ||
        (isInteger(type) && packedElementBits(type) == 0))) {
    return unsupportedType(ctx, type);
  }
  int64_t count = 0;
  const int blocks = static_cast<int>(
      std::clamp<int64_t>((n + kNonZeroMinChunk - 1) / kNonZeroMinChunk, 1, kNonZeroMaxBlocks));
  const int64_t chunk = std::max<int64_t>((n + blocks - 1) / blocks, 1);
  int64_t* counts = nullptr;
  if (n > 0) {
    KILN_ASSIGN_OR_RETURN(void* workspace, ctx.workspace(sizeof(int64_t) * (blocks + 1)));
    counts = static_cast<int64_t*>(workspace);
  }
  // Floats: the sign bit does not make a value non-zero (-0 == 0); NaN bits stay.
  NonZeroLaunch args;
  args.x = in.data;
  args.type = type;
  args.isFloat = isFloatData(type);
  args.n = n;
  args.blocks = blocks;
  args.chunk = chunk;
  args.counts = counts;
  if (n > 0) {
    KILN_RETURN_IF_ERROR(launchNonZeroCount(args, stream));
    KILN_RETURN_IF_ERROR(ctx.hostRoundTrip("reads the non-zero count to size its output"));
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(&count, counts + blocks, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    KILN_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, DataType::kInt64, {rank, count}));
  if (count == 0) return Status::ok();
  NonZeroShape info;
  info.rank = rank;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    info.strides[d] = stride;
    stride *= shape[d];
  }
  return launchNonZeroWrite(args, info, count, out.as<int64_t>(), stream);
}

}  // namespace

void registerSelectionGpuKernels(GpuKernelRegistry& registry) {
  registry.add("TopK", 1, 1000, &topKKernel, &supportsTopK);  // branches on opset 10 (K input)
  registry.add("CumProd", 26, 1000, &cumProdGpuKernel, &supportsCumProd);
  registry.add("Dropout", 1, 1000, &dropoutKernel, &supportsDropout);
  registry.add("NonZero", 9, 1000, &nonZeroKernel, &supportsNumericTypes);
}

}  // namespace kiln::cuda
