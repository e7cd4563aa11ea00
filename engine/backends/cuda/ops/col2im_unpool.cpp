// Col2Im, MaxUnpool, CenterCropPad and TensorScatter on the CUDA backend, the host half
// (kernels: col2im_unpool_impl.cu, contract col2im_unpool_impl.h), with the opset
// ranges, attributes, defaults and error messages of the CPU kernels; the contract of each
// is in spatial_misc.cpp's header comment.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/col2im_unpool_impl.h"
#include "backends/cuda/ops/spatial_misc_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"
#include "ops/spatial_params.h"

namespace kiln::cuda {
namespace {

using namespace sm;

// ============================ Col2Im ============================

Status readCol2ImGeometry(GpuKernelContext& ctx, Col2ImParams* p, std::vector<int64_t>* image) {
  KILN_ASSIGN_OR_RETURN(Tensor imageTensor, ctx.hostInput(1));
  KILN_ASSIGN_OR_RETURN(Tensor blockTensor, ctx.hostInput(2));
  if (!isInteger(imageTensor.type()) || !isInteger(blockTensor.type()))
    return ctx.error("image_shape and block_shape must be integer tensors");
  *image = imageTensor.toInt64Vector();
  const std::vector<int64_t> block = blockTensor.toInt64Vector();
  const size_t count = image->size();
  if (count == 0 || block.size() != count)
    return ctx.error("image_shape and block_shape must have the same length");
  const std::vector<int64_t> dilation =
      ctx.node().attrInts("dilations", std::vector<int64_t>(count, 1));
  const std::vector<int64_t> stride =
      ctx.node().attrInts("strides", std::vector<int64_t>(count, 1));
  const std::vector<int64_t> pads = ctx.node().attrInts("pads", std::vector<int64_t>(2 * count, 0));
  if (dilation.size() != count || stride.size() != count || pads.size() != 2 * count)
    return ctx.error("dilations, strides and pads must match the " + std::to_string(count) +
                     " spatial dims");
  std::vector<int64_t> blocks;
  for (size_t d = 0; d < count; ++d) {
    if ((*image)[d] <= 0 || block[d] <= 0 || dilation[d] <= 0 || stride[d] <= 0 || pads[d] < 0 ||
        pads[d + count] < 0)
      return ctx.error(
          "image_shape, block_shape, dilations and strides must be positive, pads >= 0");
    const int64_t span = dilation[d] * (block[d] - 1) + 1;
    const int64_t padded = (*image)[d] + pads[d] + pads[d + count];
    if (padded < span) return ctx.error("the block is larger than the padded image");
    blocks.push_back((padded - span) / stride[d] + 1);
  }
  if (count > static_cast<size_t>(kMaxTensorRank))
    return ctx.unsupported("Col2Im with " + std::to_string(count) + " spatial dims");
  p->dims = static_cast<int>(count);
  p->kernelSize = 1;
  p->blockCount = 1;
  p->imageSize = 1;
  for (size_t d = 0; d < count; ++d) {
    p->image[d] = (*image)[d];
    p->block[d] = block[d];
    p->dilation[d] = dilation[d];
    p->stride[d] = stride[d];
    p->padBegin[d] = pads[d];
    p->blocks[d] = blocks[d];
    p->kernelSize *= block[d];
    p->blockCount *= blocks[d];
    p->imageSize *= (*image)[d];
  }
  return Status::ok();
}

Status col2ImKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  const DeviceTensor& in = ctx.input(0);
  if (in.rank() != 3) return ctx.error("input must be [N, C * prod(block_shape), L]");
  Col2ImParams p;
  std::vector<int64_t> image;
  KILN_RETURN_IF_ERROR(readCol2ImGeometry(ctx, &p, &image));
  if (in.shape[1] % p.kernelSize != 0 || in.shape[2] != p.blockCount)
    return ctx.error("input " + dims(in) + " does not match " + std::to_string(p.kernelSize) +
                     " kernel elements and " + std::to_string(p.blockCount) + " blocks");
  const int64_t batch = in.shape[0], channels = in.shape[1] / p.kernelSize;
  Shape outShape = {batch, channels};
  outShape.insert(outShape.end(), image.begin(), image.end());
  if (static_cast<double>(p.imageSize) * static_cast<double>(batch * channels) >
      double(int64_t{1} << 32))
    return ctx.error("image_shape " + shapeToString(image) + " is too large");
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  if (out.numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, in.type, device_types::kStorageFloats));
  Col2ImLaunch launch;
  launch.columns = in.data;
  launch.out = out.data;
  launch.type = in.type;
  launch.count = out.numel();
  launch.params = p;
  return launchCol2Im(launch, ctx.stream());
}

