// QuantizedPool on the GPU: one thread per output element, the same window
// arithmetic as the CPU loop (quantized_pool_math.h).
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "quantized_pool_plugin.h"

namespace kiln_examples {
namespace {

template <class T>
__device__ float toFloat(T v) {
  return static_cast<float>(v);
}
template <>
__device__ float toFloat<__half>(__half v) {
  return __half2float(v);
}

template <class T>
__device__ T fromFloat(float v, const PoolJob&) {
  return static_cast<T>(v);
}
template <>
__device__ __half fromFloat<__half>(float v, const PoolJob&) {
  return __float2half_rn(v);
}
template <>
__device__ int8_t fromFloat<int8_t>(float v, const PoolJob& job) {
  return requantize(v, job.inScale, job.outScale);
}

template <class T>
__global__ void poolKernel(PoolJob job, const T* in, T* out) {
  const int64_t total = job.n * job.c * job.outH * job.outW;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t ox = i % job.outW, oy = (i / job.outW) % job.outH,
                plane = i / (job.outW * job.outH);
  auto load = [in](int64_t index) { return toFloat(in[index]); };
  out[i] = fromFloat<T>(poolWindow(job, load, plane, oy, ox), job);
}

template <class T>
cudaError_t launch(const PoolJob& job, const void* in, void* out, cudaStream_t stream) {
  const int64_t total = job.n * job.c * job.outH * job.outW;
  if (total == 0) return cudaSuccess;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
  poolKernel<T>
      <<<blocks, threads, 0, stream>>>(job, static_cast<const T*>(in), static_cast<T*>(out));
  return cudaGetLastError();
}

}  // namespace

int32_t quantizedPoolOnStream(const PoolJob& job, kp::DataType type, const void* input,
                              void* output, void* stream, const char** error) {
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e;
  switch (type) {
    case kp::DataType::kFloat32:
      e = launch<float>(job, input, output, s);
      break;
    case kp::DataType::kFloat16:
      e = launch<__half>(job, input, output, s);
      break;
    case kp::DataType::kInt8:
      e = launch<int8_t>(job, input, output, s);
      break;
    default:
      *error = "QuantizedPool runs float32, float16 and int8 only";
      return kp::kStatusUnsupported;
  }
  if (e != cudaSuccess) {
    *error = cudaGetErrorString(e);
    return kp::kStatusCudaError;
  }
  return kp::kStatusSuccess;
}

}  // namespace kiln_examples
