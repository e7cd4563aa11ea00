#include "backends/cuda/device_common.cuh"

namespace kiln::cuda {

ShapeInfo broadcastStrides(const Shape& shape, const Shape& outShape) {
  ShapeInfo info;
  info.rank = static_cast<int>(outShape.size());
  int offset = info.rank - static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int d = info.rank - 1; d >= 0; --d) {
    info.dims[d] = outShape[d];
    int sd = d - offset;
    if (sd < 0 || shape[sd] == 1) {
      info.strides[d] = 0;
    } else {
      info.strides[d] = stride;
    }
    if (sd >= 0) stride *= shape[sd];
  }
  return info;
}

ShapeInfo packedStrides(const Shape& shape) {
  return broadcastStrides(shape, shape);
}

}  // namespace kiln::cuda

namespace kiln::cuda {
namespace {
template <class From, class To>
__global__ void convertKernel(const From* src, To* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = fromFloat<To>(toFloat(src[i]));
}

template <class From>
Status convertFrom(const From* src, void* dst, DataType dstType, int64_t n, cudaStream_t stream) {
  unsigned grid = gridFor(n);
  switch (dstType) {
    case DataType::kFloat32:
      convertKernel<<<grid, kBlockSize, 0, stream>>>(src, static_cast<float*>(dst), n);
      break;
    case DataType::kFloat16:
      convertKernel<<<grid, kBlockSize, 0, stream>>>(src, static_cast<__half*>(dst), n);
      break;
    case DataType::kBFloat16:
      convertKernel<<<grid, kBlockSize, 0, stream>>>(src, static_cast<__nv_bfloat16*>(dst), n);
      break;
    default:
      return unsupported(std::string("float conversion to ") + dataTypeName(dstType));
  }
  KILN_CUDA_CHECK_LAUNCH("convertKernel");
  return Status::ok();
}
}  // namespace

Status convertFloatBuffer(const void* src, DataType srcType, void* dst, DataType dstType, int64_t n,
                          cudaStream_t stream) {
  if (n <= 0) return Status::ok();
  if (srcType == dstType) {
    KILN_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, n * dataTypeSize(srcType), cudaMemcpyDeviceToDevice, stream));
    return Status::ok();
  }
  switch (srcType) {
    case DataType::kFloat32:
      return convertFrom(static_cast<const float*>(src), dst, dstType, n, stream);
    case DataType::kFloat16:
      return convertFrom(static_cast<const __half*>(src), dst, dstType, n, stream);
    case DataType::kBFloat16:
      return convertFrom(static_cast<const __nv_bfloat16*>(src), dst, dstType, n, stream);
    default:
      return unsupported(std::string("float conversion from ") + dataTypeName(srcType));
  }
}

namespace {
__global__ void gpuWaitKernel(uint64_t nanoseconds) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}
}  // namespace

Status enqueueGpuWait(double microseconds, cudaStream_t stream) {
  if (microseconds <= 0) return Status::ok();
  gpuWaitKernel<<<1, 1, 0, stream>>>(static_cast<uint64_t>(microseconds * 1000.0));
  KILN_CUDA_CHECK_LAUNCH("gpuWaitKernel");
  return Status::ok();
}
}  // namespace kiln::cuda

namespace kiln::cuda {
namespace {
template <class T>
__global__ void broadcastKernel(const T* src, ShapeInfo srcInfo, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = src[stridedOffset(srcInfo, i)];
}

template <class T>
__global__ void channelBiasKernel(T* y, const T* bias, int64_t channels, int64_t inner, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = (i / inner) % channels;
    y[i] = fromFloat<T>(toFloat(y[i]) + toFloat(bias[c]));
  }
}

struct HostStatusContext {
  Status unsupported(const std::string& message) const { return kiln::unsupported(message); }
};
}  // namespace

Status broadcastInto(const DeviceTensor& src, const DeviceTensor& dst, cudaStream_t stream) {
  if (dst.rank() > kMaxRank) return unsupported("broadcast beyond rank 8");
  int64_t n = dst.numel();
  if (n == 0) return Status::ok();
  ShapeInfo info = broadcastStrides(src.shape, dst.shape);
  HostStatusContext context;
  KILN_DISPATCH_BYTES(dst.type, context,
                      broadcastKernel<<<gridFor(n), kBlockSize, 0, stream>>>(
                          static_cast<const T*>(src.data), info, static_cast<T*>(dst.data), n));
  KILN_CUDA_CHECK_LAUNCH("broadcastKernel");
  return Status::ok();
}

Status addChannelBias(void* y, DataType type, const void* bias, int64_t outer, int64_t channels,
                      int64_t inner, cudaStream_t stream) {
  int64_t n = outer * channels * inner;
  if (n == 0) return Status::ok();
  HostStatusContext context;
  switch (type) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat64:
      break;
    default:
      return unsupported(std::string("bias of type ") + dataTypeName(type));
  }
  KILN_DISPATCH_FLOAT(type, context,
                      channelBiasKernel<<<gridFor(n), kBlockSize, 0, stream>>>(
                          static_cast<T*>(y), static_cast<const T*>(bias), channels, inner, n));
  KILN_CUDA_CHECK_LAUNCH("channelBiasKernel");
  return Status::ok();
}
}  // namespace kiln::cuda
