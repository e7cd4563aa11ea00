// The device half of ONNX Attention (host half: attention.cpp; contract: attention_impl.h):
// the (batch, heads, seq, head_size) head copy that packs, unpacks and prepends the past,
// and the row kernel between the two GEMMs: softcap, the mask / causal / window / padding
// bias and the softmax in float, one block per score row (fully masked rows become zeros,
// as on the CPU). Scores stay in the storage type; nonpad_kv_seqlen is read here, on the
// device.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/attention_impl.h"
#include "backends/cuda/ops/op_common.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

template <class W>
__global__ void headCopyKernel(const W* __restrict__ past, const W* __restrict__ cur,
                               W* __restrict__ dst, AttentionHeadCopy c, int64_t n) {
  const int64_t curSeq = c.seq - c.pastLen;
  KILN_GRID_LOOP(idx, n) {
    const int64_t i = idx % c.headSize;
    int64_t rest = idx / c.headSize;
    const int64_t s = rest % c.seq;
    rest /= c.seq;
    const int64_t h = rest % c.heads;
    const int64_t b = rest / c.heads;
    W value;
    if (s < c.pastLen) {
      value = past[((b * c.heads + h) * c.pastLen + s) * c.headSize + i];
    } else {
      const int64_t t = s - c.pastLen;
      const int64_t from = c.srcPacked ? ((b * curSeq + t) * c.heads + h) * c.headSize + i
                                       : ((b * c.heads + h) * curSeq + t) * c.headSize + i;
      value = cur[from];
    }
    const int64_t to = c.dstPacked ? ((b * c.seq + s) * c.heads + h) * c.headSize + i : idx;
    dst[to] = value;
  }
}

__device__ __forceinline__ float roundTo(float v, int round) {
  if (round == kAttentionRoundHalf) return __half2float(__float2half_rn(v));
  if (round == kAttentionRoundBFloat16) return __bfloat162float(__float2bfloat16_rn(v));
  return v;
}

// Max (op 0) or sum (op 1) over the block; every thread gets the result.
__device__ float blockReduce(float v, int op, float* shared) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = op == 0 ? fmaxf(v, o) : v + o;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps = blockDim.x / 32;
  __syncthreads();  // shared may still be read from a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float r = shared[0];
  for (int w = 1; w < warps; ++w) r = op == 0 ? fmaxf(r, shared[w]) : r + shared[w];
  return r;
}

// The biased score of key j (the CPU's row after softcap and + bias) and its bias.
template <class T>
__device__ __forceinline__ float biasedScore(const T* row, T* qkRow, int64_t j, int64_t lo,
                                             int64_t hi, const AttentionSoftmaxParams& p,
                                             const void* maskRow, bool* allowed) {
  const float negInf = -INFINITY;
  float s = toFloat(row[j]);
  if (qkRow && p.qkMode == 0) qkRow[j] = fromFloat<T>(s);
  if (p.softcap > 0.f) s = p.softcap * tanhf(s / p.softcap);
  if (qkRow && p.qkMode == 1) qkRow[j] = fromFloat<T>(s);
  float bias = 0.f;
  if (p.maskKind != kAttentionMaskNone) {
    if (j >= p.maskLen) {
      bias = negInf;
    } else if (p.maskKind == kAttentionMaskBool) {
      bias = static_cast<const uint8_t*>(maskRow)[j] ? 0.f : negInf;
    } else {
      bias = toFloat(static_cast<const T*>(maskRow)[j]);
    }
  }
  if (j < lo || j >= hi) bias = negInf;
  *allowed = bias != negInf;
  s += bias;
  if (qkRow && p.qkMode == 2) qkRow[j] = fromFloat<T>(s);
  return roundTo(s, p.round);
}

