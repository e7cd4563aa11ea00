// ai.kiln FusedAttention on CUDA, the host half (contract: ir/fused_attention.h; reference:
// cpu/ops/fused_attention.cpp; kernels: fused_attention_impl.cu, contract between the halves:
// fused_attention_impl.h). One flash-style kernel: a block owns 64 query rows of one
// (batch, head) and walks the keys in tiles with an online softmax, so the [Sq, Sk] scores
// never reach global memory. Q, K, V are read and Y written through the layouts'
// strides ([B, S, H, D] directly: no head transposes).
// Head sizes D (Q, K) and Dv (V) each up to 128, each padded to 32, 64 or 128 in shared
// memory (LeViT's D = 16 with Dv = 32 or 64 runs here); over 128 (up to 256) both are
// padded to 256, where the device has the shared memory; larger head sizes and grids
// beyond 65535 heads or batches are refused (fused_attention_limits.h): the CUDA build
// then keeps such an attention unfused, and a plan that holds one anyway runs it on the
// host reference. Mask: any shape that broadcasts to [B, H, Sq, Sk]
// (BERT's [B, 1, 1, S], transformers 5's [B, 1, S, S], a full one), read through its
// broadcast strides, additive, in Q's storage type; -inf entries are exact. A row whose
// every logit is -inf gives NaN, as the unfused Softmax does.
// This kernel is one candidate of the layer: cuDNN's fused attention graph is the other
// where it applies (fused_attention_race.h times both at the first run and keeps the
// faster; the node attribute `path` pins one).
#include <cstddef>
#include <string>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/attention_operands.h"
#include "backends/cuda/ops/fused_attention_impl.h"
#include "backends/cuda/ops/fused_attention_limits.h"
#include "backends/cuda/ops/fused_attention_race.h"
#include "ir/fused_attention.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

Status fusedAttentionKernel(GpuKernelContext& ctx) {
  if (ctx.inputCount() < 3 || !ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2))
    return ctx.error("FusedAttention needs inputs Q, K and V");
  const DeviceTensor& q = ctx.input(0);
  const DeviceTensor* mask = ctx.inputCount() > 3 && ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input(i).type != q.type) return ctx.error("Q, K and V must have one type");
  if (mask && mask->type != q.type)
    return ctx.unsupported(std::string("a mask of type ") + dataTypeName(mask->type) +
                           " with Q of type " + dataTypeName(q.type));
  FusedAttentionGeometry g;
  const std::string why =
      fusedAttentionGeometry(ctx.node(), q.shape, ctx.input(1).shape, ctx.input(2).shape,
                             mask ? &mask->shape : nullptr, &g);
  if (!why.empty()) return ctx.error(why);
  const std::string limits = fusedAttentionGpuLimits(g.batch, g.heads, g.seqQ, g.seqK, g.headDim,
                                                     g.valueDim, attentionDeviceSharedBytes());
  if (!limits.empty()) return ctx.unsupported(limits);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, q.type, g.outputShape));
  if (y.numel() == 0) return Status::ok();
  flash::AttentionLaunch launch;
  flash::AttentionArgs& a = launch.args;
  // STRIDED views start at their offsets (fusedAttentionGeometry checked they fit).
  const size_t element = dataTypeSize(q.type);
  a.q = static_cast<const char*>(q.data) + g.q.offset * element;
  a.k = static_cast<const char*>(ctx.input(1).data) + g.k.offset * element;
  a.v = static_cast<const char*>(ctx.input(2).data) + g.v.offset * element;
  a.mask = mask ? mask->data : nullptr;
  a.y = y.data;
  a.seqQ = static_cast<int>(g.seqQ);
  a.seqK = static_cast<int>(g.seqK);
  a.headDim = static_cast<int>(g.headDim);
  a.valueDim = static_cast<int>(g.valueDim);
  a.qs = g.q;
  a.ks = g.k;
  a.vs = g.v;
  a.ys = g.y;
  for (int i = 0; i < 4; ++i) a.ms[i] = g.mask[i];
  a.maskPeriod = static_cast<int>(g.maskPeriod);
  a.scaleLog2 = g.scale * flash::kLog2e;
  a.nanToZero = g.nanToZero;
  launch.type = q.type;
  launch.heads = g.heads;
  launch.batch = g.batch;
  const flash::PaddedHeadSizes padded = flash::paddedHeadSizes(g.headDim, g.valueDim);
  const int dPad = padded.d, dvPad = padded.dv;
  const flash::ShortAttentionTile tile = flash::shortAttentionTile(a);
  const std::string kilnText =
      flash::shortSequences(a)
          ? std::string("kiln short-sequence attention, ") +
                (tile.pairs == 2 ? "two (batch, head) a warp, " : "a warp per (batch, head), ") +
                std::to_string(g.seqQ) + " x " + std::to_string(g.seqK) +
                " scores in registers, K / V padded to " + std::to_string(tile.keys) + " x " +
                std::to_string(tile.dims)
          : std::string("kiln flash attention, ") +
                (q.type == DataType::kFloat32 ? "fp32 SIMT, key tiles of 32"
                 : flash::runsWgmmaAttention(launch)
                     ? "wgmma m64n64k16 (sm_90a), a warpgroup per 64 rows, 128-byte swizzled "
                       "tiles of 64 keys"
                     : "mma.sync m16n8k16, key tiles of 64") +
                ", head size padded to " + std::to_string(dPad) +
                (dvPad != dPad ? ", value size to " + std::to_string(dvPad) : "") +
                (q.type != DataType::kFloat32 && flash::vectorizable(a) ? ", 16-byte loads" : "");
  AttentionOperands operands;
  operands.type = q.type;
  operands.geometry = g;
  operands.q = a.q;
  operands.k = a.k;
  operands.v = a.v;
  operands.mask = a.mask;
  operands.y = a.y;
  return runFusedAttention(ctx, operands, kilnText, [&]() -> Status {
    if (!inDeviceTypes(q.type, flash::kAttentionDeviceTypes))
      return ctx.unsupported(std::string("FusedAttention on ") + dataTypeName(q.type));
    return flash::launchAttention(launch, ctx.stream());
  });
}

}  // namespace

void registerFusedAttentionGpuKernels(GpuKernelRegistry& registry) {
  GpuKernelEntry entry;
  entry.domain = kKilnDomain;
  entry.opType = kFusedAttentionOp;
  entry.fn = &fusedAttentionKernel;
  entry.supports = &supportsAttentionTypes;
  entry.supportsShapes = &supportsAttentionShapes;
  registry.add(entry);
}

}  // namespace kiln::cuda
