// ai.kiln QuantizedConv and QuantizedMatMul on the GPU (contract:
// ir/quantized_layers.h; kernels: int8_layers.cu). Each layer is int8 packing ->
// INT8 GEMM (cuBLASLt with CUBLAS_COMPUTE_32I, the IMMA tensor-core path, or Kiln's
// tiled kernel when cuBLASLt has no algorithm for the shape) -> epilogue. The
// weights are padded to a multiple of 4 along K (IMMA's requirement), uploaded once
// per context with their per-channel sums and multipliers x_scale * w_scale[c].
// Convolutions unfold the input (im2col) group by group; rank-5 (3-D) convolutions
// and non-constant weights go to the host fallback. A channels-last QuantizedConv
// (NHWC, from channels_last_layout) runs as one cuDNN graph instead (int8_conv_cudnn).
#include <cublasLt.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/libraries.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "backends/cuda/ops/gemm.h"
#include "backends/cuda/ops/int8_conv_cudnn.h"
#include "backends/cuda/ops/int8_layers.h"
#include "ir/channels_last.h"
#include "ir/quantized_layers.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

bool isFloatStorage(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// X float or int8/uint8; the rest are read on the host (constants).
std::string supportsInt8Layer(const Node&, const std::vector<DataType>& types) {
  const DataType x = types.empty() ? DataType::kUndefined : types[0];
  if (!isFloatStorage(x) && x != DataType::kInt8 && x != DataType::kUInt8)
    return std::string("no GPU INT8 layer for ") + dataTypeName(x) + " input";
  if (types.size() > 1 && types[1] != DataType::kInt8) return "weights are not int8";
  return "";
}

// cuBLASLt's int8 GEMM acc[rows, cols] = A[rows, k] W[cols, k]^T with int32 output
// (describeInt8TnGemm in gemm.h).
struct LtInt8Gemm : LtMatmulDescriptors {  // a: W, b: A
  int64_t rows = 0, cols = 0, k = 0;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool available = false;
  std::string why;  // when not available
};

Status planLtGemm(GpuKernelContext& ctx, LtInt8Gemm* g) {
  KILN_RETURN_IF_ERROR(describeInt8TnGemm(g, CUDA_R_32I, CUDA_R_32I, g->rows, g->cols, g->k));
  KILN_ASSIGN_OR_RETURN(const LtAlgorithm result, firstLtAlgorithm(ctx, g->op, g->a, g->b, g->d));
  if (!result.found) {
    g->why = "cuBLASLt has no int8 algorithm for " + std::to_string(g->rows) + "x" +
             std::to_string(g->cols) + "x" + std::to_string(g->k);
    return Status::ok();
  }
  g->algo = result.algo;
  g->workspace = result.workspace;
  g->available = true;
  return Status::ok();
}

// What a layer keeps on the device across enqueues (cleared when shapes change).
struct Int8LayerState {
  DeviceBuffer weights;     // int8 [channels, kPadded]
  DeviceBuffer multiplier;  // float [channels]: x_scale * w_scale[c]
  DeviceBuffer bias;        // float [channels]
  DeviceBuffer weightSum;   // int32 [channels]
  int64_t depth = 0, kPadded = 0, channels = 0;
  Int8Input input;
  bool quantizedOutput = false;
  float yScale = 1.f;
  int32_t yZeroPoint = 0;
  DataType yQuantizedType = DataType::kInt8;
  std::unique_ptr<LtInt8Gemm> gemm;
};

Result<float> scalarInput(GpuKernelContext& ctx, size_t slot) {
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(slot));
  if (t.type() != DataType::kFloat32 || t.numel() != 1)
    return ctx.error("input " + std::to_string(slot) + " (scale) must be one float32 value");
  return t.data<float>()[0];
}

// Zero point value and type (int8 0 when absent).
Status zeroPointInput(GpuKernelContext& ctx, size_t slot, int32_t* value, DataType* type) {
  *value = 0;
  *type = DataType::kInt8;
  if (!ctx.hasInput(slot)) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(slot));
  if ((t.type() != DataType::kInt8 && t.type() != DataType::kUInt8) || t.numel() != 1)
    return ctx.error("input " + std::to_string(slot) + " (zero point) must be one int8/uint8");
  *value = static_cast<int32_t>(t.valueAsInt64(0));
  *type = t.type();
  return Status::ok();
}

