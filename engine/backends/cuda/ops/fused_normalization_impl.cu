// The device half of the ai.kiln normalizations ScaledMaskedSoftmax and AddLayerNorm (the
// host half and the ops' contract: fused_normalization.cpp; the launchers' contract:
// fused_normalization_impl.h). Arithmetic in float. A row of up to kWarpRowLimit elements
// belongs to one warp (AddLayerNorm's rows of at most 16 packs to a group of its lanes,
// several rows a warp) and stays in its registers between the passes (max/sum, then
// mean/variance), so X, M, A and B are read once and Y written once; each lane moves packs
// of 16 bytes (4 float32 or 8 16-bit elements; 8 bytes of 4 16-bit elements where a row is
// not a multiple of 8) where the host found them contiguous and aligned. Longer rows get a block
// each and re-read their inputs per pass. A broadcast input's row starts through its RowMap,
// and a broadcast last dim is read with stride 0 (through single-element packs).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/fused_normalization_impl.h"
#include "backends/cuda/row_kernels.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

using namespace fused_norm;

static_assert(kFusedWarpRowLimit == kWarpRowLimit, "the host's warp row limit");

constexpr int kPack = kFusedPack;  // elements per vector access
constexpr int kWarpsPerBlock = 4;  // warp-per-row kernels: 128 threads

__device__ __forceinline__ int64_t rowStart(const RowMap& map, int64_t row, int64_t n) {
  if (map.direct) return row * n;
  uint32_t r = static_cast<uint32_t>(row);
  int64_t offset = 0;
  for (int d = map.rank - 1; d > 0; --d) {
    const uint32_t q = r / map.dims[d];
    offset += static_cast<int64_t>(r - q * map.dims[d]) * map.strides[d];
    r = q;
  }
  return offset + static_cast<int64_t>(r) * map.strides[0];
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) v += __shfl_xor_sync(kFullMask, v, mask);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, mask));
  return v;
}

// Sum or maximum over the block; every thread gets it. `partial` holds one per warp.
template <bool kMax>
__device__ float blockReduce(float v, float* partial) {
  v = kMax ? warpMax(v) : warpSum(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
    v = kMax ? fmaxf(v, partial[w]) : v + partial[w];
  __syncthreads();  // `partial` is reused by the next call
  return v;
}

// ---- ScaledMaskedSoftmax -------------------------------------------------------

// One score: x * scale + m, or with maskReplaces a nonzero m itself.
__device__ __forceinline__ float maskedScore(float x, float m, const SoftmaxArgs& a) {
  return a.maskReplaces && m != 0.f ? m : x * a.scale + m;
}

// One warp per row; each lane holds kChunks packs of V values.
template <class T, int V, int kChunks>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    softmaxWarpRows(const T* x, const T* mask, T* y, SoftmaxArgs a) {
  const RowGroup g = rowGroup(true);
  for (int64_t row = g.first; row < a.rows; row += g.step) {
    const T* xr = x + rowStart(a.x, row, a.n);
    const T* mr = mask ? mask + rowStart(a.mask, row, a.n) : nullptr;
    float v[kChunks * V];
    float maxValue = -INFINITY;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t k = (int64_t(c) * 32 + g.lane) * V;
      float* vc = v + c * V;
      if (k >= a.n) continue;
      loadPack<V>(xr, k, a.x.lastStride, vc);
      float m[V] = {};
      if (mr) loadPack<V>(mr, k, a.mask.lastStride, m);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        vc[j] = maskedScore(vc[j], m[j], a);
        maxValue = fmaxf(maxValue, vc[j]);
      }
    }
    maxValue = warpMax(maxValue);
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if ((int64_t(c) * 32 + g.lane) * V >= a.n) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        v[c * V + j] = expf(v[c * V + j] - maxValue);
        sum += v[c * V + j];
      }
    }
    const float inv = 1.f / warpSum(sum);
    T* yr = y + row * a.n;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t k = (int64_t(c) * 32 + g.lane) * V;
      if (k >= a.n) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) v[c * V + j] *= inv;
      storePack<V>(yr, k, v + c * V);
    }
  }
}