// One block per score row: softcap, bias, softmax in float, probabilities in place.
template <class T>
__global__ void softmaxRowsKernel(T* scores, T* qk, AttentionSoftmaxParams p) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const int64_t g = p.rowBase + r;
    const int64_t i = g % p.qSeq;
    const int64_t bh = g / p.qSeq;
    const int64_t h = bh % p.qHeads;
    const int64_t b = bh / p.qHeads;
    T* row = scores + r * p.total;
    T* qkRow = qk ? qk + g * p.total : nullptr;
    int64_t nonpad = 0;
    if (p.nonpad) {
      nonpad = p.nonpad64 ? static_cast<const int64_t*>(p.nonpad)[b]
                          : static_cast<const int32_t*>(p.nonpad)[b];
    }
    const int64_t pos = i + (p.nonpad ? nonpad - p.qSeq : p.pastLen);
    int64_t lo = 0, hi = p.total;  // allowed keys: [lo, hi)
    if (p.causal) hi = min(hi, pos + 1);
    if (p.rightWindow >= 0) hi = min(hi, pos + p.rightWindow + 1);
    if (p.leftWindow >= 0) lo = max(lo, pos - p.leftWindow);
    if (p.nonpad) hi = min(hi, nonpad);
    hi = max(hi, int64_t{0});
    lo = min(lo, hi);
    const void* maskRow = nullptr;
    if (p.maskKind != kAttentionMaskNone) {
      const int64_t off = b * p.maskB + h * p.maskH + i * p.maskI;
      maskRow = p.maskKind == kAttentionMaskBool
                    ? static_cast<const void*>(static_cast<const uint8_t*>(p.mask) + off)
                    : static_cast<const void*>(static_cast<const T*>(p.mask) + off);
    }
    float localMax = -INFINITY, localAny = 0.f;
    for (int64_t j = threadIdx.x; j < p.total; j += blockDim.x) {
      bool allowed = false;
      const float v = biasedScore(row, qkRow, j, lo, hi, p, maskRow, &allowed);
      localMax = fmaxf(localMax, v);
      if (allowed) localAny = 1.f;
    }
    const float rowMax = blockReduce(localMax, 0, shared);
    const bool anyAllowed = blockReduce(localAny, 0, shared) > 0.f;
    T* noQk = nullptr;
    if (rowMax == -INFINITY || !anyAllowed) {
      for (int64_t j = threadIdx.x; j < p.total; j += blockDim.x) {
        row[j] = fromFloat<T>(0.f);
        if (qkRow && p.qkMode == 3) qkRow[j] = fromFloat<T>(0.f);
      }
      __syncthreads();
      continue;
    }
    float localSum = 0.f;
    for (int64_t j = threadIdx.x; j < p.total; j += blockDim.x) {
      bool allowed = false;
      localSum += expf(biasedScore(row, noQk, j, lo, hi, p, maskRow, &allowed) - rowMax);
    }
    const float inv = 1.f / blockReduce(localSum, 1, shared);
    for (int64_t j = threadIdx.x; j < p.total; j += blockDim.x) {
      bool allowed = false;
      const float e = expf(biasedScore(row, noQk, j, lo, hi, p, maskRow, &allowed) - rowMax);
      const T prob = fromFloat<T>(roundTo(e * inv, p.round));
      row[j] = prob;
      if (qkRow && p.qkMode == 3) qkRow[j] = prob;
    }
    __syncthreads();
  }
}

}  // namespace

Status launchAttentionHeadCopy(DataType type, const void* past, const void* cur, void* dst,
                               const AttentionHeadCopy& c, cudaStream_t stream) {
  const int64_t n = c.batch * c.heads * c.seq * c.headSize;
  if (n == 0) return Status::ok();
  return dispatchWord(type, [&](auto tag) {
    using W = decltype(tag);
    headCopyKernel<W><<<gridFor(n), kBlockSize, 0, stream>>>(
        static_cast<const W*>(past), static_cast<const W*>(cur), static_cast<W*>(dst), c, n);
    KILN_CUDA_CHECK_LAUNCH("attention head copy");
    return Status::ok();
  });
}

Status launchAttentionSoftmax(DataType type, void* scores, void* qk,
                              const AttentionSoftmaxParams& p, cudaStream_t stream) {
  if (p.rows == 0 || p.total == 0) return Status::ok();
  return dispatchDeviceType<kAttentionDeviceTypes>(type, [&](auto tag) {
    using T = decltype(tag);
    const int threads = p.total <= 32 ? 32 : p.total <= 64 ? 64 : p.total <= 128 ? 128 : 256;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(p.rows, 65535LL * 32));
    softmaxRowsKernel<T>
        <<<blocks, threads, 0, stream>>>(static_cast<T*>(scores), static_cast<T*>(qk), p);
    KILN_CUDA_CHECK_LAUNCH("attention softmax");
    return Status::ok();
  });
}

}  // namespace kiln::cuda
