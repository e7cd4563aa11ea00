// MaxUnpool (the partial inverse of MaxPool) and MaxRoiPool (Fast R-CNN's
// region pooling).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops/nn_common.h"
#include "backends/cpu/ops/pool.h"
#include "backends/cpu/ops/spatial.h"

namespace kiln::cpu {
namespace {

// Copies `inner` (zero-padded) into the leading corner of `outer`, row-major.
template <class T>
void copyIntoCorner(const T* inner, const Shape& innerShape, T* outer, const Shape& outerShape) {
  const int64_t total = shapeNumel(innerShape);
  const std::vector<int64_t> outerStrides = contiguousStrides(outerShape);
  std::vector<int64_t> index(innerShape.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * outerStrides[d];
    outer[offset] = inner[i];
    for (int d = static_cast<int>(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < innerShape[d]) break;
      index[d] = 0;
    }
  }
}

// An roi coordinate in feature-map cells, rounded as Caffe's RoI pooling does, held to
// +-2^52 (NaN to 0) first: a coordinate of 1e30 overflowed `end - start + 1` and the bin
// bounds' casts. Held boxes are still far wider than any map (dims stay below 2^40).
int64_t roiCell(double v) {
  constexpr double kLimit = 4503599627370496.0;  // 2^52
  return std::llround(std::isnan(v) ? 0.0 : std::clamp(v, -kLimit, kLimit));
}

// Region bounds in feature-map cells.
struct RoiBox {
  int64_t batch, startH, startW;
  double binH, binW;
};

}  // namespace

// Indices are flat positions in the tensor MaxPool would have read: the shape
// inferred from kernel, strides and pads. A larger output_shape holds that
// tensor in its leading corner (the ONNX reference's reading).
Status maxUnpoolKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (indices.shape() != x.shape() || !isInteger(indices.type())) {
    return ctx.error("input I must be an integer tensor of X's shape " + shapeToString(x.shape()));
  }
  SpatialGeometry g;
  KILN_RETURN_IF_ERROR(readSpatialAttributes(ctx, x.shape(), {}, &g));
  auto unpooled = ops::unpoolShape(x.dim(0), x.dim(1), g);
  if (!unpooled.isOk()) return ctx.error(unpooled.status().message());
  const Shape inferred = *unpooled;
  Shape outShape = inferred;
  if (const Tensor* shapeTensor = ctx.inputOrNull(2)) {
    outShape = readInt64s(*shapeTensor);
    if (outShape.size() != inferred.size()) return ctx.error("output_shape has the wrong rank");
    for (size_t d = 0; d < outShape.size(); ++d) {
      if (outShape[d] < inferred[d]) {
        return ctx.error("output_shape " + shapeToString(outShape) + " is smaller than " +
                         shapeToString(inferred));
      }
    }
  }
  const int64_t total = shapeNumel(inferred);
  if (total < 0) return ctx.error("MaxUnpool output extent is negative");
  Tensor& y = ctx.allocateOutput(0, x.type(), outShape);
  const std::vector<int64_t> idx = indices.toInt64Vector();
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    std::vector<T> scattered(static_cast<size_t>(total), static_cast<T>(0.0f));
    const T* xd = x.data<T>();
    for (size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= total) {
        return ctx.error("index " + std::to_string(idx[i]) + " in I is out of range [0, " +
                         std::to_string(total) + ")");
      }
      scattered[idx[i]] = xd[i];
    }
    std::fill(y.data<T>(), y.data<T>() + y.numel(), static_cast<T>(0.0f));
    copyIntoCorner(scattered.data(), inferred, y.data<T>(), outShape);
    return Status::ok();
  });
  return status.code() == StatusCode::kUnsupported ? ctx.unsupported(status.message()) : status;
}

Status maxRoiPoolKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  if (x.rank() != 4) return ctx.error("input X must be 4-D, got " + shapeToString(x.shape()));
  if (rois.rank() != 2 || rois.dim(1) != 5 || rois.type() != x.type()) {
    return ctx.error("input rois must be [num_rois, 5] of X's type, got " +
                     shapeToString(rois.shape()));
  }
  const std::vector<int64_t> pooled = ctx.node().attrInts("pooled_shape");
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1) {
    return ctx.error("attribute 'pooled_shape' must hold two positive values");
  }
  const double scale = ctx.node().attrFloat("spatial_scale", 1.0f);
  const int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t numRois = rois.dim(0);
  Tensor& y = ctx.allocateOutput(0, x.type(), {numRois, channels, pooled[0], pooled[1]});
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xd = x.data<T>();
    T* out = y.data<T>();
    for (int64_t r = 0; r < numRois; ++r) {
      RoiBox box;
      // valueAsInt64 truncates as the cast did, and saturates where casting 1e30 or NaN was UB.
      box.batch = rois.valueAsInt64(r * 5);
      if (box.batch < 0 || box.batch >= x.dim(0)) return ctx.error("roi batch index out of range");
      box.startW = roiCell(rois.valueAsDouble(r * 5 + 1) * scale);
      box.startH = roiCell(rois.valueAsDouble(r * 5 + 2) * scale);
      const int64_t endW = roiCell(rois.valueAsDouble(r * 5 + 3) * scale);
      const int64_t endH = roiCell(rois.valueAsDouble(r * 5 + 4) * scale);
      box.binH = static_cast<double>(std::max<int64_t>(endH - box.startH + 1, 1)) / pooled[0];
      box.binW = static_cast<double>(std::max<int64_t>(endW - box.startW + 1, 1)) / pooled[1];
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = xd + (box.batch * channels + c) * height * width;
        for (int64_t ph = 0; ph < pooled[0]; ++ph) {
          const int64_t h0 = std::clamp<int64_t>(
              static_cast<int64_t>(std::floor(ph * box.binH)) + box.startH, 0, height);
          const int64_t h1 = std::clamp<int64_t>(
              static_cast<int64_t>(std::ceil((ph + 1) * box.binH)) + box.startH, 0, height);
          for (int64_t pw = 0; pw < pooled[1]; ++pw) {
            const int64_t w0 = std::clamp<int64_t>(
                static_cast<int64_t>(std::floor(pw * box.binW)) + box.startW, 0, width);
            const int64_t w1 = std::clamp<int64_t>(
                static_cast<int64_t>(std::ceil((pw + 1) * box.binW)) + box.startW, 0, width);
            C best = h1 > h0 && w1 > w0 ? std::numeric_limits<C>::lowest() : C(0);
            for (int64_t h = h0; h < h1; ++h) {
              for (int64_t w = w0; w < w1; ++w)
                best = std::max(best, static_cast<C>(plane[h * width + w]));
            }
            out[((r * channels + c) * pooled[0] + ph) * pooled[1] + pw] = static_cast<T>(best);
          }
        }
      }
    }
    return Status::ok();
  });
  return status.code() == StatusCode::kUnsupported ? ctx.unsupported(status.message()) : status;
}

}  // namespace kiln::cpu
