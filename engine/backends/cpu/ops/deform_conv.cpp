// DeformConv (opset 19, 22 adds bfloat16): a 2-D convolution whose kernel taps sample the
// input at learned fractional offsets, optionally scaled by a mask (deformable conv v2).
//
// offset is [N, offset_group * kH * kW * 2, oH, oW] with (dh, dw) pairs per tap, mask is
// [N, offset_group * kH * kW, oH, oW]; input channels split evenly over offset groups.
// Taps sample bilinearly in pixel coordinates, reading zero outside the image. The
// sampled, masked taps form an im2col matrix per convolution group, multiplied by W with
// BLAS.
#include <cblas.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/conv.h"

namespace kiln::cpu {
namespace {

struct DeformLayout {
  ConvProblem conv;
  int64_t offsetGroups = 1;
  bool hasMask = false;
};

Status checkDeformInputs(const KernelContext& ctx, DeformLayout* d) {
  const Tensor& x = ctx.input(0);
  const Tensor& offset = ctx.input(2);
  KILN_RETURN_IF_ERROR(prepareConvProblem(ctx, x, ctx.input(1), &d->conv));
  const SpatialGeometry& g = d->conv.geometry;
  if (g.rank() != 2) return ctx.unsupported("DeformConv is implemented for 2-D inputs only");
  d->offsetGroups = ctx.node().attrInt("offset_group", 1);
  if (d->offsetGroups < 1 || d->conv.inChannels % d->offsetGroups != 0) {
    return ctx.error("offset_group " + std::to_string(d->offsetGroups) +
                     " does not divide the input channels");
  }
  const int64_t taps = g.kernelSize();
  // Checked: with no input channels any offset_group divides them, and the product
  // overflowed int64 for a huge one.
  int64_t offsetChannels = 0;
  if (__builtin_mul_overflow(d->offsetGroups, taps * 2, &offsetChannels))
    return ctx.error("offset_group " + std::to_string(d->offsetGroups) +
                     " times the kernel taps overflows");
  const Shape expected = {d->conv.batch, offsetChannels, g.output[0], g.output[1]};
  if (offset.shape() != expected) {
    return ctx.error("offset shape " + shapeToString(offset.shape()) + " must be " +
                     shapeToString(expected));
  }
  if (const Tensor* b = ctx.inputOrNull(3);
      b && (b->rank() != 1 || b->dim(0) != d->conv.outChannels)) {
    return ctx.error("B must be 1-D of the output channel count");
  }
  if (const Tensor* m = ctx.inputOrNull(4)) {
    const Shape maskShape = {d->conv.batch, offsetChannels / 2, g.output[0], g.output[1]};
    if (m->shape() != maskShape) {
      return ctx.error("mask shape " + shapeToString(m->shape()) + " must be " +
                       shapeToString(maskShape));
    }
    d->hasMask = true;
  }
  for (int i = 1; i < 5; ++i) {
    if (ctx.hasInput(i) && ctx.input(i).type() != x.type()) {
      return ctx.error("inputs must all have X's data type");
    }
  }
  return Status::ok();
}

template <class Real>
std::vector<Real> readAs(const Tensor& t) {
  std::vector<Real> out(static_cast<size_t>(t.numel()));
  if (t.type() == DataType::kFloat32) {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<Real>(t.data<float>()[i]);
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<Real>(t.valueAsDouble(i));
  }
  return out;
}

// Bilinear sample of an H x W plane at (y, x); taps outside the plane read zero.
template <class Real>
Real bilinear(const Real* plane, int64_t height, int64_t width, Real y, Real x) {
  if (!(y > -1 && y < height && x > -1 && x < width)) return 0;  // also rejects NaN
  const int64_t y0 = static_cast<int64_t>(std::floor(y));
  const int64_t x0 = static_cast<int64_t>(std::floor(x));
  const Real ly = y - static_cast<Real>(y0), lx = x - static_cast<Real>(x0);
  auto at = [&](int64_t r, int64_t c) -> Real {
    return r >= 0 && r < height && c >= 0 && c < width ? plane[r * width + c] : Real(0);
  };
  return (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) +
         ly * ((1 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
}

void gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, a, int(k), b,
              int(n), 1.0f, c, int(n));
}
void gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0, a, int(k), b,
              int(n), 1.0, c, int(n));
}

