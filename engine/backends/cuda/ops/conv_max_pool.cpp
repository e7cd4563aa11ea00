// ai.kiln FusedConvMaxPool on the GPU, the host half (the kernel, why and how:
// conv_max_pool_impl.cu; their contract: conv_max_pool_impl.h): the node checked against
// the kernel's class, the geometry, the packed filter and bias uploaded once per layer
// state, the persistent grid, the launch, the registration.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/conv_max_pool_impl.h"
#include "ir/channels_last.h"
#include "ir/conv_max_pool.h"
#include "kiln/data_type.h"

namespace kiln::cuda {
namespace {

using namespace stem;

// The filter packed for the kernel (T bits, [64][kStemDepth], zero in the padding taps)
// and the bias, uploaded once per layer state.
// Everything but the tensors' addresses, worked out at the first enqueue of a shape
// (the layer state is cleared when the input shapes change).
struct StemState {
  DeviceBuffer w, bias;
  StemArgs args;  // geometry, y_scale, filter and bias pointers
  bool quantized = false;
  int blocks = 0;  // the persistent grid, set at the first launch
};

Status readPair(GpuKernelContext& ctx, const char* name, std::vector<int64_t> fallback,
                std::vector<int64_t>* out) {
  *out = ctx.node().attrInts(name, fallback);
  if (out->size() != fallback.size())
    return ctx.error(std::string("attribute '") + name + "' must have " +
                     std::to_string(fallback.size()) + " values");
  return Status::ok();
}

// Fills the geometry of `a` from the node, X's shape and W's; "" or why not this kernel.
Status stemGeometry(GpuKernelContext& ctx, const Shape& x, const Shape& w, StemArgs* a,
                    std::string* unsupported) {
  const Node& node = ctx.node();
  std::vector<int64_t> strides, dilations, pads, poolKernel, poolStrides, poolPads, poolDil;
  KILN_RETURN_IF_ERROR(readPair(ctx, "strides", {1, 1}, &strides));
  KILN_RETURN_IF_ERROR(readPair(ctx, "dilations", {1, 1}, &dilations));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pads", {0, 0, 0, 0}, &pads));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pool_kernel_shape", {0, 0}, &poolKernel));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pool_strides", {1, 1}, &poolStrides));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pool_pads", {0, 0, 0, 0}, &poolPads));
  KILN_RETURN_IF_ERROR(readPair(ctx, "pool_dilations", {1, 1}, &poolDil));
  const std::string autoPad = node.attrString("auto_pad", "NOTSET");
  if (w[1] != x[1])
    return ctx.error("W has " + std::to_string(w[1]) + " input channels, X " +
                     std::to_string(x[1]));
  for (int64_t v : pads)
    if (v < 0) return ctx.error("attribute 'pads' has a negative value");
  for (int64_t v : poolPads)
    if (v < 0) return ctx.error("attribute 'pool_pads' has a negative value");
  for (int d = 0; d < 2; ++d)
    if (poolKernel[d] < 1 || poolStrides[d] < 1)
      return ctx.error("the pool needs pool_kernel_shape and pool_strides >= 1");
  const std::string poolAutoPad = node.attrString("pool_auto_pad", "NOTSET");
  const std::vector<int64_t> kernelShape = node.attrInts("kernel_shape", {w[2], w[3]});
  if (node.attrInt("group", 1) != 1 || (autoPad != "NOTSET" && !autoPad.empty()) ||
      (poolAutoPad != "NOTSET" && !poolAutoPad.empty()) ||
      node.attrInt("pool_storage_order", 0) != 0 ||
      kernelShape != std::vector<int64_t>{w[2], w[3]} || strides != std::vector<int64_t>{2, 2} ||
      dilations != std::vector<int64_t>{1, 1} || poolDil != std::vector<int64_t>{1, 1} ||
      w[0] != kStemFilters || x[1] > kStemMaxChannels || x[1] * w[2] > kStemFilterRows ||
      w[3] > 8 || poolKernel[0] > kMaxPoolWindow || poolKernel[1] > kMaxPoolWindow ||
      poolStrides[0] > kMaxPoolStride || poolStrides[1] > kMaxPoolStride) {
    *unsupported =
        "Kiln's stem kernel needs 64 filters, C <= 4, C * R <= 22, S <= 8, conv "
        "strides 2x2, dilation 1, group 1, no auto_pad, a pool window <= 3x3 with strides <= 2";
    return Status::ok();
  }
  a->c = static_cast<int>(x[1]);
  a->h = static_cast<int>(x[2]);
  a->w_ = static_cast<int>(x[3]);
  a->r = static_cast<int>(w[2]);
  a->padTop = static_cast<int>(pads[0]);
  a->padLeft = static_cast<int>(pads[1]);
  const int64_t spanH = x[2] + pads[0] + pads[2] - w[2], spanW = x[3] + pads[1] + pads[3] - w[3];
  if (spanH < 0 || spanW < 0) return ctx.error("the filter is larger than the padded input");
  a->convH = static_cast<int>(spanH / 2 + 1);
  a->convW = static_cast<int>(spanW / 2 + 1);
  const bool ceilMode = node.attrInt("pool_ceil_mode", 0) != 0;
  int64_t out[2];
  const int64_t convSize[2] = {a->convH, a->convW};
  for (int d = 0; d < 2; ++d) {
    const int64_t span = convSize[d] + poolPads[d] + poolPads[d + 2] - poolKernel[d];
    if (span < 0) return ctx.error("the pool window is larger than the padded conv output");
    out[d] = span / poolStrides[d] + 1;
    if (ceilMode) {
      out[d] = (span + poolStrides[d] - 1) / poolStrides[d] + 1;
      if ((out[d] - 1) * poolStrides[d] >= convSize[d] + poolPads[d]) --out[d];
    }
  }
  a->poolKH = static_cast<int>(poolKernel[0]);
  a->poolKW = static_cast<int>(poolKernel[1]);
  a->poolSH = static_cast<int>(poolStrides[0]);
  a->poolSW = static_cast<int>(poolStrides[1]);
  a->poolPadTop = static_cast<int>(poolPads[0]);
  a->poolPadLeft = static_cast<int>(poolPads[1]);
  a->outH = static_cast<int>(out[0]);
  a->outW = static_cast<int>(out[1]);
  a->tileRows = (kPoolTile - 1) * a->poolSH + a->poolKH;
  a->tileCols = (kPoolTile - 1) * a->poolSW + a->poolKW;
  a->tileColsMagic = ((1 << 16) + a->tileCols - 1) / a->tileCols;
  a->inRows = 2 * (a->tileRows - 1) + a->r;
  a->inPitch = 2 * (a->tileCols - 1) + kStemTaps;
  for (int j = 0; j < kStemFilterRows; ++j)
    a->rowOffset[j] = j < a->c * a->r ? 2 * ((j / a->r) * a->inRows + j % a->r) * a->inPitch : 0;
  a->mTiles = (a->tileRows * a->tileCols + 15) / 16;
  a->tilesH = (a->outH + kPoolTile - 1) / kPoolTile;
  a->tilesW = (a->outW + kPoolTile - 1) / kPoolTile;
  const std::string act = node.attrString("activation", "none");
  a->relu = act == "relu";
  if (act != "none" && act != "relu")
    *unsupported = "Kiln's stem kernel applies ReLU or no activation, not " + act;
  return Status::ok();
}

