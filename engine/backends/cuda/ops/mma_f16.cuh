// Tensor-core helpers for 16-bit float storage (half, bfloat16), shared by Kiln's
// mma.sync kernels (fused_attention_impl.cu, the conv-max-pool stem) and, for packPair, the
// narrowing copies. Included by .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace kiln::cuda {

__device__ __forceinline__ unsigned sharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8x8 16-bit matrices from shared memory: lane L gives the address of matrix L / 8's
// row L % 8; kTrans transposes each matrix.
template <bool kTrans>
__device__ __forceinline__ void ldmatrixX4(uint32_t r[4], unsigned address) {
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}
template <bool kTrans>
__device__ __forceinline__ void ldmatrixX4(uint32_t r[4], const void* p) {
  ldmatrixX4<kTrans>(r, sharedAddress(p));
}

// c (16 x 8, float) += a (16 x 16, row) * b (16 x 8, col); T is __half or __nv_bfloat16.
template <class T>
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d = a * b + c for a first step that starts an accumulator from c (c is not written).
template <class T>
__device__ __forceinline__ void mma16816From(float d[4], const uint32_t a[4], uint32_t b0,
                                             uint32_t b1, const float c[4]) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
}

// Four 8x8 16-bit matrices to shared memory, the inverse of ldmatrixX4<false>: lane L
// gives the address of matrix L / 8's row L % 8; r[i] is this lane's pair of matrix i
// (row L / 4, columns 2 (L % 4) and + 1), the layout of an mma accumulator packed in
// pairs. stmatrix on sm_90; four 32-bit stores (lanes' row addresses from shuffles)
// before it.
__device__ __forceinline__ void stmatrixX4(unsigned address, const uint32_t r[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(address),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#else
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned row = __shfl_sync(0xffffffffu, address, i * 8 + lane / 4);
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(row + 4 * (lane % 4)), "r"(r[i]) : "memory");
  }
#endif
}

// Two floats as one register of two 16-bit values (the lower index in the low half).
template <class T>
__device__ __forceinline__ uint32_t packPair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
}

}  // namespace kiln::cuda