// One block per row (rows longer than a warp holds): max, sum and write passes,
// each recomputing X * scale + M from memory.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    softmaxBlockRows(const T* x, const T* mask, T* y, SoftmaxArgs a) {
  __shared__ float partial[32];
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* xr = x + rowStart(a.x, row, a.n);
    const T* mr = mask ? mask + rowStart(a.mask, row, a.n) : nullptr;
    auto value = [&](int64_t k) {
      return maskedScore(toFloat(xr[k * a.x.lastStride]),
                         mr ? toFloat(mr[k * a.mask.lastStride]) : 0.f, a);
    };
    float maxValue = -INFINITY;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) maxValue = fmaxf(maxValue, value(k));
    maxValue = blockReduce<true>(maxValue, partial);
    float sum = 0.f;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) sum += expf(value(k) - maxValue);
    const float inv = 1.f / blockReduce<false>(sum, partial);
    T* yr = y + row * a.n;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x)
      yr[k] = fromFloat<T>(expf(value(k) - maxValue) * inv);
  }
}

// ---- AddLayerNorm --------------------------------------------------------------

// One warp per row: S = A + B stays in registers for the mean, the variance and Y. With
// p.rms the mean is taken as 0: the "variance" is then mean(S^2), RMSNormalization's. With
// p.residualAfter S is A alone and B is added to Y (the post-norm residual Y = norm(A) + B).
// kLoadsFirst: a lane issues the loads of all its packs of A and B before its first store
// (S, when asked for): a store between them keeps the next pack's loads behind it (the
// outputs may share memory with the inputs as far as the compiler knows), a DRAM latency
// per pack. Chosen for rows of at most 16 values a lane (ptxas, sm_90 fp16: 64 registers
// at 384 wide, 48 pack by pack). With this order at every width and addNormShortRows' early
// residual, one A/B on the H200 (2026-12-03) measured DeiT-S 1.5%, TNT-S 1.3% and SwinV2-T
// 0.8% faster, but ViT-B/16 -0.4%, BERT +0.2% and DistilBERT +0.8% at 24 values a lane (768
// wide: 96 registers against 63): those rows stay pack by pack.
template <class T, int V, int kChunks, bool kLoadsFirst = (kChunks * V <= 16)>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    addNormWarpRows(const T* a, const T* b, const T* gamma, const T* beta, T* y, T* sumOut,
                    AddNormArgs p) {
  const RowGroup g = rowGroup(true);
  for (int64_t row = g.first; row < p.rows; row += g.step) {
    const T* ar = a + rowStart(p.a, row, p.n);
    const T* br = b + rowStart(p.b, row, p.n);
    float s[kChunks * V];
    float other[kLoadsFirst ? kChunks * V : 1];  // B's packs
    float sum = 0.f;
    if constexpr (kLoadsFirst) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int64_t k = (int64_t(c) * 32 + g.lane) * V;
        if (k >= p.n) continue;
        loadPack<V>(ar, k, p.a.lastStride, s + c * V);
        loadPack<V>(br, k, p.b.lastStride, other + c * V);
      }
    }
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t k = (int64_t(c) * 32 + g.lane) * V;
      float* sc = s + c * V;
      if (k >= p.n) continue;
      if constexpr (kLoadsFirst) {
        if (!p.residualAfter) {
#pragma unroll
          for (int j = 0; j < V; ++j) sc[j] += other[c * V + j];
        }
      } else {
        loadPack<V>(ar, k, p.a.lastStride, sc);
        if (!p.residualAfter) {
          float bv[V];
          loadPack<V>(br, k, p.b.lastStride, bv);
#pragma unroll
          for (int j = 0; j < V; ++j) sc[j] += bv[j];
        }
      }
