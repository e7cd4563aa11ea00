// The narrowing strided copies' device half (contract: narrowing_copy_impl.h): float32 read,
// float16 or bfloat16 written, rounded as convertFloatBuffer rounds.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/data_movement_common.cuh"
#include "backends/cuda/ops/mma_f16.cuh"  // packPair
#include "backends/cuda/ops/narrowing_copy_impl.h"

namespace kiln::cuda {
namespace {

using namespace dm;

// Thread g moves output elements [g * P, g * P + P): their coordinates split once, P / 4
// float4 reads, then one 8-byte word (P = 4) or P / 8 16-byte words written.
template <class T, int P>
__global__ void narrowingCopyKernel(const float* in, T* out, NarrowingCopy p, int64_t groups) {
  KILN_DM_GRID_LOOP(g, groups) {
    int64_t rest = g * P;
    int64_t offset = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= p.rank) continue;
      int64_t c = 0;
      rest = divMod(rest, p.outDims[d], &c);
      offset += c * p.inStrides[d];
    }
    if constexpr (P == 1) {
      out[g] = fromFloat<T>(in[offset]);
    } else {
      float v[P];
#pragma unroll
      for (int q = 0; q < P / 4; ++q) {
        const float4 f = reinterpret_cast<const float4*>(in + offset)[q];
        v[4 * q] = f.x;
        v[4 * q + 1] = f.y;
        v[4 * q + 2] = f.z;
        v[4 * q + 3] = f.w;
      }
      if constexpr (P == 4) {
        *reinterpret_cast<uint2*>(out + g * 4) =
            make_uint2(packPair<T>(v[0], v[1]), packPair<T>(v[2], v[3]));
      } else {
#pragma unroll
        for (int q = 0; q < P / 8; ++q) {
          const float* w = v + 8 * q;
          reinterpret_cast<uint4*>(out + g * P)[q] =
              make_uint4(packPair<T>(w[0], w[1]), packPair<T>(w[2], w[3]), packPair<T>(w[4], w[5]),
                         packPair<T>(w[6], w[7]));
        }
      }
    }
  }
}

// Columns c and c + 1 of R rows: outputs (c, 0..R-1) then (c + 1, 0..R-1), packed in pairs.
template <class T, int R>
__global__ void narrowingNarrowTransposeKernel(const float* in, uint32_t* out, int64_t batch,
                                               int64_t cols) {
  const int64_t pairs = cols / 2, total = batch * pairs, plane = R * cols;
  KILN_DM_GRID_LOOP(e, total) {
    const int64_t b = e / pairs, c = 2 * (e - b * pairs);
    float2 column[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
      column[r] = *reinterpret_cast<const float2*>(in + b * plane + r * cols + c);
    uint32_t* dst = out + (b * plane + c * R) / 2;
#pragma unroll
    for (int w = 0; w < R; ++w) {
      const int k0 = 2 * w, k1 = 2 * w + 1;
      const float v0 = k0 / R == 0 ? column[k0 % R].x : column[k0 % R].y;
      const float v1 = k1 / R == 0 ? column[k1 % R].x : column[k1 % R].y;
      dst[w] = packPair<T>(v0, v1);
    }
  }
}

// fn(T{}) with T the 16-bit device type of `type`.
template <class Fn>
Status forNarrowType(DataType type, Fn&& fn) {
  if (type == DataType::kFloat16) return fn(__half{});
  if (type == DataType::kBFloat16) return fn(__nv_bfloat16{});
  return Status(StatusCode::kInternal, std::string("a narrowing copy into ") + dataTypeName(type));
}

template <class T, int R>
void launchNarrowTransposeRows(const NarrowingNarrowTranspose& t, cudaStream_t stream) {
  narrowingNarrowTransposeKernel<T, R><<<gridFor(t.batch * (t.cols / 2)), kBlockSize, 0, stream>>>(
      t.in, static_cast<uint32_t*>(t.out), t.batch, t.cols);
}

}  // namespace

namespace dm {

Status launchNarrowingCopy(const NarrowingCopy& copy, int64_t elements, cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(forNarrowType(copy.outType, [&](auto tag) -> Status {
    using T = decltype(tag);
    T* out = static_cast<T*>(copy.out);
    const int64_t groups = elements / copy.pack;
    const unsigned grid = gridFor(groups);
    switch (copy.pack) {
      case 16:
        narrowingCopyKernel<T, 16><<<grid, kBlockSize, 0, stream>>>(copy.in, out, copy, groups);
        break;
      case 8:
        narrowingCopyKernel<T, 8><<<grid, kBlockSize, 0, stream>>>(copy.in, out, copy, groups);
        break;
      case 4:
        narrowingCopyKernel<T, 4><<<grid, kBlockSize, 0, stream>>>(copy.in, out, copy, groups);
        break;
      case 1:
        narrowingCopyKernel<T, 1><<<grid, kBlockSize, 0, stream>>>(copy.in, out, copy, groups);
        break;
      default:
        return Status(StatusCode::kInternal,
                      "a narrowing copy in packs of " + std::to_string(copy.pack));
    }
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("narrowingCopyKernel");
  return Status::ok();
}

Status launchNarrowingNarrowTranspose(const NarrowingNarrowTranspose& t, cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(forNarrowType(t.outType, [&](auto tag) -> Status {
    using T = decltype(tag);
    switch (t.rows) {
      case 1:
        launchNarrowTransposeRows<T, 1>(t, stream);
        break;
      case 2:
        launchNarrowTransposeRows<T, 2>(t, stream);
        break;
      case 3:
        launchNarrowTransposeRows<T, 3>(t, stream);
        break;
      case 4:
        launchNarrowTransposeRows<T, 4>(t, stream);
        break;
      case 5:
        launchNarrowTransposeRows<T, 5>(t, stream);
        break;
      case 6:
        launchNarrowTransposeRows<T, 6>(t, stream);
        break;
      case 7:
        launchNarrowTransposeRows<T, 7>(t, stream);
        break;
      case 8:
        launchNarrowTransposeRows<T, 8>(t, stream);
        break;
      default:
        return Status(StatusCode::kInternal,
                      "a narrow transpose of " + std::to_string(t.rows) + " rows");
    }
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("narrowingNarrowTransposeKernel");
  return Status::ok();
}

}  // namespace dm
}  // namespace kiln::cuda
