// ai.kiln FusedAttention on CUDA (contract: ir/fused_attention.h; reference:
// cpu/ops/fused_attention.cpp). Flash-style kernels: a block owns 64 (or 128) query
// rows of one (batch, head), walks the keys in tiles with an online softmax (running
// row max and sum, the partial output rescaled when the max grows), so any sequence
// length runs in registers and shared memory and the [Sq, Sk] scores never reach
// global memory. Q, K, V are read and Y written through the layouts' strides
// ([B, S, H, D] directly: no head transposes).
//   float16 / bfloat16: tensor cores (fused_attention_mma.cuh): mma.sync m16n8k16 with
//     ldmatrix, Q fragments in registers, K and V tiles double-buffered with cp.async
//     on the 16-byte path; 16 or 32 query rows a warp and 64 or 128 keys a tile.
//   float32 (here): SIMT FMAs in float, key tiles of 32 (no TF32: the result is the
//     float32 chain's, whatever the engine's TF32 setting).
// Head sizes D (Q, K) and Dv (V) each up to 128, each padded to 32, 64 or 128 in shared
// memory (LeViT's D = 16 with Dv = 32 or 64 runs here); larger head sizes and grids
// beyond 65535 heads or batches are refused (fused_attention_limits.h): the CUDA build
// then keeps such an attention unfused, and a plan that holds one anyway runs it on the
// host reference. Mask: any shape that broadcasts to [B, H, Sq, Sk]
// (BERT's [B, 1, 1, S], transformers 5's [B, 1, S, S], a full one), read through its
// broadcast strides, additive, in Q's storage type; -inf entries are exact. A row whose
// every logit is -inf gives NaN, as the unfused Softmax does.
//
// Floor for BERT-base, batch 128, seq 128, 12 heads of 64, 12 layers (per layer:
// Q, K, V, Y of 128 x 128 x 768 and the [128, 1, 128, 128] mask read once from DRAM):
//   fp16: 4 x 25.2 MB + 4.2 MB = 105 MB -> 1.26 GB, 0.42 ms at 3.0 TB/s; FLOPs
//         2 x 2 x 128 x 12 x 128 x 128 x 64 = 6.4 G -> 77 G, 0.10 ms at 750 TFLOP/s:
//         bandwidth-bound, floor ~0.42 ms (the unfused Transpose + MatMul + softmax: 3.1 ms).
//   fp32: 2.5 GB -> 0.84 ms; 77 GFLOP at ~51 TFLOP/s of FMA -> 1.5 ms: compute-bound.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/ops/fused_attention_limits.h"
#include "backends/cuda/ops/fused_attention_mma.cuh"
#include "backends/cuda/ops/fused_attention_tiles.cuh"
#include "backends/cuda/row_kernels.cuh"
#include "ir/fused_attention.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

using namespace attention;  // NOLINT: the kernels' pieces (fused_attention_tiles.cuh)

// ---- float32: SIMT ---------------------------------------------------------------
// Thread (ty, tx) = (tid / 8, tid % 8) owns rows ty + 16i (i < 4), keys tx + 8j of each
// tile (j < 4) and output columns tx + 8j (j < kDvPad / 8); a row's 8 lanes share a warp.