// Fills cols [inChannels * taps, oH * oW] for batch n: the masked samples of each tap.
template <class Real>
void deformIm2Col(const DeformLayout& d, int64_t n, const Real* x, const Real* offset,
                  const Real* mask, Real* cols) {
  const SpatialGeometry& g = d.conv.geometry;
  const int64_t inH = g.input[0], inW = g.input[1], outH = g.output[0], outW = g.output[1];
  const int64_t kH = g.kernel[0], kW = g.kernel[1], taps = kH * kW, outSize = outH * outW;
  const int64_t channelsPerOffsetGroup = d.conv.inChannels / d.offsetGroups;
  for (int64_t og = 0; og < d.offsetGroups; ++og) {
    for (int64_t tap = 0; tap < taps; ++tap) {
      const int64_t ki = tap / kW, kj = tap % kW;
      const Real* offH = offset + ((n * d.offsetGroups + og) * taps + tap) * 2 * outSize;
      const Real* offW = offH + outSize;
      const Real* m =
          d.hasMask ? mask + ((n * d.offsetGroups + og) * taps + tap) * outSize : nullptr;
      for (int64_t o = 0; o < outSize; ++o) {
        const int64_t oy = o / outW, ox = o % outW;
        const Real y =
            static_cast<Real>(oy * g.strides[0] - g.padsBegin[0] + ki * g.dilations[0]) + offH[o];
        const Real xPos =
            static_cast<Real>(ox * g.strides[1] - g.padsBegin[1] + kj * g.dilations[1]) + offW[o];
        const Real scale = m ? m[o] : Real(1);
        for (int64_t c = og * channelsPerOffsetGroup; c < (og + 1) * channelsPerOffsetGroup; ++c) {
          const Real* plane = x + (n * d.conv.inChannels + c) * inH * inW;
          cols[(c * taps + tap) * outSize + o] = scale * bilinear(plane, inH, inW, y, xPos);
        }
      }
    }
  }
}

template <class Real>
void deformConvolve(KernelContext& ctx, const DeformLayout& d, Real* y) {
  const std::vector<Real> x = readAs<Real>(ctx.input(0)), w = readAs<Real>(ctx.input(1));
  const std::vector<Real> offset = readAs<Real>(ctx.input(2));
  const std::vector<Real> mask = d.hasMask ? readAs<Real>(ctx.input(4)) : std::vector<Real>();
  const std::vector<Real> bias = ctx.hasInput(3) ? readAs<Real>(ctx.input(3)) : std::vector<Real>();
  const SpatialGeometry& g = d.conv.geometry;
  const int64_t taps = g.kernelSize(), outSize = g.outputSize();
  const int64_t inPerGroup = d.conv.inChannels / d.conv.group;
  const int64_t outPerGroup = d.conv.outChannels / d.conv.group;
  std::vector<Real> cols(static_cast<size_t>(d.conv.inChannels * taps * outSize));
  for (int64_t n = 0; n < d.conv.batch; ++n) {
    deformIm2Col(d, n, x.data(), offset.data(), mask.data(), cols.data());
    Real* yn = y + n * d.conv.outChannels * outSize;
    for (int64_t oc = 0; oc < d.conv.outChannels; ++oc) {
      std::fill(yn + oc * outSize, yn + (oc + 1) * outSize, bias.empty() ? Real(0) : bias[oc]);
    }
    for (int64_t grp = 0; grp < d.conv.group && inPerGroup * taps > 0; ++grp) {
      gemm(outPerGroup, outSize, inPerGroup * taps,
           w.data() + grp * outPerGroup * inPerGroup * taps,
           cols.data() + grp * inPerGroup * taps * outSize, yn + grp * outPerGroup * outSize);
    }
  }
}

Status deformConvKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const DataType type = ctx.input(0).type();
  if (type != DataType::kFloat32 && type != DataType::kFloat64 && type != DataType::kFloat16 &&
      type != DataType::kBFloat16) {
    return ctx.unsupported(std::string("input X of type ") + dataTypeName(type));
  }
  DeformLayout d;
  KILN_RETURN_IF_ERROR(checkDeformInputs(ctx, &d));
  const Shape outShape = spatialOutputShape(d.conv.batch, d.conv.outChannels, d.conv.geometry);
  Tensor& out = ctx.allocateOutput(0, type, outShape);
  if (out.numel() == 0) return Status::ok();
  if (type == DataType::kFloat64) {
    deformConvolve(ctx, d, out.data<double>());
    return Status::ok();
  }
  if (type == DataType::kFloat32) {
    deformConvolve(ctx, d, out.data<float>());
    return Status::ok();
  }
  std::vector<float> y(static_cast<size_t>(out.numel()));
  deformConvolve(ctx, d, y.data());
  return dispatchFloatTypes(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < out.numel(); ++i) out.data<T>()[i] = static_cast<T>(y[i]);
    return Status::ok();
  });
}

}  // namespace

void registerDeformConvKernels(KernelRegistry& registry) {
  registry.add("DeformConv", 19, 1000, &deformConvKernel);
}

}  // namespace kiln::cpu