// `type`: float16 or bfloat16, the engine's storage (a zero is all-zero bits in both).
Status packStemWeights(const Tensor& w, const Tensor* b, DataType type, const StemArgs& a,
                       StemState* s) {
  std::vector<uint16_t> packed(static_cast<size_t>(kStemFilters) * kStemDepth, 0);
  const int64_t perFilter = static_cast<int64_t>(a.c) * a.r * (w.dim(3));
  const int64_t sWidth = w.dim(3);
  for (int n = 0; n < kStemFilters; ++n)
    for (int c = 0; c < a.c; ++c)
      for (int r = 0; r < a.r; ++r)
        for (int64_t x = 0; x < sWidth; ++x) {
          const int k = (c * a.r + r) * kStemTaps + static_cast<int>(x);
          const float v =
              static_cast<float>(w.valueAsDouble(n * perFilter + (c * a.r + r) * sWidth + x));
          packed[static_cast<size_t>(n) * kStemDepth + k] =
              type == DataType::kFloat16 ? floatToHalf(v) : floatToBFloat16(v);
        }
  std::vector<float> bias(kStemFilters, 0.f);
  if (b)
    for (int n = 0; n < kStemFilters; ++n) bias[n] = static_cast<float>(b->valueAsDouble(n));
  KILN_RETURN_IF_ERROR(s->w.allocate(static_cast<int64_t>(packed.size() * 2), "the stem filter"));
  KILN_RETURN_IF_ERROR(s->bias.allocate(kStemFilters * sizeof(float), "the stem bias"));
  // Once per layer state, at the first enqueue: synchronous copies of host vectors.
  KILN_CUDA_CHECK(
      cudaMemcpy(s->w.data(), packed.data(), packed.size() * 2, cudaMemcpyHostToDevice));
  KILN_CUDA_CHECK(
      cudaMemcpy(s->bias.data(), bias.data(), bias.size() * sizeof(float), cudaMemcpyHostToDevice));
  return Status::ok();
}