// ============================ MaxUnpool ============================

Status maxUnpoolKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& indices = ctx.input(1);
  if (indices.shape != x.shape || !isInteger(indices.type))
    return ctx.error("input I must be an integer tensor of X's shape " + dims(x));
  // The CPU's geometry and extent (ops/spatial_params.h: attributes held to the dim limit,
  // the extent in checked arithmetic).
  ops::SpatialGeometry g;
  Status read = ops::readSpatialAttributes(ctx.node(), x.shape, {}, &g);
  if (!read.isOk()) return ctx.error(read.message());
  auto unpooled = ops::unpoolShape(x.shape[0], x.shape[1], g);
  if (!unpooled.isOk()) return ctx.error(unpooled.status().message());
  const Shape inferred = *unpooled;
  Shape outShape = inferred;
  if (hasInput(ctx, 2)) {
    KILN_ASSIGN_OR_RETURN(Tensor shapeTensor, ctx.hostInput(2));
    outShape = shapeTensor.toInt64Vector();
    if (outShape.size() != inferred.size()) return ctx.error("output_shape has the wrong rank");
    for (size_t d = 0; d < outShape.size(); ++d) {
      if (outShape[d] < inferred[d])
        return ctx.error("output_shape " + shapeToString(outShape) + " is smaller than " +
                         shapeToString(inferred));
    }
  }
  const int64_t total = shapeNumel(inferred);
  if (total < 0) return ctx.error("MaxUnpool output extent is negative");
  if (x.rank() > kMaxTensorRank)
    return ctx.unsupported("MaxUnpool of rank " + std::to_string(x.rank()));
  if (!isIndexType(indices.type))
    return ctx.unsupported(std::string("indices of type ") + dataTypeName(indices.type));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, outShape));
  if (y.numel() == 0) return Status::ok();
  KILN_CUDA_CHECK(cudaMemsetAsync(y.data, 0, y.byteSize(), ctx.stream()));
  const int64_t n = x.numel();
  if (n == 0) return Status::ok();
  UnpoolParams p;
  p.rank = x.rank();
  p.total = total;
  p.indices64 = indices.type == DataType::kInt64;
  int64_t stride = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    p.inferred[d] = inferred[d];
    p.outStride[d] = stride;
    stride *= outShape[d];
  }
  if (!isWordSized(x.type)) return unsupportedType(ctx, x.type);
  MaxUnpoolLaunch launch;
  launch.x = x.data;
  launch.indices = indices.data;
  launch.y = y.data;
  launch.type = x.type;
  launch.count = n;
  launch.params = p;
  return launchMaxUnpool(launch, ctx.stream());
}

// ============================ CenterCropPad ============================

Status centerCropPadKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& in = ctx.input(0);
  const int rank = in.rank();
  KILN_ASSIGN_OR_RETURN(Tensor shapeTensor, ctx.hostInput(1));
  if (!isInteger(shapeTensor.type()))
    return ctx.error(std::string("shape must be an integer tensor, got ") +
                     dataTypeName(shapeTensor.type()));
  if (shapeTensor.rank() > 1)
    return ctx.error("shape must be 1-D, got rank " + std::to_string(shapeTensor.rank()));
  const std::vector<int64_t> target = shapeTensor.toInt64Vector();
  std::vector<int64_t> axes = ctx.node().attrInts("axes");
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (target.size() != axes.size()) return ctx.error("shape and axes differ in length");
  int64_t count = 1;
  for (int64_t d : target) {
    if (d < 0) return ctx.error("shape has a negative dim: " + shapeToString(target));
    if (d != 0 && count > (int64_t{1} << 32) / d)
      return ctx.error("shape " + shapeToString(target) + " is too large");
    count *= d;
  }
  if (rank > kMaxTensorRank)
    return ctx.unsupported("CenterCropPad of rank " + std::to_string(rank));
  CropPadParams p;
  p.rank = rank;
  Shape outShape = in.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    if (a < -rank || a >= std::max(rank, 1))
      return ctx.error("axis " + std::to_string(a) + " is out of range for rank " +
                       std::to_string(rank));
    const int64_t axis = a < 0 ? a + rank : a;
    const int64_t diff = target[i] - in.shape[axis];  // > 0 pads, < 0 crops
    p.begin[axis] = diff >= 0 ? diff / 2 : -((-diff) / 2);
    outShape[axis] = target[i];
  }
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    p.outDims[d] = outShape[d];
    p.inDims[d] = in.shape[d];
    p.inStrides[d] = stride;
    stride *= in.shape[d];
  }
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, in.type, outShape));
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  if (!isWordSized(in.type)) return unsupportedType(ctx, in.type);
  CenterCropPadLaunch launch;
  launch.in = in.data;
  launch.out = out.data;
  launch.type = in.type;
  launch.count = n;
  launch.params = p;
  return launchCenterCropPad(launch, ctx.stream());
}