template <int kDPad, int kDvPad>
__global__ void __launch_bounds__(kThreads) attentionSimt(AttentionArgs a) {
  constexpr int kQStride = kDPad + 1;  // odd strides: rows in distinct banks
  extern __shared__ __align__(16) unsigned char shared[];
  float* sQ = reinterpret_cast<float*>(shared);
  float* sK = sQ + kRows * kQStride;
  float* sV = sK + kKeys32 * kQStride;
  float* sP = sV + kKeys32 * kDvPad;  // [kRows][kKeys32 + 1]
  const int b = blockIdx.z, h = blockIdx.y, row0 = blockIdx.x * kRows;
  const int ty = threadIdx.x / 8, tx = threadIdx.x % 8;
  const float* q = static_cast<const float*>(a.q) + b * a.qs.batch + h * a.qs.head;
  const float* k = static_cast<const float*>(a.k) + b * a.ks.batch + h * a.ks.head;
  const float* v = static_cast<const float*>(a.v) + b * a.vs.batch + h * a.vs.head;
  const float* mask = a.mask ? static_cast<const float*>(a.mask) +
                                   (a.maskPeriod > 0 ? b % a.maskPeriod : b) * a.ms[0] + h * a.ms[1]
                             : nullptr;
  loadTile<float, kDPad, kQStride, kRows, false>(sQ, q, a.qs.seq, row0, a.seqQ, a.headDim);
  float o[4][kDvPad / 8] = {};
  float rowMax[4], rowSum[4] = {};
#pragma unroll
  for (int i = 0; i < 4; ++i) rowMax[i] = -INFINITY;
  for (int key0 = 0; key0 < a.seqK; key0 += kKeys32) {
    __syncthreads();
    loadTile<float, kDPad, kQStride, kKeys32, false>(sK, k, a.ks.seq, key0, a.seqK, a.headDim);
    loadTile<float, kDvPad, kDvPad, kKeys32, false>(sV, v, a.vs.seq, key0, a.seqK, a.valueDim);
    __syncthreads();
    float s[4][4] = {};
    for (int d = 0; d < kDPad; ++d) {
      float qv[4], kv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) qv[i] = sQ[(ty + 16 * i) * kQStride + d];
#pragma unroll
      for (int j = 0; j < 4; ++j) kv[j] = sK[(tx + 8 * j) * kQStride + d];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = fmaf(qv[i], kv[j], s[i][j]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + ty + 16 * i;
      float tileMax = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int key = key0 + tx + 8 * j;
        float x = s[i][j] * a.scaleLog2;
        if (key >= a.seqK)
          x = -INFINITY;
        else if (mask && row < a.seqQ)
          x += mask[row * a.ms[2] + key * a.ms[3]] * kLog2e;
        s[i][j] = x;
        tileMax = fmaxf(tileMax, x);
      }
      for (int m = 1; m < 8; m <<= 1)
        tileMax = fmaxf(tileMax, __shfl_xor_sync(kFullMask, tileMax, m));
      float correction;
      const float base = rescale(tileMax, &rowMax[i], &correction);
      rowSum[i] *= correction;
#pragma unroll
      for (int j = 0; j < kDvPad / 8; ++j) o[i][j] *= correction;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float p = exp2f(s[i][j] - base);
        rowSum[i] += p;
        sP[(ty + 16 * i) * (kKeys32 + 1) + tx + 8 * j] = p;
      }
    }
    __syncwarp();  // a row's probabilities come from its own 8 lanes
    for (int key = 0; key < kKeys32; ++key) {
      float vv[kDvPad / 8];
#pragma unroll
      for (int j = 0; j < kDvPad / 8; ++j) vv[j] = sV[key * kDvPad + tx + 8 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float p = sP[(ty + 16 * i) * (kKeys32 + 1) + key];
#pragma unroll
        for (int j = 0; j < kDvPad / 8; ++j) o[i][j] = fmaf(p, vv[j], o[i][j]);
      }
    }
    __syncwarp();  // sP is rewritten by the next tile
  }
  float* y = static_cast<float*>(a.y) + b * a.ys.batch + h * a.ys.head;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    for (int m = 1; m < 8; m <<= 1) rowSum[i] += __shfl_xor_sync(kFullMask, rowSum[i], m);
    const int row = row0 + ty + 16 * i;
    if (row >= a.seqQ) continue;
    const float inv = a.nanToZero && rowSum[i] == 0.f ? 0.f : 1.f / rowSum[i];
#pragma unroll
    for (int j = 0; j < kDvPad / 8; ++j)
      if (tx + 8 * j < a.valueDim) y[row * a.ys.seq + tx + 8 * j] = o[i][j] * inv;
  }
}

// ---- Host side -------------------------------------------------------------------

int paddedHeadSize(int64_t d) {
  return d <= 32 ? 32 : d <= 64 ? 64 : 128;
}

// The tensor-core kernel's tile: kM groups of 16 query rows a warp (64 x kM rows a
// block), kN keys a tile (fused_attention_mma.cuh).
struct TileShape {
  int m = 1;
  int n = 64;
};

size_t sharedBytes(DataType type, int dPad, int dvPad, TileShape tile = {}) {
  if (type == DataType::kFloat32)
    return sizeof(float) *
           ((kRows + kKeys32) * (dPad + 1) + kKeys32 * dvPad + kRows * (kKeys32 + 1));
  return 2 * static_cast<size_t>(sharedElements16(dPad, dvPad, tile.m, tile.n));
}