#pragma unroll
      for (int j = 0; j < V; ++j) sum += sc[j];
      if (sumOut) storePack<V>(sumOut + row * p.n, k, sc);
    }
    const float mean = p.rms ? 0.f : warpSum(sum) / static_cast<float>(p.n);
    float squares = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if ((int64_t(c) * 32 + g.lane) * V >= p.n) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float d = s[c * V + j] - mean;
        squares += d * d;
      }
    }
    const float invStd = 1.f / sqrtf(warpSum(squares) / static_cast<float>(p.n) + p.epsilon);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t k = (int64_t(c) * 32 + g.lane) * V;
      if (k >= p.n) continue;
      float gv[V], bv[V] = {}, rv[V] = {};
      loadPack<V>(gamma, k, 1, gv);
      if (beta) loadPack<V>(beta, k, 1, bv);
      if (p.residualAfter) {
        if constexpr (kLoadsFirst) {
#pragma unroll
          for (int j = 0; j < V; ++j) rv[j] = other[c * V + j];
        } else {
          loadPack<V>(br, k, p.b.lastStride, rv);
        }
      }
#pragma unroll
      for (int j = 0; j < V; ++j)
        s[c * V + j] = (s[c * V + j] - mean) * invStd * gv[j] + bv[j] + rv[j];
      storePack<V>(y + row * p.n, k, s + c * V);
    }
  }
}

// Sum over an aligned group of kLanes lanes (a power of two up to 32); every lane of the
// warp calls it.
template <int kLanes>
__device__ __forceinline__ float groupSum(float v) {
#pragma unroll
  for (int mask = kLanes / 2; mask >= 1; mask >>= 1) v += __shfl_xor_sync(kFullMask, v, mask);
  return v;
}

// Short rows (at most 16 packs of V): 32 / kLanes rows a warp, a group of kLanes lanes each,
// one pack a lane. The loop runs warp by warp, so every lane reaches each shuffle; a lane past
// the row's end or the last row contributes zeros and stores nothing. The post-norm
// residual B is loaded with A, before the reductions (after them: one more DRAM latency a
// row group; measured with addNormWarpRows' kLoadsFirst, see there).
template <class T, int V, int kLanes>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    addNormShortRows(const T* a, const T* b, const T* gamma, const T* beta, T* y, T* sumOut,
                     AddNormArgs p) {
  constexpr int kRowsPerWarp = 32 / kLanes;
  const int lane = threadIdx.x % kLanes, group = threadIdx.x % 32 / kLanes;
  const int64_t warp = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  const int64_t k = int64_t(lane) * V;
  for (int64_t first = warp * kRowsPerWarp; first < p.rows; first += warps * kRowsPerWarp) {
    const int64_t row = first + group;
    const bool active = row < p.rows && k < p.n;
    float s[V] = {}, rv[V] = {};
    float sum = 0.f;
    if (active) {
      loadPack<V>(a + rowStart(p.a, row, p.n), k, p.a.lastStride, s);
      if (!p.residualAfter) {
        float bv[V];
        loadPack<V>(b + rowStart(p.b, row, p.n), k, p.b.lastStride, bv);
#pragma unroll
        for (int j = 0; j < V; ++j) s[j] += bv[j];
      } else {
        loadPack<V>(b + rowStart(p.b, row, p.n), k, p.b.lastStride, rv);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) sum += s[j];
      if (sumOut) storePack<V>(sumOut + row * p.n, k, s);
    }
    const float mean = p.rms ? 0.f : groupSum<kLanes>(sum) / static_cast<float>(p.n);
    float squares = 0.f;
    if (active) {
#pragma unroll
      for (int j = 0; j < V; ++j) squares += (s[j] - mean) * (s[j] - mean);
    }
    const float invStd =
        1.f / sqrtf(groupSum<kLanes>(squares) / static_cast<float>(p.n) + p.epsilon);
    if (!active) continue;
    float gv[V], bv[V] = {};
    loadPack<V>(gamma, k, 1, gv);
    if (beta) loadPack<V>(beta, k, 1, bv);
#pragma unroll
    for (int j = 0; j < V; ++j) s[j] = (s[j] - mean) * invStd * gv[j] + bv[j] + rv[j];
    storePack<V>(y + row * p.n, k, s);
  }
}