// Checks the node against the kernel's class and builds the layer's state: geometry,
// quantization, the packed filter and bias on the device, the implementation text.
Status prepareStem(GpuKernelContext& ctx, const DeviceTensor& x, StemState* state) {
  KILN_ASSIGN_OR_RETURN(Tensor w, ctx.hostInput(kConvPoolW));
  if (w.rank() != 4)
    return ctx.error("input W must be 4-D [M, C, R, S], got " + shapeToString(w.shape()));
  StemArgs& a = state->args;
  std::string why;
  KILN_RETURN_IF_ERROR(stemGeometry(ctx, x.shape, w.shape(), &a, &why));
  if (!why.empty()) return ctx.unsupported(why);
  state->quantized = ctx.inputCount() > kConvPoolYScale && ctx.hasInput(kConvPoolYScale);
  if (state->quantized) {
    KILN_ASSIGN_OR_RETURN(Tensor scale, ctx.hostInput(kConvPoolYScale));
    if (scale.numel() != 1 || !(scale.valueAsDouble(0) > 0))
      return ctx.error("input y_scale must be one positive float");
    a.yScale = static_cast<float>(scale.valueAsDouble(0));
    a.yInverseScale = 1.f / a.yScale;
    if (ctx.inputCount() > kConvPoolYZeroPoint && ctx.hasInput(kConvPoolYZeroPoint)) {
      KILN_ASSIGN_OR_RETURN(Tensor zero, ctx.hostInput(kConvPoolYZeroPoint));
      if (zero.type() != DataType::kInt8 || zero.numel() != 1 || zero.valueAsDouble(0) != 0)
        return ctx.unsupported("Kiln's stem kernel writes int8 with zero point 0 only");
    }
  }
  a.tiles = static_cast<int>(x.shape[0]) * a.tilesH * a.tilesW;
  std::unique_ptr<Tensor> bias;
  if (ctx.inputCount() > kConvPoolBias && ctx.hasInput(kConvPoolBias)) {
    KILN_ASSIGN_OR_RETURN(Tensor b, ctx.hostInput(kConvPoolBias));
    if (b.numel() != kStemFilters) return ctx.error("input B must have 64 values");
    bias = std::make_unique<Tensor>(std::move(b));
  }
  KILN_RETURN_IF_ERROR(packStemWeights(w, bias.get(), x.type, a, state));
  a.w = static_cast<const uint32_t*>(state->w.data());
  a.bias = static_cast<const float*>(state->bias.data());
  ctx.setImplementation(
      std::string("kiln stem kernel: conv ") + std::to_string(a.r) + "x" +
      std::to_string(w.dim(3)) + "/2 + " + (a.relu ? "relu + " : "") + "maxpool " +
      std::to_string(a.poolKH) + "x" + std::to_string(a.poolKW) + "/" + std::to_string(a.poolSH) +
      (state->quantized ? " + int8 quantize" : "") + " in one pass (" +
      (x.type == DataType::kFloat16 ? "fp16" : "bf16") + " tensor cores, float accumulation)");
  return Status::ok();
}