template <class Kernel>
Status launch(GpuKernelContext& ctx, Kernel kernel, const AttentionArgs& a, dim3 grid, size_t bytes,
              const char* name) {
  KILN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes)));
  kernel<<<grid, kThreads, bytes, ctx.stream()>>>(a);
  KILN_CUDA_CHECK_LAUNCH(name);
  return Status::ok();
}

// 16-byte loads and stores: D and Dv multiples of 8, every base pointer 16-byte aligned
// and every stride a multiple of 8 elements (a STRIDED view's may not be).
bool vectorizable(const AttentionArgs& a) {
  if (a.headDim % 8 != 0 || a.valueDim % 8 != 0) return false;
  for (const AttentionStrides* s : {&a.qs, &a.ks, &a.vs, &a.ys})
    if (s->batch % 8 != 0 || s->head % 8 != 0 || s->seq % 8 != 0) return false;
  for (const void* p : {a.q, a.k, a.v, static_cast<const void*>(a.y)})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

// The tensor-core tile for these arguments: 16 rows a warp and 64 keys a tile unless
// KILN_ATTENTION_TILE=MxN (M in {1, 2}, N in {64, 128}) asks for another, which applies
// to 16-byte loads with head sizes <= 64 (bench/layer_probe.py races them).
TileShape tileShapeFor(const AttentionArgs& a, int dPad, int dvPad) {
  TileShape tile;
  if (!vectorizable(a) || dPad > 64 || dvPad > 64) return tile;
  if (const char* wanted = std::getenv("KILN_ATTENTION_TILE")) {
    const std::string value(wanted);
    if (value == "2x64" || value == "2x128") tile.m = 2;
    if (value == "1x128" || value == "2x128") tile.n = 128;
  }
  return tile;
}

template <class T, int kDPad, int kDvPad, int kM, int kN>
Status launchTile(GpuKernelContext& ctx, const AttentionArgs& a, dim3 grid, DataType type) {
  grid.x = static_cast<unsigned>((a.seqQ + kRows * kM - 1) / (kRows * kM));
  return launch(ctx, attentionTensorCore<T, kDPad, kDvPad, kM, kN, true>, a, grid,
                sharedBytes(type, kDPad, kDvPad, {kM, kN}), "attentionTensorCore");
}

// Larger tiles only with 16-byte loads and head sizes <= 64 (wider heads would spill
// registers); `tile` was chosen by tileShapeFor.
template <class T, int kDPad, int kDvPad>
Status launchTensorCore(GpuKernelContext& ctx, const AttentionArgs& a, dim3 grid, DataType type,
                        TileShape tile) {
  if (!vectorizable(a))
    return launch(ctx, attentionTensorCore<T, kDPad, kDvPad, 1, 64, false>, a, grid,
                  sharedBytes(type, kDPad, kDvPad), "attentionTensorCore");
  if constexpr (kDPad <= 64 && kDvPad <= 64) {
    if (tile.m == 2 && tile.n == 128) return launchTile<T, kDPad, kDvPad, 2, 128>(ctx, a, grid, type);
    if (tile.m == 2) return launchTile<T, kDPad, kDvPad, 2, 64>(ctx, a, grid, type);
    if (tile.n == 128) return launchTile<T, kDPad, kDvPad, 1, 128>(ctx, a, grid, type);
  }
  return launchTile<T, kDPad, kDvPad, 1, 64>(ctx, a, grid, type);
}

template <int kDPad, int kDvPad>
Status launchForHeadSizes(GpuKernelContext& ctx, const AttentionArgs& a, dim3 grid, DataType type,
                          TileShape tile) {
  switch (type) {
    case DataType::kFloat32:
      return launch(ctx, attentionSimt<kDPad, kDvPad>, a, grid, sharedBytes(type, kDPad, kDvPad),
                    "attentionSimt");
    case DataType::kFloat16:
      return launchTensorCore<__half, kDPad, kDvPad>(ctx, a, grid, type, tile);
    case DataType::kBFloat16:
      return launchTensorCore<__nv_bfloat16, kDPad, kDvPad>(ctx, a, grid, type, tile);
    default:
      return ctx.unsupported(std::string("FusedAttention on ") + dataTypeName(type));
  }
}

template <int kDPad>
Status launchForValueSize(GpuKernelContext& ctx, const AttentionArgs& a, dim3 grid, DataType type,
                          TileShape tile) {
  switch (paddedHeadSize(a.valueDim)) {
    case 32:
      return launchForHeadSizes<kDPad, 32>(ctx, a, grid, type, tile);
    case 64:
      return launchForHeadSizes<kDPad, 64>(ctx, a, grid, type, tile);
    default:
      return launchForHeadSizes<kDPad, 128>(ctx, a, grid, type, tile);
  }
}

Status launchAttention(GpuKernelContext& ctx, const AttentionArgs& a, dim3 grid, DataType type,
                       TileShape tile) {
  switch (paddedHeadSize(a.headDim)) {
    case 32:
      return launchForValueSize<32>(ctx, a, grid, type, tile);
    case 64:
      return launchForValueSize<64>(ctx, a, grid, type, tile);
    default:
      return launchForValueSize<128>(ctx, a, grid, type, tile);
  }
}

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
  const std::string limits =
      fusedAttentionGpuLimits(g.batch, g.heads, g.seqQ, g.seqK, g.headDim, g.valueDim);
  if (!limits.empty()) return ctx.unsupported(limits);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, q.type, g.outputShape));
  if (y.numel() == 0) return Status::ok();
  AttentionArgs a;
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
  a.scaleLog2 = g.scale * kLog2e;
  a.nanToZero = g.nanToZero;
  const dim3 grid(static_cast<unsigned>((g.seqQ + kRows - 1) / kRows),
                  static_cast<unsigned>(g.heads), static_cast<unsigned>(g.batch));
  const int dPad = paddedHeadSize(g.headDim), dvPad = paddedHeadSize(g.valueDim);
  const bool tensorCores = q.type != DataType::kFloat32;
  const TileShape tile = tensorCores ? tileShapeFor(a, dPad, dvPad) : TileShape{};
  ctx.setImplementation(
      std::string("kiln flash attention, ") +
      (tensorCores ? "mma.sync m16n8k16, " + std::to_string(kRows * tile.m) + " query rows x " +
                         std::to_string(tile.n) + " keys a tile"
                   : std::string("fp32 SIMT, key tiles of 32")) +
      ", head size padded to " + std::to_string(dPad) +
      (dvPad != dPad ? ", value size to " + std::to_string(dvPad) : "") +
      (tensorCores && vectorizable(a) ? ", 16-byte loads" : ""));
  return launchAttention(ctx, a, grid, q.type, tile);
}