template <class T>
Status upload(DeviceBuffer* buffer, const std::vector<T>& host, const char* what) {
  KILN_RETURN_IF_ERROR(buffer->allocate(static_cast<int64_t>(host.size() * sizeof(T)), what));
  // Once per context, at the first enqueue: a synchronous copy keeps `host` simple.
  KILN_CUDA_CHECK(
      cudaMemcpy(buffer->data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return Status::ok();
}

// Weights as rows [channels, depth] (a conv's [M, C/g * k...], a matmul's W^T), padded
// to kPadded columns, with scales, bias and per-row sums; the input's quantization.
Status prepareState(GpuKernelContext& ctx, const Tensor& rows, Int8LayerState* s) {
  s->channels = rows.dim(0);
  s->depth = rows.dim(1);
  s->kPadded = (s->depth + 3) / 4 * 4;
  std::vector<int8_t> padded(static_cast<size_t>(s->channels * s->kPadded), 0);
  std::vector<int32_t> sums(static_cast<size_t>(s->channels), 0);
  for (int64_t c = 0; c < s->channels; ++c)
    for (int64_t k = 0; k < s->depth; ++k) {
      const int8_t v = rows.data<int8_t>()[c * s->depth + k];
      padded[c * s->kPadded + k] = v;
      sums[c] += v;
    }
  KILN_ASSIGN_OR_RETURN(const float xScale, scalarInput(ctx, kQuantXScale));
  KILN_ASSIGN_OR_RETURN(Tensor wScale, ctx.hostInput(kQuantWScale));
  if (wScale.type() != DataType::kFloat32 || (wScale.numel() != 1 && wScale.numel() != s->channels))
    return ctx.error("input 6 (w_scale) must be float32, one value or one per output channel");
  std::vector<float> multiplier(static_cast<size_t>(s->channels)), bias(multiplier.size(), 0.f);
  for (int64_t c = 0; c < s->channels; ++c)
    multiplier[c] = xScale * wScale.data<float>()[wScale.numel() == 1 ? 0 : c];
  if (ctx.hasInput(kQuantBias)) {
    KILN_ASSIGN_OR_RETURN(Tensor b, ctx.hostInput(kQuantBias));
    if (b.type() != DataType::kFloat32 || b.numel() != s->channels)
      return ctx.error("input 2 (bias) must be float32 with one value per output channel");
    std::memcpy(bias.data(), b.data<float>(), bias.size() * sizeof(float));
  }
  KILN_RETURN_IF_ERROR(upload(&s->weights, padded, "int8 weights"));
  KILN_RETURN_IF_ERROR(upload(&s->multiplier, multiplier, "int8 multipliers"));
  KILN_RETURN_IF_ERROR(upload(&s->bias, bias, "int8 bias"));
  KILN_RETURN_IF_ERROR(upload(&s->weightSum, sums, "int8 weight sums"));
  s->input.scale = xScale;
  KILN_RETURN_IF_ERROR(
      zeroPointInput(ctx, kQuantXZeroPoint, &s->input.zeroPoint, &s->input.quantizedType));
  s->quantizedOutput = ctx.hasInput(kQuantYScale);
  if (s->quantizedOutput) {
    KILN_ASSIGN_OR_RETURN(s->yScale, scalarInput(ctx, kQuantYScale));
    KILN_RETURN_IF_ERROR(zeroPointInput(ctx, kQuantYZeroPoint, &s->yZeroPoint, &s->yQuantizedType));
  }
  return Status::ok();
}

// acc = A W^T through cuBLASLt when it has an algorithm, else the tiled kernel.
Status runGemm(GpuKernelContext& ctx, Int8LayerState& s, const int8_t* a, const int8_t* w,
               int32_t* acc, int64_t rows, int64_t cols) {
  if (!s.gemm || s.gemm->rows != rows || s.gemm->cols != cols) {
    s.gemm = std::make_unique<LtInt8Gemm>();
    s.gemm->rows = rows;
    s.gemm->cols = cols;
    s.gemm->k = s.kPadded;
    KILN_RETURN_IF_ERROR(planLtGemm(ctx, s.gemm.get()));
    ctx.setImplementation(s.gemm->available ? "cublasLt int8 (IMMA, int32 accumulate)"
                                            : "kiln int8 tiled GEMM (" + s.gemm->why + ")");
  }
  if (!s.gemm->available) return int8GemmTiled(a, w, acc, rows, cols, s.kPadded, ctx.stream());
  void* workspace = nullptr;
  if (s.gemm->workspace > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, ctx.libraryWorkspace(s.gemm->workspace));
  }
  KILN_ASSIGN_OR_RETURN(cublasLtHandle_t handle, ctx.libraries().cublasLt());
  const int32_t one = 1, zero = 0;
  KILN_CUBLAS_CHECK(cublasLtMatmul(handle, s.gemm->op, &one, w, s.gemm->a, a, s.gemm->b, &zero, acc,
                                   s.gemm->d, acc, s.gemm->d, &s.gemm->algo, workspace,
                                   s.gemm->workspace, ctx.stream()));
  return Status::ok();
}

// The layer's state, made at its first run from `weightRows()` (one row of int8
// weights per output channel): the host reads and reorders the weights only then.
Result<Int8LayerState*> layerState(GpuKernelContext& ctx,
                                   const std::function<Result<Tensor>()>& weightRows) {
  auto state = std::static_pointer_cast<Int8LayerState>(ctx.layerState());
  if (!state) {
    state = std::make_shared<Int8LayerState>();
    KILN_ASSIGN_OR_RETURN(Tensor rows, weightRows());
    KILN_RETURN_IF_ERROR(prepareState(ctx, rows, state.get()));
    ctx.layerState() = state;
  }
  return state.get();
}

Int8Epilogue epilogueFor(GpuKernelContext& ctx, const Int8LayerState& s, const DeviceTensor& y) {
  Int8Epilogue e;
  e.inputZero = s.input.zeroPoint - s.input.offset();
  e.y = y.data;
  e.yType = y.type;
  e.quantized = s.quantizedOutput;
  e.yScale = s.yScale;
  e.yZeroPoint = s.yZeroPoint;
  return e;
}

Status quantizedConvKernel(GpuKernelContext& ctx) {
  if (isChannelsLast(ctx.node())) return quantizedConvChannelsLast(ctx);
  const DeviceTensor& x = ctx.input(kQuantX);
  const DeviceTensor& w = ctx.input(kQuantW);
  ConvGeometry g;
  KILN_RETURN_IF_ERROR(forwardConvGeometry(ctx, x, w, &g));
  g = promoteTo2d(g);
  if (g.x.size() != 4)
    return ctx.unsupported("INT8 convolution of rank " + std::to_string(x.rank()));
  const int64_t group = ctx.node().attrInt("group", 1);
  const int64_t outChannels = w.shape[0];
  KILN_ASSIGN_OR_RETURN(Int8LayerState * s, layerState(ctx, [&]() -> Result<Tensor> {
                          KILN_ASSIGN_OR_RETURN(Tensor weights, ctx.hostInput(kQuantW));
                          return weights.reshaped({outChannels, weights.numel() / outChannels});
                        }));
  s->input.data = x.data;
  s->input.type = x.type;
  Int8ConvShape shape{g.x[0],   g.x[1],         g.x[2],         g.x[3],
                      g.y[1],   g.y[2],         g.y[3],         g.w[2],
                      g.w[3],   g.strides[0],   g.strides[1],   g.pre[0],
                      g.pre[1], g.dilations[0], g.dilations[1], group};
  const DataType yType = s->quantizedOutput ? s->yQuantizedType : int8FloatOutputType(ctx);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, yType, promoteDims(g.y, x.rank())));
  const int64_t rows = shape.batch * shape.outHeight * shape.outWidth;
  const int64_t perGroup = outChannels / group;
  const size_t aBytes = static_cast<size_t>(rows * s->kPadded + 255) / 256 * 256;
  KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(aBytes + rows * perGroup * sizeof(int32_t)));
  auto* a = static_cast<int8_t*>(scratch);
  auto* acc = reinterpret_cast<int32_t*>(static_cast<char*>(scratch) + aBytes);
  Int8Epilogue e = epilogueFor(ctx, *s, y);
  KILN_RETURN_IF_ERROR(parseConvEpilogue(ctx, &e.activation));
  if (ctx.hasInput(kQuantResidual)) {
    const DeviceTensor& z = ctx.input(kQuantResidual);
    if ((!isFloatStorage(z.type) && z.type != DataType::kInt8) || z.shape != y.shape)
      return ctx.error("input 3 (Z) must be a float or int8 tensor of the output's shape");
    if (z.type == DataType::kInt8) {
      if (!ctx.hasInput(kQuantZScale))
        return ctx.error("input 3 (Z) is int8 but input 9 (z_scale) is absent");
      KILN_ASSIGN_OR_RETURN(Tensor zScale, ctx.hostInput(kQuantZScale));
      if (zScale.type() != DataType::kFloat32 || zScale.numel() != 1 ||
          !(zScale.data<float>()[0] > 0))
        return ctx.error("input 9 (z_scale) must be one positive float32 value");
      e.zScale = zScale.data<float>()[0];
    }
    e.z = z.data;
    e.zType = z.type;
  }
  e.rows = rows;
  e.cols = perGroup;
  e.spatial = shape.outHeight * shape.outWidth;
  e.yChannels = outChannels;
  for (int64_t gi = 0; gi < group; ++gi) {
    const int8_t* wg = static_cast<const int8_t*>(s->weights.data()) + gi * perGroup * s->kPadded;
    KILN_RETURN_IF_ERROR(packConvolutionInput(s->input, shape, gi, s->kPadded, a, ctx.stream()));
    KILN_RETURN_IF_ERROR(runGemm(ctx, *s, a, wg, acc, rows, perGroup));
    e.acc = acc;
    e.channelOffset = gi * perGroup;
    e.multiplier = static_cast<const float*>(s->multiplier.data()) + gi * perGroup;
    e.bias = static_cast<const float*>(s->bias.data()) + gi * perGroup;
    e.weightSum = static_cast<const int32_t*>(s->weightSum.data()) + gi * perGroup;
    KILN_RETURN_IF_ERROR(applyInt8Epilogue(e, ctx.stream()));
  }
  return Status::ok();
}

