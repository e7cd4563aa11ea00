// cp.async (sm_80+): 16-byte copies from global to shared memory that run while the
// warp computes, in commit groups a kernel waits for. Shared by the INT8 convolution
// kernels and the flash attention kernel.
#pragma once

namespace kiln::cuda {

// Copies 16 bytes from `global` to `shared`, or writes 16 zero bytes when !valid
// (`global` is then not read, but must still be a mapped address: pass a base pointer).
__device__ __forceinline__ void copyAsync16(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global),
               "r"(valid ? 16 : 0));
}
// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void commitCopies() {
  asm volatile("cp.async.commit_group;\n");
}
// Waits until at most `Pending` committed groups are still in flight (the thread's own
// copies; a __syncthreads() after it makes every thread's copies visible to the block).
template <int Pending>
__device__ __forceinline__ void waitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

}  // namespace kiln::cuda
