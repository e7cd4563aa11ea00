// The device half of Col2Im, MaxUnpool, CenterCropPad and TensorScatter: their kernels and
// launchers (contract: col2im_unpool_impl.h; the ops' contract: spatial_misc.cpp's header
// comment; the host checks: col2im_unpool.cpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "backends/cuda/ops/col2im_unpool_impl.h"
#include "backends/cuda/ops/spatial_misc_common.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::sm {
namespace {

// ============================ Col2Im ============================

// Gathers, for each image element, every (kernel offset, block) pair that covers it.
template <class T>
__global__ void col2ImDevice(const T* __restrict__ columns, T* __restrict__ out, Col2ImParams p,
                             int64_t n) {
  KILN_GRID_LOOP(idx, n) {
    const int64_t nc = idx / p.imageSize;
    int64_t rest = idx % p.imageSize;
    int64_t pos[kMaxRank];
    for (int d = p.dims - 1; d >= 0; --d) {
      pos[d] = rest % p.image[d];
      rest /= p.image[d];
    }
    const T* src = columns + nc * p.kernelSize * p.blockCount;
    int64_t k[kMaxRank] = {};
    double acc = 0.0;
    for (int64_t kFlat = 0; kFlat < p.kernelSize; ++kFlat) {
      int64_t bFlat = 0;
      bool inside = true;
      for (int d = 0; d < p.dims && inside; ++d) {
        const int64_t t = pos[d] + p.padBegin[d] - k[d] * p.dilation[d];
        inside = t >= 0 && t % p.stride[d] == 0 && t / p.stride[d] < p.blocks[d];
        bFlat = bFlat * p.blocks[d] + t / p.stride[d];
      }
      if (inside) acc += static_cast<double>(toFloat(src[kFlat * p.blockCount + bFlat]));
      for (int d = p.dims - 1; d >= 0; --d) {  // next kernel offset, row-major
        if (++k[d] < p.block[d]) break;
        k[d] = 0;
      }
    }
    out[idx] = storeDouble<T>(acc);
  }
}

// Two spatial dims with 32-bit geometry (Col2Im2d): the same sum with 32-bit index math and
// no per-dim loops, the accumulator float for 16-bit storage (a handful of terms, rounded
// to 16 bits after) and double otherwise. kStride 1 or 2: both strides that value and both
// dilations 1, so a block index is a subtraction or a shift (no integer division, which
// made the general form compute-bound); 0: any strides and dilations. `small`: n < 2^31,
// the output index split in 32 bits too. Threads of consecutive x read neighbouring blocks
// of one kernel offset's row. VOLO's folds ([128, 1728, 196] at stride 2 into [128, 192,
// 28, 28]) took 2.05 ms each in the general kernel, 0.50-0.55 ms with 32-bit divisions.
template <class T, class Acc, int kStride>
__global__ void col2Im2dDevice(const T* __restrict__ columns, T* __restrict__ out, Col2Im2d g,
                               int64_t n, bool small) {
  const int64_t image = int64_t(g.height) * g.width;
  const int strideH = kStride ? kStride : g.strideH, strideW = kStride ? kStride : g.strideW;
  const int dilationH = kStride ? 1 : g.dilationH, dilationW = kStride ? 1 : g.dilationW;
  KILN_GRID_LOOP(idx, n) {
    int64_t plane;
    int rest;
    if (small) {
      const uint32_t i32 = static_cast<uint32_t>(idx), image32 = static_cast<uint32_t>(image);
      plane = i32 / image32;
      rest = static_cast<int>(i32 - static_cast<uint32_t>(plane) * image32);
    } else {
      plane = idx / image;
      rest = static_cast<int>(idx - plane * image);
    }
    const int y = rest / g.width, x = rest - y * g.width;
    const T* src = columns + plane * g.kernelSize * g.blockCount;
    Acc acc = 0;
    for (int ky = 0; ky < g.blockH; ++ky) {
      const int ty = y + g.padH - ky * dilationH;
      if (ty < 0 || ty % strideH != 0) continue;
      const int by = ty / strideH;
      if (by >= g.blocksH) continue;
      const T* row = src + ky * g.blockW * g.blockCount + by * g.blocksW;
      for (int kx = 0; kx < g.blockW; ++kx) {
        const int tx = x + g.padW - kx * dilationW;
        if (tx < 0 || tx % strideW != 0) continue;
        const int bx = tx / strideW;
        if (bx >= g.blocksW) continue;
        acc += static_cast<Acc>(toFloat(row[kx * g.blockCount + bx]));
      }
    }
    if constexpr (std::is_same_v<Acc, double>)
      out[idx] = storeDouble<T>(acc);
    else
      out[idx] = fromFloat<T>(acc);
  }
}

// Col2Im2d by planes for 16-bit storage (col2ImPlanesApply): a block sums one (n, c) plane
// in float in shared memory. For a fixed kernel offset every block lands on a distinct image
// element, so the offsets go one after another (a barrier between them, no atomics): the
// threads read the offset's row of columns contiguous and add each entry to its element;
// then the plane goes out packed. The terms add in kernel-offset order, as in
// col2Im2dDevice: the same float sums, bit for bit. VOLO's folds ([128, 1728, 196] into
// [128, 192, 28, 28] at stride 2) took 0.33 ms a layer gathered per output element on an
// H200, every thread walking all 9 offsets with its warp split by their parity.
template <class T>
__global__ void col2ImPlanesDevice(const T* __restrict__ columns, T* __restrict__ out, Col2Im2d g,
                                   int64_t planes) {
  extern __shared__ float planeSums[];
  const int image = g.height * g.width;
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    for (int i = threadIdx.x; i < image; i += blockDim.x) planeSums[i] = 0.f;
    __syncthreads();
    const T* src = columns + plane * g.kernelSize * g.blockCount;
    for (int ky = 0; ky < g.blockH; ++ky) {
      for (int kx = 0; kx < g.blockW; ++kx) {
        const T* row = src + (ky * g.blockW + kx) * g.blockCount;
        for (int b = threadIdx.x; b < g.blockCount; b += blockDim.x) {
          const int by = b / g.blocksW, bx = b - by * g.blocksW;
          const int y = by * g.strideH - g.padH + ky * g.dilationH;
          const int x = bx * g.strideW - g.padW + kx * g.dilationW;
          if (y >= 0 && y < g.height && x >= 0 && x < g.width)
            planeSums[y * g.width + x] += toFloat(row[b]);
        }
        __syncthreads();
      }
    }
    T* dst = out + plane * image;
    for (int i = threadIdx.x; i < image; i += blockDim.x) dst[i] = fromFloat<T>(planeSums[i]);
    __syncthreads();
  }
}