Status quantizedMatMulKernel(GpuKernelContext& ctx) {
  const DeviceTensor& x = ctx.input(kQuantX);
  const DeviceTensor& w = ctx.input(kQuantW);
  if (w.rank() != 2 || x.rank() < 1 || x.shape.back() != w.shape[0])
    return ctx.error("A " + shapeToString(x.shape) + " and W " + shapeToString(w.shape) +
                     " do not multiply");
  const int64_t depth = w.shape[0], cols = w.shape[1];
  KILN_ASSIGN_OR_RETURN(Int8LayerState * s, layerState(ctx, [&]() -> Result<Tensor> {
                          KILN_ASSIGN_OR_RETURN(Tensor weights, ctx.hostInput(kQuantW));
                          Tensor rowsOfW(DataType::kInt8, {cols, depth});  // W^T: a row per column
                          const int8_t* from = weights.data<int8_t>();
                          int8_t* to = rowsOfW.data<int8_t>();
                          for (int64_t k = 0; k < depth; ++k)
                            for (int64_t c = 0; c < cols; ++c)
                              to[c * depth + k] = from[k * cols + c];
                          return rowsOfW;
                        }));
  s->input.data = x.data;
  s->input.type = x.type;
  Shape yShape = x.shape;
  yShape.back() = cols;
  const DataType yType = s->quantizedOutput ? s->yQuantizedType : int8FloatOutputType(ctx);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, yType, yShape));
  const int64_t rows = depth == 0 ? 0 : x.numel() / depth;
  const size_t aBytes = static_cast<size_t>(rows * s->kPadded + 255) / 256 * 256;
  KILN_ASSIGN_OR_RETURN(void* scratch, ctx.workspace(aBytes + rows * cols * sizeof(int32_t)));
  auto* a = static_cast<int8_t*>(scratch);
  auto* acc = reinterpret_cast<int32_t*>(static_cast<char*>(scratch) + aBytes);
  KILN_RETURN_IF_ERROR(packMatrixInput(s->input, rows, depth, s->kPadded, a, ctx.stream()));
  KILN_RETURN_IF_ERROR(
      runGemm(ctx, *s, a, static_cast<const int8_t*>(s->weights.data()), acc, rows, cols));
  Int8Epilogue e = epilogueFor(ctx, *s, y);
  const std::string act = ctx.node().attrString("activation", "none");
  if (act != "none" && act != "relu") return ctx.error("unknown activation '" + act + "'");
  e.activation.activation = act == "relu" ? EpilogueActivation::kRelu : EpilogueActivation::kNone;
  e.acc = acc;
  e.rows = rows;
  e.cols = cols;
  e.multiplier = static_cast<const float*>(s->multiplier.data());
  e.bias = static_cast<const float*>(s->bias.data());
  e.weightSum = static_cast<const int32_t*>(s->weightSum.data());
  return applyInt8Epilogue(e, ctx.stream());
}

}  // namespace

void registerInt8GpuKernels(GpuKernelRegistry& registry) {
  for (const auto& [op, fn] : {std::pair{kQuantizedConvOp, &quantizedConvKernel},
                               std::pair{kQuantizedMatMulOp, &quantizedMatMulKernel}}) {
    GpuKernelEntry entry;
    entry.domain = kKilnDomain;
    entry.opType = op;
    entry.fn = fn;
    entry.supports = &supportsInt8Layer;
    registry.add(std::move(entry));
  }
}

}  // namespace kiln::cuda