// ============================ TensorScatter ============================

Status tensorScatterKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const DeviceTensor& cache = ctx.input(0);
  const DeviceTensor& update = ctx.input(1);
  const int rank = cache.rank();
  const int64_t axisAttr = ctx.node().attrInt("axis", -2);
  if (axisAttr < -rank || axisAttr >= rank)
    return ctx.error("axis " + std::to_string(axisAttr) + " is out of range for rank " +
                     std::to_string(rank));
  const int axis = static_cast<int>(axisAttr < 0 ? axisAttr + rank : axisAttr);
  if (axis == 0) return ctx.error("axis must not be the batch axis 0");
  if (update.type != cache.type || update.rank() != rank)
    return ctx.error("update must have past_cache's type and rank");
  for (int d = 0; d < rank; ++d) {
    if (d == axis ? update.shape[d] > cache.shape[d] : update.shape[d] != cache.shape[d])
      return ctx.error("update shape " + dims(update) + " does not fit past_cache shape " +
                       dims(cache) + " along axis " + std::to_string(axis));
  }
  const std::string mode = ctx.node().attrString("mode", "linear");
  if (mode != "linear" && mode != "circular") return ctx.error("unknown mode '" + mode + "'");
  ScatterParams p;
  p.circular = mode == "circular";
  const int64_t batch = cache.shape[0];
  if (hasInput(ctx, 2)) {
    const DeviceTensor& w = ctx.input(2);
    if (w.rank() != 1 || w.shape[0] != batch)
      return ctx.error("write_indices must be 1-D of the batch size " + std::to_string(batch));
    if (!isIndexType(w.type))
      return ctx.unsupported(std::string("write_indices of type ") + dataTypeName(w.type));
    p.starts = w.data;
    p.starts64 = w.type == DataType::kInt64;
  }
  p.maxLen = cache.shape[axis];
  p.seqLen = update.shape[axis];
  p.perBatch = 1;
  for (int d = 1; d < axis; ++d) p.perBatch *= cache.shape[d];
  p.inner = 1;
  for (int d = axis + 1; d < rank; ++d) p.inner *= cache.shape[d];
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, cache.type, cache.shape));
  if (out.numel() == 0) return Status::ok();
  if (out.data != cache.data) {
    KILN_CUDA_CHECK(cudaMemcpyAsync(out.data, cache.data, cache.byteSize(),
                                    cudaMemcpyDeviceToDevice, ctx.stream()));
  }
  const int64_t n = update.numel();
  if (n == 0) return Status::ok();
  if (!isWordSized(cache.type)) return unsupportedType(ctx, cache.type);
  TensorScatterLaunch launch;
  launch.update = update.data;
  launch.out = out.data;
  launch.type = cache.type;
  launch.count = n;
  launch.params = p;
  return launchTensorScatter(launch, ctx.stream());
}

// ============================ support predicates ============================

std::string supportsCol2Im(const Node&, const std::vector<DataType>& types) {
  return checkTypes(types, {Accept::kFloat, Accept::kInteger, Accept::kInteger});
}
std::string supportsMaxUnpool(const Node&, const std::vector<DataType>& types) {
  return checkTypes(types, {Accept::kFloat, Accept::kIndex, Accept::kInteger});
}
std::string supportsCenterCropPad(const Node&, const std::vector<DataType>& types) {
  return checkTypes(types, {Accept::kAny, Accept::kInteger});
}
std::string supportsTensorScatter(const Node&, const std::vector<DataType>& types) {
  return checkTypes(types, {Accept::kAny, Accept::kAny, Accept::kIndex});
}

}  // namespace

void registerCol2ImUnpoolGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Col2Im", 18, 1000, col2ImKernel, supportsCol2Im);
  registry.add("MaxUnpool", 9, 1000, maxUnpoolKernel, supportsMaxUnpool);
  registry.add("CenterCropPad", 18, 1000, centerCropPadKernel, supportsCenterCropPad);
  registry.add("TensorScatter", 24, 1000, tensorScatterKernel, supportsTensorScatter);
}

}  // namespace kiln::cuda