// Persistent blocks: as many as the SMs hold at once (found once per layer state).
Status launchStem(GpuKernelContext& ctx, DataType x, bool quantized, const StemArgs& a,
                  int* persistentBlocks) {
  const size_t shared = stemSharedBytes(a);
  if (shared > kStemSharedCap)
    return ctx.unsupported("Kiln's stem kernel would need " + std::to_string(shared) +
                           " bytes of shared memory");
  if (*persistentBlocks == 0) {
    StemOccupancy occupancy;
    KILN_RETURN_IF_ERROR(stemOccupancy(x, quantized, shared, &occupancy));
    if (occupancy.blocksPerSm < 1)
      return ctx.unsupported("Kiln's stem kernel does not fit an SM (" + std::to_string(shared) +
                             " bytes of shared memory)");
    *persistentBlocks = occupancy.sms * occupancy.blocksPerSm;
  }
  const int blocks = std::min(a.tiles, *persistentBlocks);
  return launchStemKernel(x, quantized, a, shared, blocks, ctx.stream());
}

Status fusedConvMaxPoolOp(GpuKernelContext& ctx) {
  if (ctx.inputCount() < 2 || !ctx.hasInput(kConvPoolX) || !ctx.hasInput(kConvPoolW))
    return ctx.error("needs inputs X and W");
  const DeviceTensor& x = ctx.input(kConvPoolX);
  if (x.rank() != 4)
    return ctx.error("input X must be 4-D [N, C, H, W], got " + shapeToString(x.shape));
  if (x.type != DataType::kFloat16 && x.type != DataType::kBFloat16)
    return ctx.unsupported("Kiln's stem kernel computes in fp16 or bf16");
  if (!isChannelsLast(ctx.node()))
    return ctx.unsupported("Kiln's stem kernel writes channels-last output only");
  std::shared_ptr<void>& slot = ctx.layerState();
  if (!slot) {
    auto state = std::make_shared<StemState>();
    KILN_RETURN_IF_ERROR(prepareStem(ctx, x, state.get()));
    slot = state;
  }
  auto* state = static_cast<StemState*>(slot.get());
  StemArgs a = state->args;
  const Shape outShape = {x.shape[0], a.outH, a.outW, kStemFilters};
  KILN_ASSIGN_OR_RETURN(
      DeviceTensor y, ctx.allocateOutput(0, state->quantized ? DataType::kInt8 : x.type, outShape));
  if (y.numel() == 0) return Status::ok();
  a.x = x.data;
  a.y = y.data;
  a.wordLoads = a.w_ % 2 == 0 && reinterpret_cast<uintptr_t>(x.data) % 4 == 0;
  return launchStem(ctx, x.type, state->quantized, a, &state->blocks);
}

std::string supportsStemTypes(const Node&, const std::vector<DataType>& types) {
  if (types.empty() || (types[0] != DataType::kFloat16 && types[0] != DataType::kBFloat16))
    return "Kiln's stem kernel computes in fp16 or bf16";
  return "";
}

}  // namespace

void registerConvMaxPoolGpuKernels(GpuKernelRegistry& registry) {
  GpuKernelEntry entry;
  entry.domain = "ai.kiln";
  entry.opType = kFusedConvMaxPoolOp;
  entry.fn = &fusedConvMaxPoolOp;
  entry.supports = &supportsStemTypes;
  registry.add(std::move(entry));
}

}  // namespace kiln::cuda