// One block per long row: sum, squared deviations and output passes over A + B (over A, B
// added in the output pass, with p.residualAfter).
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    addNormBlockRows(const T* a, const T* b, const T* gamma, const T* beta, T* y, T* sumOut,
                     AddNormArgs p) {
  __shared__ float partial[32];
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* ar = a + rowStart(p.a, row, p.n);
    const T* br = b + rowStart(p.b, row, p.n);
    auto value = [&](int64_t k) {
      return toFloat(ar[k * p.a.lastStride]) +
             (p.residualAfter ? 0.f : toFloat(br[k * p.b.lastStride]));
    };
    float sum = 0.f;
    for (int64_t k = threadIdx.x; k < p.n; k += blockDim.x) {
      const float s = value(k);
      sum += s;
      if (sumOut) sumOut[row * p.n + k] = fromFloat<T>(s);
    }
    const float total = blockReduce<false>(sum, partial);  // every thread takes part
    const float mean = p.rms ? 0.f : total / static_cast<float>(p.n);
    float squares = 0.f;
    for (int64_t k = threadIdx.x; k < p.n; k += blockDim.x) {
      const float d = value(k) - mean;
      squares += d * d;
    }
    const float var = blockReduce<false>(squares, partial) / static_cast<float>(p.n);
    const float invStd = 1.f / sqrtf(var + p.epsilon);
    for (int64_t k = threadIdx.x; k < p.n; k += blockDim.x) {
      const float v = (value(k) - mean) * invStd * toFloat(gamma[k]) +
                      (beta ? toFloat(beta[k]) : 0.f) +
                      (p.residualAfter ? toFloat(br[k * p.b.lastStride]) : 0.f);
      y[row * p.n + k] = fromFloat<T>(v);
    }
  }
}

// ---- Launch geometry -----------------------------------------------------------

// Calls launch(integral_constant<int, V>) with the pack width V: `pack` elements, 1, kPack
// or, for a 16-bit T, kFusedWidePack.
template <class T, class F>
Status forPackWidth(int pack, F&& launch) {
  if constexpr (sizeof(T) == 2) {
    if (pack == kFusedWidePack) return launch(std::integral_constant<int, kFusedWidePack>{});
  } else if (pack == kFusedWidePack) {  // the host picks 8 for 16-bit types only
    return Status(StatusCode::kInternal, "8-element packs of a 4-byte type");
  }
  return pack == kPack ? launch(std::integral_constant<int, kPack>{})
                       : launch(std::integral_constant<int, 1>{});
}

// Calls launch(integral_constant<int, V>, integral_constant<int, K>) with the pack
// width V (`pack` elements: 1, kPack or, for a 16-bit T, kFusedWidePack) and the packs per
// lane K (a power of two) that cover a row of n <= 1024.
template <class T, class F>
Status forWarpShape(int64_t n, int pack, F&& launch) {
  const int64_t packs = n / pack;
  const int64_t perLane = (packs + 31) / 32;
  auto chunks = [&](auto v) -> Status {
    constexpr int kWidth = decltype(v)::value;
    if (perLane <= 1) return launch(v, std::integral_constant<int, 1>{});
    if (perLane <= 2) return launch(v, std::integral_constant<int, 2>{});
    if (perLane <= 4) return launch(v, std::integral_constant<int, 4>{});
    if constexpr (kWidth < kFusedWidePack) {
      if (perLane <= 8) return launch(v, std::integral_constant<int, 8>{});
    }
    if constexpr (kWidth == 1) {
      if (perLane <= 16) return launch(v, std::integral_constant<int, 16>{});
      return launch(v, std::integral_constant<int, 32>{});
    }
    return Status(StatusCode::kInternal, "row too long for one warp");
  };
  return forPackWidth<T>(pack, chunks);
}

unsigned warpGrid(int64_t rows) {
  return gridFor(rows * 32, kWarpsPerBlock * 32);
}

