// Hopper's warpgroup MMAs (sm_90a `wgmma`), the parts every element type shares: shared-memory
// operand descriptors, the fences and the commit / wait of wgmma groups. Included by the .cu
// files of the kiln_cuda_sm90a object library (int8_conv_wgmma.cu, and fused_attention_wgmma.cu
// through wgmma_f16.cuh).
#pragma once

#include <cstdint>

namespace kiln::cuda::wgmma {

// A descriptor: start address, leading and stride byte offsets (16-byte units), no swizzle or
// (swizzle128) the 128-byte swizzle, whose atoms must start on 1024-byte boundaries.
__device__ __forceinline__ uint64_t descriptor(const void* shared, int leadingBytes,
                                               int strideBytes, bool swizzle128 = false) {
  const uint64_t address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  return ((address & 0x3FFFF) >> 4) | (uint64_t(leadingBytes >> 4) << 16) |
         (uint64_t(strideBytes >> 4) << 32) | (uint64_t(swizzle128 ? 1 : 0) << 62);
}

__device__ __forceinline__ void fenceOperands() {  // ordinary shared writes -> the async proxy
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

}  // namespace kiln::cuda::wgmma