// "" for one float storage type across Q, K, V and the mask.
std::string supportsAttentionTypes(const Node& node, const std::vector<DataType>& types) {
  DataType first = DataType::kUndefined;
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return std::string("no GPU kernel for FusedAttention on ") + dataTypeName(t);
    if (first != DataType::kUndefined && t != first) return "inputs of mixed float types";
    first = t;
  }
  return "";
}

// "" when the head sizes and grid the build knows fit fusedAttentionGpuLimits; a dim
// not known yet (below 0) passes and is checked at run time.
std::string supportsAttentionShapes(const Node& node, const std::vector<Shape>& shapes) {
  if (node.attrString("qkv_layout", "BSHD") == "STRIDED") {
    const std::vector<int64_t> q = node.attrInts(kAttentionViewAttributes[0]);
    const std::vector<int64_t> k = node.attrInts(kAttentionViewAttributes[1]);
    const std::vector<int64_t> v = node.attrInts(kAttentionViewAttributes[2]);
    if (q.size() != kAttentionViewLength || k.size() != kAttentionViewLength ||
        v.size() != kAttentionViewLength)
      return "FusedAttention's q_view, k_view and v_view must each hold 8 ints";
    return fusedAttentionGpuLimits(q[1], node.attrInt("num_heads", 0), q[3], k[3], q[4], v[4]);
  }
  if (shapes.size() < 3 || shapes[0].size() != 4 || shapes[2].size() != 4) return "";
  const bool bshd = node.attrString("qkv_layout", "BSHD") == "BSHD";
  const Shape& q = shapes[0];
  const int64_t seqK = shapes[1].size() == 4 ? shapes[1][bshd ? 1 : 2] : -1;
  return fusedAttentionGpuLimits(q[0], node.attrInt("num_heads", 0), q[bshd ? 1 : 2], seqK, q[3],
                                 shapes[2][3]);
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