unsigned blockGrid(int64_t rows) {
  return static_cast<unsigned>(std::min<int64_t>(rows, 65535LL * 32));
}

template <class T, int V, int kLanes>
Status launchShortRows(const AddNormLaunch& l, cudaStream_t stream) {
  const int64_t warps = (l.args.rows + 32 / kLanes - 1) / (32 / kLanes);
  addNormShortRows<T, V, kLanes>
      <<<gridFor(warps * 32, kWarpsPerBlock * 32), kWarpsPerBlock * 32, 0, stream>>>(
          static_cast<const T*>(l.a), static_cast<const T*>(l.b), static_cast<const T*>(l.gamma),
          static_cast<const T*>(l.beta), static_cast<T*>(l.y), static_cast<T*>(l.sum), l.args);
  KILN_CUDA_CHECK_LAUNCH("addNormShortRows");
  return Status::ok();
}

}  // namespace

namespace fused_norm {

Status launchScaledMaskedSoftmax(const SoftmaxLaunch& l, cudaStream_t stream) {
  const SoftmaxArgs& args = l.args;
  return dispatchDeviceType<device_types::kStorageFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(l.x);
    const T* m = static_cast<const T*>(l.mask);
    T* y = static_cast<T*>(l.y);
    if (args.n > kWarpRowLimit) {
      softmaxBlockRows<T><<<blockGrid(args.rows), kBlockSize, 0, stream>>>(x, m, y, args);
      KILN_CUDA_CHECK_LAUNCH("softmaxBlockRows");
      return Status::ok();
    }
    return forWarpShape<T>(args.n, l.pack, [&](auto v, auto k) -> Status {
      softmaxWarpRows<T, decltype(v)::value, decltype(k)::value>
          <<<warpGrid(args.rows), kWarpsPerBlock * 32, 0, stream>>>(x, m, y, args);
      KILN_CUDA_CHECK_LAUNCH("softmaxWarpRows");
      return Status::ok();
    });
  });
}

Status launchAddLayerNorm(const AddNormLaunch& l, cudaStream_t stream) {
  const AddNormArgs& args = l.args;
  return dispatchDeviceType<device_types::kStorageFloats>(l.type, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* a = static_cast<const T*>(l.a);
    const T* b = static_cast<const T*>(l.b);
    const T* gamma = static_cast<const T*>(l.gamma);
    const T* beta = static_cast<const T*>(l.beta);
    T* y = static_cast<T*>(l.y);
    T* s = static_cast<T*>(l.sum);
    if (args.n > kWarpRowLimit) {
      addNormBlockRows<T>
          <<<blockGrid(args.rows), kBlockSize, 0, stream>>>(a, b, gamma, beta, y, s, args);
      KILN_CUDA_CHECK_LAUNCH("addNormBlockRows");
      return Status::ok();
    }
    const int lanes = addNormLanesPerRow(args.n, l.pack);
    if (lanes < 32) {
      return forPackWidth<T>(l.pack, [&](auto v) -> Status {
        constexpr int V = decltype(v)::value;
        switch (lanes) {
          case 1:
            return launchShortRows<T, V, 1>(l, stream);
          case 2:
            return launchShortRows<T, V, 2>(l, stream);
          case 4:
            return launchShortRows<T, V, 4>(l, stream);
          case 8:
            return launchShortRows<T, V, 8>(l, stream);
          default:
            return launchShortRows<T, V, 16>(l, stream);
        }
      });
    }
    return forWarpShape<T>(args.n, l.pack, [&](auto v, auto k) -> Status {
      addNormWarpRows<T, decltype(v)::value, decltype(k)::value>
          <<<warpGrid(args.rows), kWarpsPerBlock * 32, 0, stream>>>(a, b, gamma, beta, y, s, args);
      KILN_CUDA_CHECK_LAUNCH("addNormWarpRows");
      return Status::ok();
    });
  });
}

}  // namespace fused_norm
}  // namespace kiln::cuda