// ============================ MaxUnpool ============================

template <class W>
__global__ void maxUnpoolDevice(const W* __restrict__ x, const void* __restrict__ indices,
                                W* __restrict__ y, UnpoolParams p, int64_t n) {
  KILN_GRID_LOOP(i, n) {
    int64_t flat = loadIndex(indices, p.indices64, i);
    if (flat < 0 || flat >= p.total) continue;  // the CPU raises an error here
    int64_t offset = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      offset += (flat % p.inferred[d]) * p.outStride[d];
      flat /= p.inferred[d];
    }
    y[offset] = x[i];
  }
}

// ============================ CenterCropPad ============================

template <class W>
__global__ void cropPadDevice(const W* __restrict__ in, W* __restrict__ out, CropPadParams p,
                              int64_t n) {
  KILN_GRID_LOOP(idx, n) {
    int64_t rest = idx, offset = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rest % p.outDims[d];
      rest /= p.outDims[d];
      const int64_t i = o - p.begin[d];
      inside = inside && i >= 0 && i < p.inDims[d];
      offset += i * p.inStrides[d];
    }
    out[idx] = inside ? in[offset] : W{};
  }
}

// ============================ TensorScatter ============================

template <class W>
__global__ void tensorScatterDevice(const W* __restrict__ update, W* __restrict__ out,
                                    ScatterParams p, int64_t n) {
  KILN_GRID_LOOP(idx, n) {
    const int64_t i = idx % p.inner;
    const int64_t s = (idx / p.inner) % p.seqLen;
    const int64_t row = idx / (p.inner * p.seqLen);
    const int64_t b = row / p.perBatch;
    const int64_t start = p.starts ? loadIndex(p.starts, p.starts64, b) : 0;
    // The CPU raises an error for these starts; the batch is left unwritten.
    if (start < 0 || (!p.circular && start + p.seqLen > p.maxLen) || p.maxLen == 0) continue;
    if (p.circular && s + p.maxLen < p.seqLen) continue;  // a later update overwrites it
    const int64_t pos = (start + s) % p.maxLen;
    out[(row * p.maxLen + pos) * p.inner + i] = update[idx];
  }
}

}  // namespace

