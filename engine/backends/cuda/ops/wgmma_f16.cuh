// Hopper's warpgroup MMAs (sm_90a `wgmma.mma_async`) on 16-bit floats (half, bfloat16) with
// float accumulators, for Kiln's wgmma kernels (fused_attention_wgmma.cu). Compiled for sm_90a
// only; included by .cu files of the kiln_cuda_sm90a object library.
//
// Shared-memory operands of 16-bit elements, 64 to a row (128 bytes), as descriptors take them:
//   - 128-byte swizzle (what Kiln's kernels use): 8-row atoms of 1024 bytes, aligned to 1024
//     bytes, row r's 16-byte chunk c at chunk c ^ (r % 8). K-major (a row's elements along K):
//     a k16 step starts 32 bytes further inside the atom; stride byte offset 1024 (the next 8
//     rows). MN-major (V's [key][dv] rows as B with N = dv, K = keys, transposed): a k16 step
//     (16 keys) starts 2048 bytes further; the next 8 keys 1024 bytes on.
//   - No swizzle: 8-row x 16-byte core matrices of 128 contiguous bytes. K-major: leading byte
//     offset the next core matrix along K, stride byte offset the next 8 rows. MN-major: the
//     other way round, leading along K and stride along N (measured on an H200, 2026-12-03:
//     the K-major reading gave wrong outputs). wgmma reads such operands 1.55x slower
//     (fused_attention_wgmma.cu).
// Accumulators (m64nN, float): warp w of the warpgroup holds rows 16 w + lane / 4 (d[4 j],
// d[4 j + 1]) and + 8 (d[4 j + 2], d[4 j + 3]), columns 8 j + 2 (lane % 4) and + 1: the
// mma.sync m16n8 layout once per 8 columns.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/ops/wgmma_common.cuh"

namespace kiln::cuda::wgmma {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)

#define KILN_WGMMA_D32                                                                          \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24," \
  "%25,%26,%27,%28,%29,%30,%31}"
#define KILN_WGMMA_OUT32(d)                                                                       \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// d (64 x 64) = A (64 x 16, shared, K-major) B (64 x 16, shared, K-major)^T + (accumulate ? d : 0).
template <class T>
__device__ __forceinline__ void m64n64k16(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " KILN_WGMMA_D32
        ", %32, %33, p, 1, 1, 0, 0;\n}\n"
        : KILN_WGMMA_OUT32(d)
        : "l"(a), "l"(b), "r"(accumulate));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " KILN_WGMMA_D32
        ", %32, %33, p, 1, 1, 0, 0;\n}\n"
        : KILN_WGMMA_OUT32(d)
        : "l"(a), "l"(b), "r"(accumulate));
}

// d (64 x 64) += A (64 x 16 from registers: this thread's mma.sync m16n8k16 A fragment of its
// warp's 16 rows) B (16 x 64, shared, MN-major: transposed).
template <class T>
__device__ __forceinline__ void m64n64k16Registers(float (&d)[32], const uint32_t (&a)[4],
                                                   uint64_t b) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " KILN_WGMMA_D32
        ", {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
        : KILN_WGMMA_OUT32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " KILN_WGMMA_D32
        ", {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
        : KILN_WGMMA_OUT32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

#undef KILN_WGMMA_D32
#undef KILN_WGMMA_OUT32
#endif

}  // namespace kiln::cuda::wgmma
