// NHWC pooling kernels (contract: pool_channels_last.h). One thread owns V adjacent
// channels of one output pixel and walks the window with V-wide loads: neighbouring
// threads read neighbouring bytes, so every load is coalesced and the window's
// overlap (3x3 stride 2 reads each input ~2.25 times) is served by L1/L2. ResNet-50's
// MaxPool at batch 256 fp16 moves 411 MB in and 103 MB out: ~0.17 ms at 3 TB/s.
#include <cfloat>
#include <cstdint>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/pool_channels_last.h"

namespace kiln::cuda {
namespace {

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Taps [lo, hi) of `count` taps at offset + k * step that fall inside [0, limit).
__device__ __forceinline__ void taps(int offset, int step, int limit, int count, int* lo, int* hi) {
  *lo = offset >= 0 ? 0 : min(count, (-offset + step - 1) / step);
  *hi = offset >= limit ? 0 : min(count, (limit - 1 - offset) / step + 1);
  *hi = max(*hi, *lo);
}

// Output element `e` of a window kernel (channel group fastest, then width, height,
// batch): its image, channel group, and the window's top-left tap (may be in the padding).
struct WindowOrigin {
  int64_t n, group;
  int top, left;
};
__device__ __forceinline__ WindowOrigin windowOrigin(int64_t e, int64_t groups,
                                                     const ChannelsLastWindow& p) {
  WindowOrigin o;
  o.group = e % groups;
  int64_t pixel = e / groups;
  const int ow = static_cast<int>(pixel % p.outW);
  pixel /= p.outW;
  const int oh = static_cast<int>(pixel % p.outH);
  o.n = pixel / p.outH;
  o.top = oh * p.strideH - p.padTop;
  o.left = ow * p.strideW - p.padLeft;
  return o;
}

template <class T, int V>
__global__ void __launch_bounds__(kBlockSize)
    windowPoolKernel(const T* __restrict__ x, T* __restrict__ y, ChannelsLastWindow p) {
  const int64_t groups = p.c / V;
  const int64_t total = p.n * p.outH * p.outW * groups;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += step) {
    const WindowOrigin o = windowOrigin(e, groups, p);
    const int top = o.top, left = o.left;
    int h0, h1, w0, w1;
    taps(top, p.dilationH, static_cast<int>(p.h), p.kernelH, &h0, &h1);
    taps(left, p.dilationW, static_cast<int>(p.w), p.kernelW, &w0, &w1);
    float acc[V];
    bool first = true;
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0.f;
    const T* base = x + o.n * p.h * p.w * p.c + o.group * V;
    for (int kh = h0; kh < h1; ++kh) {
      const int ih = top + kh * p.dilationH;
      for (int kw = w0; kw < w1; ++kw) {
        const int iw = left + kw * p.dilationW;
        const Pack<T, V> in = *reinterpret_cast<const Pack<T, V>*>(base + (ih * p.w + iw) * p.c);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const float v = toFloat(in.v[j]);
          if (!p.max)
            acc[j] += v;
          else if (first || v > acc[j])
            acc[j] = v;  // a NaN first tap stays: NaN > anything is false
        }
        first = false;
      }
    }
    float divisor = 1.f;
    if (!p.max) {
      int count = (h1 - h0) * (w1 - w0);
      if (p.countIncludePad) {
        int ph0, ph1, pw0, pw1;
        taps(top + p.padTop, p.dilationH, static_cast<int>(p.h) + p.padTop + p.padBottom, p.kernelH,
             &ph0, &ph1);
        taps(left + p.padLeft, p.dilationW, static_cast<int>(p.w) + p.padLeft + p.padRight,
             p.kernelW, &pw0, &pw1);
        count = (ph1 - ph0) * (pw1 - pw0);
      }
      divisor = count > 0 ? static_cast<float>(count) : 0.f;
    }
    Pack<T, V> out;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float v = acc[j];
      if (!p.max) v = divisor > 0.f ? v / divisor : 0.f;
      if (p.max && first) v = -FLT_MAX;      // an empty window: the channels-first kernel's lowest
      out.v[j] = fromFloatSaturating<T>(v);  // int8 / uint8 MaxPool saturates
    }
    *reinterpret_cast<Pack<T, V>*>(y + e * V) = out;
  }
}

