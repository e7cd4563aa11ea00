// FusedConv's epilogue kernel: one read of the convolution's output (and of the
// residual), one write, bias and activation in registers. Each thread moves 16-byte
// packs (4 float32 or 8 float16/bfloat16 values); a pack may straddle channel planes
// (ResNet's 7x7 = 49-element planes), so the bias index advances element by element
// from the pack's first channel, found with two divisions per pack.
#include <cstdint>
#include <string>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/epilogue_activation.cuh"

namespace kiln::cuda {
namespace {

struct EpilogueArgs {
  int64_t packs = 0;
  int64_t channels = 1, inner = 1;
  EpilogueActivation activation = EpilogueActivation::kNone;
  float alpha = 0.f, beta = 0.f;
};

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <class T, int V, bool kBias, bool kResidual>
__global__ void __launch_bounds__(kBlockSize)
    convEpilogueKernel(T* __restrict__ y, const T* __restrict__ bias, const T* __restrict__ z,
                       EpilogueArgs a) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < a.packs; p += step) {
    Pack<T, V> out = reinterpret_cast<const Pack<T, V>*>(y)[p];
    float v[V];
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = toFloat(out.v[j]);
    if constexpr (kBias) {
      const int64_t first = p * V;
      const int64_t plane = first / a.inner;
      int64_t r = first - plane * a.inner;
      int64_t c = plane % a.channels;
      float b = toFloat(bias[c]);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        v[j] += b;
        if (j + 1 < V && ++r == a.inner) {
          r = 0;
          c = c + 1 == a.channels ? 0 : c + 1;
          b = toFloat(bias[c]);
        }
      }
    }
    if constexpr (kResidual) {
      const Pack<T, V> res = reinterpret_cast<const Pack<T, V>*>(z)[p];
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] += toFloat(res.v[j]);
    }
#pragma unroll
    for (int j = 0; j < V; ++j)
      out.v[j] = fromFloat<T>(applyEpilogueActivation(v[j], a.activation, a.alpha, a.beta));
    reinterpret_cast<Pack<T, V>*>(y)[p] = out;
  }
}

template <class T, int V>
Status launch(T* y, const T* bias, const T* z, EpilogueArgs a, int64_t n, cudaStream_t stream) {
  a.packs = n / V;
  const unsigned grid = gridFor(a.packs);
  if (bias && z)
    convEpilogueKernel<T, V, true, true><<<grid, kBlockSize, 0, stream>>>(y, bias, z, a);
  else if (bias)
    convEpilogueKernel<T, V, true, false><<<grid, kBlockSize, 0, stream>>>(y, bias, z, a);
  else if (z)
    convEpilogueKernel<T, V, false, true><<<grid, kBlockSize, 0, stream>>>(y, bias, z, a);
  else
    convEpilogueKernel<T, V, false, false><<<grid, kBlockSize, 0, stream>>>(y, bias, z, a);
  KILN_CUDA_CHECK_LAUNCH("convEpilogueKernel");
  return Status::ok();
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// 16-byte packs need a whole number of them and aligned y and z.
bool packable(int64_t n, int pack, const void* y, const void* z) {
  return n % pack == 0 && aligned16(y) && (!z || aligned16(z));
}

template <class T>
Status run(void* y, const void* bias, const void* z, const EpilogueArgs& a, int64_t n,
           cudaStream_t stream) {
  constexpr int kPack = 16 / sizeof(T);
  const bool pack = packable(n, kPack, y, z);
  T* yt = static_cast<T*>(y);
  const T* bt = static_cast<const T*>(bias);
  const T* zt = static_cast<const T*>(z);
  return pack ? launch<T, kPack>(yt, bt, zt, a, n, stream) : launch<T, 1>(yt, bt, zt, a, n, stream);
}

}  // namespace

Status applyConvEpilogue(void* y, DataType type, const void* bias, const void* z, int64_t outer,
                         int64_t channels, int64_t inner, const ConvEpilogue& epilogue,
                         cudaStream_t stream) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return Status::ok();
  EpilogueArgs a;
  a.channels = channels;
  a.inner = inner;
  a.activation = epilogue.activation;
  a.alpha = epilogue.alpha;
  a.beta = epilogue.beta;
  switch (type) {
    case DataType::kFloat32:
      return run<float>(y, bias, z, a, n, stream);
    case DataType::kFloat16:
      return run<__half>(y, bias, z, a, n, stream);
    case DataType::kBFloat16:
      return run<__nv_bfloat16>(y, bias, z, a, n, stream);
    default:
      return unsupported(std::string("conv epilogue in ") + dataTypeName(type));
  }
}

std::string convEpilogueVariant(DataType type, int64_t count, const void* y, const void* z) {
  const int pack = 16 / static_cast<int>(dataTypeSize(type));
  return packable(count, pack, y, z) ? "packs of " + std::to_string(pack) : "element-wise";
}

}  // namespace kiln::cuda
