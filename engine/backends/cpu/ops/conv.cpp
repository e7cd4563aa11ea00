// Conv (1-D/2-D/3-D, groups, dilations, strides, pads, auto_pad) and the
// convolution core the quantized convolutions share.
//
// Each (image, group) is one GEMM: W_g [M/g, C/g * K] x col [C/g * K, out],
// where col is the im2col unfolding of the group's input channels. A 1x1,
// stride-1, unpadded convolution reads the input itself as col, and depthwise
// 2-D convolutions (one input and one output channel per group) skip GEMM for a
// direct loop, since a GEMM with one output row would waste the unfolding.
#include "backends/cpu/ops/conv.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/ops/nn_common.h"

namespace kiln::cpu {
namespace {

// Unfolds `channels` planes of x into col [channels * kH * kW, outH * outW].
template <class C>
void im2col2d(const C* x, int64_t channels, const Plane& p, C* col) {
  const int64_t outSize = p.outH * p.outW;
  for (int64_t c = 0; c < channels; ++c) {
    const C* plane = x + c * p.inH * p.inW;
    for (int64_t ki = 0; ki < p.kH; ++ki) {
      for (int64_t kj = 0; kj < p.kW; ++kj) {
        C* dst = col + ((c * p.kH + ki) * p.kW + kj) * outSize;
        const int64_t colOffset = kj * p.dilW - p.padW;
        int64_t lo, hi;
        validRange(colOffset, p.strideW, p.inW, p.outW, &lo, &hi);
        for (int64_t oh = 0; oh < p.outH; ++oh, dst += p.outW) {
          const int64_t ih = oh * p.strideH - p.padH + ki * p.dilH;
          if (ih < 0 || ih >= p.inH) {
            std::fill(dst, dst + p.outW, C(0));
            continue;
          }
          const C* src = plane + ih * p.inW;
          std::fill(dst, dst + lo, C(0));
          if (p.strideW == 1 && hi > lo) {
            std::memcpy(dst + lo, src + lo + colOffset, static_cast<size_t>(hi - lo) * sizeof(C));
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * p.strideW + colOffset];
          }
          std::fill(dst + hi, dst + p.outW, C(0));
        }
      }
    }
  }
}

// Generic N-D unfolding (3-D and beyond): one row per (channel, kernel offset).
template <class C>
void im2colNd(const C* x, int64_t channels, const SpatialGeometry& g, C* col) {
  const int rank = g.rank();
  const int64_t kernelSize = g.kernelSize();
  const int64_t outSize = g.outputSize();
  const int64_t inSize = g.inputSize();
  const std::vector<int64_t> inStrides = contiguousStrides(g.input);
  std::vector<int64_t> kIndex(rank), oIndex(rank);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t k = 0; k < kernelSize; ++k) {
      for (int64_t rest = k, d = rank - 1; d >= 0; --d) {
        kIndex[d] = rest % g.kernel[d];
        rest /= g.kernel[d];
      }
      C* dst = col + (c * kernelSize + k) * outSize;
      std::fill(oIndex.begin(), oIndex.end(), 0);
      for (int64_t o = 0; o < outSize; ++o) {
        int64_t offset = 0;
        bool inside = true;
        for (int d = 0; d < rank && inside; ++d) {
          const int64_t i = oIndex[d] * g.strides[d] - g.padsBegin[d] + kIndex[d] * g.dilations[d];
          inside = i >= 0 && i < g.input[d];
          offset += i * inStrides[d];
        }
        dst[o] = inside ? x[c * inSize + offset] : C(0);
        for (int d = rank - 1; d >= 0; --d) {
          if (++oIndex[d] < g.output[d]) break;
          oIndex[d] = 0;
        }
      }
    }
  }
}

// Depthwise 2-D: y plane = bias + sum over the window of w * x.
template <class C>
void depthwisePlane(const C* x, const C* w, C bias, const Plane& p, C* y) {
  std::fill(y, y + p.outH * p.outW, bias);
  for (int64_t oh = 0; oh < p.outH; ++oh) {
    C* dst = y + oh * p.outW;
    for (int64_t ki = 0; ki < p.kH; ++ki) {
      const int64_t ih = oh * p.strideH - p.padH + ki * p.dilH;
      if (ih < 0 || ih >= p.inH) continue;
      for (int64_t kj = 0; kj < p.kW; ++kj) {
        const C weight = w[ki * p.kW + kj];
        const int64_t colOffset = kj * p.dilW - p.padW;
        int64_t lo, hi;
        validRange(colOffset, p.strideW, p.inW, p.outW, &lo, &hi);
        const C* src = x + ih * p.inW;
        if (p.strideW == 1) {
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += weight * src[ow + colOffset];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += weight * src[ow * p.strideW + colOffset];
        }
      }
    }
  }
}