// 3x3 windows without dilation (ResNet's stem MaxPool): the nine taps' loads are issued
// together, predicated on the padding, instead of one trip of a runtime-bounded loop at a
// time, so each thread has nine 16-byte loads in flight. Same tap order, same results as
// windowPoolKernel.
template <class T, int V>
__global__ void __launch_bounds__(kBlockSize)
    window3x3PoolKernel(const T* __restrict__ x, T* __restrict__ y, ChannelsLastWindow p) {
  const int64_t groups = p.c / V;
  const int64_t total = p.n * p.outH * p.outW * groups;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += step) {
    const WindowOrigin o = windowOrigin(e, groups, p);
    const int top = o.top, left = o.left;
    const T* base = x + o.n * p.h * p.w * p.c + o.group * V;
    Pack<T, V> tap[9];
    bool inside[9];
#pragma unroll
    for (int k = 0; k < 9; ++k) {
      const int ih = top + k / 3, iw = left + k % 3;
      inside[k] = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
      if (inside[k]) tap[k] = *reinterpret_cast<const Pack<T, V>*>(base + (ih * p.w + iw) * p.c);
    }
    float acc[V];
    bool first = true;
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0.f;
    int count = 0;
#pragma unroll
    for (int k = 0; k < 9; ++k) {
      if (!inside[k]) continue;
      ++count;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float v = toFloat(tap[k].v[j]);
        if (!p.max)
          acc[j] += v;
        else if (first || v > acc[j])
          acc[j] = v;
      }
      first = false;
    }
    if (!p.max && p.countIncludePad) {
      int ph0, ph1, pw0, pw1;
      taps(top + p.padTop, 1, static_cast<int>(p.h) + p.padTop + p.padBottom, 3, &ph0, &ph1);
      taps(left + p.padLeft, 1, static_cast<int>(p.w) + p.padLeft + p.padRight, 3, &pw0, &pw1);
      count = (ph1 - ph0) * (pw1 - pw0);
    }
    Pack<T, V> out;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float v = acc[j];
      if (!p.max) v = count > 0 ? v / static_cast<float>(count) : 0.f;
      if (p.max && first) v = -FLT_MAX;
      out.v[j] = fromFloatSaturating<T>(v);  // int8 / uint8 MaxPool saturates
    }
    *reinterpret_cast<Pack<T, V>*>(y + e * V) = out;
  }
}

// Global pooling, X [N, S, C] channels-last: a block owns one image and up to
// kGroupsPerBlock packs of V channels; its threads split the S positions among
// kBlockSize / groups lanes, each lane reading the block's packs of one position at a
// time (consecutive threads, consecutive 16-byte packs: coalesced), and the lanes'
// partial results meet in shared memory. EfficientNet's first squeeze-excitation pool
// (S = 112 x 112, C = 32, batch 256) has 4 packs per image: one thread per pack, as
// before, left 1,024 threads to read 205 MB.
constexpr int kGroupsPerBlock = 32;

template <class T, int V>
__global__ void __launch_bounds__(kBlockSize)
    globalPoolKernel(const T* __restrict__ x, T* __restrict__ y, int64_t spatial, int64_t c,
                     bool isMax) {
  __shared__ float partial[kBlockSize * V];
  __shared__ bool seen[kBlockSize];
  const int64_t groups = c / V;
  const int64_t chunks = (groups + kGroupsPerBlock - 1) / kGroupsPerBlock;
  const int64_t b = blockIdx.x / chunks, g0 = (blockIdx.x % chunks) * kGroupsPerBlock;
  const int width = static_cast<int>(groups - g0 < kGroupsPerBlock ? groups - g0 : kGroupsPerBlock);
  const int lanes = kBlockSize / width;
  const int g = threadIdx.x % width, lane = threadIdx.x / width;
  float acc[V];
  bool any = false;
  if (lane < lanes) {
    const T* base = x + b * spatial * c + (g0 + g) * V;
    for (int64_t s = lane; s < spatial; s += lanes) {
      const Pack<T, V> in = *reinterpret_cast<const Pack<T, V>*>(base + s * c);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float v = toFloat(in.v[j]);
        if (!any)
          acc[j] = v;
        else if (!isMax)
          acc[j] += v;
        else if (v > acc[j])
          acc[j] = v;
      }
      any = true;
    }
  }
#pragma unroll
  for (int j = 0; j < V; ++j) partial[threadIdx.x * V + j] = any ? acc[j] : 0.f;
  seen[threadIdx.x] = any;
  __syncthreads();
  if (lane != 0) return;
  // Lane 0 of each pack combines the lanes in order (lane 0 holds position 0 first, so
  // a NaN there wins as in the one-thread loop).
  for (int l = 1; l < lanes; ++l) {
    const int t = l * width + g;
    if (!seen[t]) continue;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float v = partial[t * V + j];
      if (!isMax)
        acc[j] += v;
      else if (v > acc[j])
        acc[j] = v;
    }
  }
  Pack<T, V> out;