Status launchCol2Im(const Col2ImLaunch& args, cudaStream_t stream) {
  return dispatchDeviceType<device_types::kStorageFloats>(args.type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = args.count;
    const T* columns = static_cast<const T*>(args.columns);
    T* out = static_cast<T*>(args.out);
    Col2Im2d g;
    if constexpr (sizeof(T) == 2) {
      if (col2Im2d(args.params, &g) && col2ImPlanesApply(g)) {
        const int64_t planes = n / (int64_t(g.height) * g.width);
        const unsigned grid =
            static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(planes, 1), 65535LL * 32));
        col2ImPlanesDevice<T><<<grid, kBlockSize, sizeof(float) * g.height * g.width, stream>>>(
            columns, out, g, planes);
        KILN_CUDA_CHECK_LAUNCH("Col2Im by planes");
        return Status::ok();
      }
    }
    if (col2Im2d(args.params, &g)) {
      using Acc = std::conditional_t<sizeof(T) == 2, float, double>;
      const bool small = n < (int64_t{1} << 31);
      const bool unitDilation = g.dilationH == 1 && g.dilationW == 1;
      const int stride = unitDilation && g.strideH == g.strideW && g.strideH <= 2 ? g.strideH : 0;
      auto launch = [&](auto kernel) {
        kernel<<<gridFor(n), kBlockSize, 0, stream>>>(columns, out, g, n, small);
      };
      if (stride == 1)
        launch(col2Im2dDevice<T, Acc, 1>);
      else if (stride == 2)
        launch(col2Im2dDevice<T, Acc, 2>);
      else
        launch(col2Im2dDevice<T, Acc, 0>);
    } else {
      col2ImDevice<T><<<gridFor(n), kBlockSize, 0, stream>>>(columns, out, args.params, n);
    }
    KILN_CUDA_CHECK_LAUNCH("Col2Im");
    return Status::ok();
  });
}

Status launchMaxUnpool(const MaxUnpoolLaunch& args, cudaStream_t stream) {
  return dispatchWord(args.type, [&](auto word) {
    using T = decltype(word);
    const int64_t n = args.count;
    maxUnpoolDevice<T><<<gridFor(n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.x), args.indices, static_cast<T*>(args.y), args.params, n);
    KILN_CUDA_CHECK_LAUNCH("MaxUnpool");
    return Status::ok();
  });
}

Status launchCenterCropPad(const CenterCropPadLaunch& args, cudaStream_t stream) {
  return dispatchWord(args.type, [&](auto word) {
    using T = decltype(word);
    const int64_t n = args.count;
    cropPadDevice<T><<<gridFor(n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.in), static_cast<T*>(args.out), args.params, n);
    KILN_CUDA_CHECK_LAUNCH("CenterCropPad");
    return Status::ok();
  });
}

Status launchTensorScatter(const TensorScatterLaunch& args, cudaStream_t stream) {
  return dispatchWord(args.type, [&](auto word) {
    using T = decltype(word);
    const int64_t n = args.count;
    tensorScatterDevice<T><<<gridFor(n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(args.update), static_cast<T*>(args.out), args.params, n);
    KILN_CUDA_CHECK_LAUNCH("TensorScatter");
    return Status::ok();
  });
}

}  // namespace kiln::cuda::sm