template <class C>
void convolve(const ConvProblem& p, const C* x, const C* w, const C* bias, C* y) {
  const SpatialGeometry& g = p.geometry;
  const int64_t cg = p.inChannels / p.group;
  const int64_t mg = p.outChannels / p.group;
  const int64_t inSize = g.inputSize();
  const int64_t outSize = g.outputSize();
  const int64_t rows = cg * g.kernelSize();
  const bool planar = g.rank() <= 2;
  if (planar && cg == 1 && mg == 1 && p.group > 1) {
    const Plane plane = planeOf(g);
    for (int64_t n = 0; n < p.batch; ++n) {
      for (int64_t c = 0; c < p.inChannels; ++c) {
        depthwisePlane(x + (n * p.inChannels + c) * inSize, w + c * g.kernelSize(),
                       bias ? bias[c] : C(0), plane, y + (n * p.outChannels + c) * outSize);
      }
    }
    return;
  }
  const bool pointwise = isPointwise(g);
  std::vector<C> col(pointwise ? 0 : static_cast<size_t>(rows * outSize));
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t grp = 0; grp < p.group; ++grp) {
      const C* xg = x + (n * p.inChannels + grp * cg) * inSize;
      C* yg = y + (n * p.outChannels + grp * mg) * outSize;
      const C* source = xg;
      if (!pointwise) {
        if (planar) {
          im2col2d(xg, cg, planeOf(g), col.data());
        } else {
          im2colNd(xg, cg, g, col.data());
        }
        source = col.data();
      }
      C beta = 0;
      if (bias) {
        for (int64_t m = 0; m < mg; ++m)
          std::fill(yg + m * outSize, yg + (m + 1) * outSize, bias[grp * mg + m]);
        beta = 1;
      }
      gemm(false, false, mg, outSize, rows, C(1), w + grp * mg * rows, rows, source, outSize, beta,
           yg, outSize);
    }
  }
}

Status convKernel(KernelContext& ctx) {
  ConvProblem problem;
  KILN_RETURN_IF_ERROR(prepareConvNode(ctx, &problem));
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.allocateOutput(
      0, x.type(), spatialOutputShape(problem.batch, problem.outChannels, problem.geometry));
  if (out.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return runTypedConvolution<T>(
        ctx, problem, out,
        [](const ConvProblem& q, const auto* x, const auto* w, const auto* bias, auto* y) {
          runConvolution(q, x, w, bias, y);
        });
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace

Status prepareConvProblem(const KernelContext& ctx, const Tensor& x, const Tensor& w,
                          ConvProblem* p) {
  if (x.rank() < 3)
    return ctx.error("input X must have rank >= 3, got " + shapeToString(x.shape()));
  if (w.rank() != x.rank()) {
    return ctx.error("input W " + shapeToString(w.shape()) + " must have the rank of X " +
                     shapeToString(x.shape()));
  }
  p->batch = x.dim(0);
  p->inChannels = x.dim(1);
  p->outChannels = w.dim(0);
  p->group = ctx.node().attrInt("group", 1);
  // Divided, not multiplied: with no channels any group divides them, and a group of
  // INT64_MAX overflowed `w.dim(1) * group`.
  if (p->group < 1 || p->inChannels % p->group != 0 || p->outChannels % p->group != 0 ||
      p->inChannels / p->group != w.dim(1)) {
    return ctx.error("channels do not match: X has " + std::to_string(p->inChannels) + ", W is " +
                     shapeToString(w.shape()) + ", group " + std::to_string(p->group));
  }
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  KILN_RETURN_IF_ERROR(readSpatialAttributes(ctx, x.shape(), kernel, &p->geometry));
  if (p->geometry.kernel != kernel) return ctx.error("attribute 'kernel_shape' does not match W");
  return computeForwardGeometry(ctx, false, &p->geometry);
}

Status prepareConvNode(const KernelContext& ctx, ConvProblem* problem) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (w.type() != x.type()) return ctx.error("input W must have the type of X");
  KILN_RETURN_IF_ERROR(prepareConvProblem(ctx, x, w, problem));
  if (const Tensor* b = ctx.inputOrNull(2)) {
    if (b->type() != x.type() || b->rank() != 1 || b->dim(0) != problem->outChannels) {
      return ctx.error("input B must be 1-D of size M = " + std::to_string(problem->outChannels) +
                       " with the type of X, got " + shapeToString(b->shape()));
    }
  }
  return Status::ok();
}

Plane planeOf(const SpatialGeometry& g) {
  if (g.rank() == 1) {
    return {1, g.input[0],   1, g.output[0],    1, g.kernel[0],
            1, g.strides[0], 1, g.dilations[0], 0, g.padsBegin[0]};
  }
  return {g.input[0],     g.input[1],     g.output[0],    g.output[1],
          g.kernel[0],    g.kernel[1],    g.strides[0],   g.strides[1],
          g.dilations[0], g.dilations[1], g.padsBegin[0], g.padsBegin[1]};
}

bool isPointwise(const SpatialGeometry& g) {
  for (int d = 0; d < g.rank(); ++d) {
    if (g.kernel[d] != 1 || g.strides[d] != 1 || g.padsBegin[d] != 0 || g.padsEnd[d] != 0) {
      return false;
    }
  }
  return true;
}

void im2col(const float* x, int64_t channels, const SpatialGeometry& g, float* col) {
  if (g.rank() <= 2) {
    im2col2d(x, channels, planeOf(g), col);
  } else {
    im2colNd(x, channels, g, col);
  }
}

void runConvolution(const ConvProblem& p, const float* x, const float* w, const float* bias,
                    float* y) {
  convolve(p, x, w, bias, y);
}

void runConvolution(const ConvProblem& p, const double* x, const double* w, const double* bias,
                    double* y) {
  convolve(p, x, w, bias, y);
}

void registerConvKernels(KernelRegistry& registry) {
  registry.add("Conv", 1, 1000, &convKernel);
  registry.add("ConvTranspose", 1, 1000, &convTransposeKernel);
  registry.add("ConvInteger", 10, 1000, &convIntegerKernel);
  registry.add("QLinearConv", 10, 1000, &qlinearConvKernel);
}

}  // namespace kiln::cpu