#pragma unroll
  for (int j = 0; j < V; ++j)
    out.v[j] = fromFloat<T>(isMax ? acc[j] : acc[j] / static_cast<float>(spatial));
  *reinterpret_cast<Pack<T, V>*>(y + b * c + (g0 + g) * V) = out;
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Channels per thread: a 16-byte pack when c and both pointers allow, else one.
template <class T>
bool packed(int64_t c, const void* x, const void* y) {
  return c % (16 / sizeof(T)) == 0 && aligned16(x) && aligned16(y);
}

template <class T>
Status launchWindow(const ChannelsLastWindow& p, const void* x, void* y, cudaStream_t stream) {
  constexpr int kPack = 16 / sizeof(T);
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  const int64_t pixels = p.n * p.outH * p.outW;
  const bool is3x3 = p.kernelH == 3 && p.kernelW == 3 && p.dilationH == 1 && p.dilationW == 1;
  if (packed<T>(p.c, x, y) && is3x3)
    window3x3PoolKernel<T, kPack>
        <<<gridFor(pixels * p.c / kPack), kBlockSize, 0, stream>>>(xt, yt, p);
  else if (packed<T>(p.c, x, y))
    windowPoolKernel<T, kPack><<<gridFor(pixels * p.c / kPack), kBlockSize, 0, stream>>>(xt, yt, p);
  else
    windowPoolKernel<T, 1><<<gridFor(pixels * p.c), kBlockSize, 0, stream>>>(xt, yt, p);
  KILN_CUDA_CHECK_LAUNCH("windowPoolKernel");
  return Status::ok();
}

template <class T>
Status launchGlobal(int64_t n, int64_t spatial, int64_t c, bool isMax, const void* x, void* y,
                    cudaStream_t stream) {
  constexpr int kPack = 16 / sizeof(T);
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  const int v = packed<T>(c, x, y) ? kPack : 1;
  const int64_t blocks = n * ((c / v + kGroupsPerBlock - 1) / kGroupsPerBlock);
  if (blocks > int64_t{INT32_MAX})
    return unsupported("a channels-last global pool over 2^31 blocks");
  if (v == kPack)
    globalPoolKernel<T, kPack>
        <<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(xt, yt, spatial, c, isMax);
  else
    globalPoolKernel<T, 1>
        <<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(xt, yt, spatial, c, isMax);
  KILN_CUDA_CHECK_LAUNCH("globalPoolKernel");
  return Status::ok();
}

}  // namespace

Status poolChannelsLast(const ChannelsLastWindow& p, DataType type, const void* x, void* y,
                        cudaStream_t stream) {
  if (p.n * p.outH * p.outW * p.c == 0) return Status::ok();
  if (p.h * p.w > (int64_t(1) << 30)) return unsupported("a channels-last pooling plane over 2^30");
  switch (type) {
    case DataType::kFloat32:
      return launchWindow<float>(p, x, y, stream);
    case DataType::kFloat16:
      return launchWindow<__half>(p, x, y, stream);
    case DataType::kBFloat16:
      return launchWindow<__nv_bfloat16>(p, x, y, stream);
    case DataType::kInt8:
    case DataType::kUInt8:
      if (!p.max) return unsupported("channels-last integer pooling other than MaxPool");
      return type == DataType::kInt8 ? launchWindow<int8_t>(p, x, y, stream)
                                     : launchWindow<uint8_t>(p, x, y, stream);
    default:
      return unsupported(std::string("channels-last pooling in ") + dataTypeName(type));
  }
}

Status globalPoolChannelsLast(int64_t n, int64_t spatial, int64_t c, bool isMax, DataType type,
                              const void* x, void* y, cudaStream_t stream) {
  if (n * c == 0) return Status::ok();
  if (spatial == 0) return invalidArgument("input X has an empty spatial extent");
  switch (type) {
    case DataType::kFloat32:
      return launchGlobal<float>(n, spatial, c, isMax, x, y, stream);
    case DataType::kFloat16:
      return launchGlobal<__half>(n, spatial, c, isMax, x, y, stream);
    case DataType::kBFloat16:
      return launchGlobal<__nv_bfloat16>(n, spatial, c, isMax, x, y, stream);
    default:
      return unsupported(std::string("channels-last global pooling in ") + dataTypeName(type));
  }
}

}  // namespace kiln::cuda
