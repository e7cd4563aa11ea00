// ConvTranspose: the gradient of Conv with respect to its input. Per (image,
// group) one GEMM forms col [M/g * K, in] = W_g^T x X_g, and col2im scatters
// each column into the output window it came from.
//
// Output extent: stride * (in - 1) + output_padding + window - pads, unless
// output_shape is given (pads then follow from it) or auto_pad is SAME_* (the
// output is in * stride). SAME_UPPER puts the odd pad at the end, as the ONNX
// reference does.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/ops/conv.h"
#include "backends/cpu/ops/nn_common.h"

namespace kiln::cpu {
namespace {

int64_t floorDiv2(int64_t v) {
  return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

// Reads output_shape, accepting the spatial dims alone or the full [N, C, ...] shape.
Status readOutputShape(const KernelContext& ctx, int rank, std::vector<int64_t>* out) {
  std::vector<int64_t> shape = ctx.node().attrInts("output_shape");
  if (static_cast<int>(shape.size()) == rank + 2) shape.erase(shape.begin(), shape.begin() + 2);
  if (static_cast<int>(shape.size()) != rank) {
    return ctx.error("attribute 'output_shape' must have " + std::to_string(rank) + " entries");
  }
  *out = shape;
  return Status::ok();
}

Status computeTransposeGeometry(const KernelContext& ctx, SpatialGeometry* g) {
  AutoPad autoPad;
  KILN_RETURN_IF_ERROR(readAutoPad(ctx, &autoPad));
  const int rank = g->rank();
  std::vector<int64_t> outputPadding = ctx.node().attrInts("output_padding");
  if (outputPadding.empty()) outputPadding.assign(rank, 0);
  if (static_cast<int>(outputPadding.size()) != rank) {
    return ctx.error("attribute 'output_padding' must have " + std::to_string(rank) + " entries");
  }
  const bool hasOutputShape = ctx.node().hasAttr("output_shape");
  std::vector<int64_t> requested;
  if (hasOutputShape) KILN_RETURN_IF_ERROR(readOutputShape(ctx, rank, &requested));
  const bool same = autoPad == AutoPad::kSameUpper || autoPad == AutoPad::kSameLower;
  g->output.assign(rank, 0);
  // Strides, pads, dilations, kernel and output sizes come from the model: every sum
  // and product is checked, and an overflow is an error instead of undefined behaviour.
  bool overflow = false;
  auto add = [&](int64_t a, int64_t b) {
    int64_t r = 0;
    overflow |= __builtin_add_overflow(a, b, &r);
    return r;
  };
  auto mul = [&](int64_t a, int64_t b) {
    int64_t r = 0;
    overflow |= __builtin_mul_overflow(a, b, &r);
    return r;
  };
  for (int d = 0; d < rank; ++d) {
    const int64_t window = add(mul(add(g->kernel[d], -1), g->dilations[d]), 1);
    const int64_t full =
        add(add(mul(g->strides[d], add(g->input[d], -1)), outputPadding[d]), window);
    if (autoPad == AutoPad::kValid) g->padsBegin[d] = g->padsEnd[d] = 0;
    if (hasOutputShape || same) {
      const int64_t out = hasOutputShape ? requested[d] : mul(g->input[d], g->strides[d]);
      const int64_t total = add(full, -out);
      if (same) {
        g->padsBegin[d] =
            autoPad == AutoPad::kSameUpper ? floorDiv2(total) : total - floorDiv2(total);
      } else if (!ctx.node().hasAttr("pads")) {
        g->padsBegin[d] = 0;  // extra output rows go at the end
      }
      g->padsEnd[d] = add(total, -g->padsBegin[d]);
      g->output[d] = out;
    } else {
      g->output[d] = add(add(full, -g->padsBegin[d]), -g->padsEnd[d]);
    }
    if (overflow) return ctx.error("ConvTranspose output extent overflows int64");
    if (g->output[d] < 0) return ctx.error("ConvTranspose output extent is negative");
  }
  return Status::ok();
}

// Adds col [channels * K, inSize] into y [channels, outSize] (2-D and 1-D planes).
template <class C>
void col2im2d(const C* col, int64_t channels, const SpatialGeometry& g, C* y) {
  const bool oneD = g.rank() == 1;
  const int64_t inH = oneD ? 1 : g.input[0], inW = g.input[oneD ? 0 : 1];
  const int64_t outH = oneD ? 1 : g.output[0], outW = g.output[oneD ? 0 : 1];
  const int64_t kH = oneD ? 1 : g.kernel[0], kW = g.kernel[oneD ? 0 : 1];
  const int64_t sH = oneD ? 1 : g.strides[0], sW = g.strides[oneD ? 0 : 1];
  const int64_t dH = oneD ? 1 : g.dilations[0], dW = g.dilations[oneD ? 0 : 1];
  const int64_t pH = oneD ? 0 : g.padsBegin[0], pW = g.padsBegin[oneD ? 0 : 1];
  for (int64_t c = 0; c < channels; ++c) {
    C* plane = y + c * outH * outW;
    for (int64_t ki = 0; ki < kH; ++ki) {
      for (int64_t kj = 0; kj < kW; ++kj) {
        const C* src = col + ((c * kH + ki) * kW + kj) * inH * inW;
        const int64_t colOffset = kj * dW - pW;
        int64_t lo, hi;
        validRange(colOffset, sW, outW, inW, &lo, &hi);
        for (int64_t ih = 0; ih < inH; ++ih) {
          const int64_t oh = ih * sH - pH + ki * dH;
          if (oh < 0 || oh >= outH) continue;
          C* dst = plane + oh * outW;
          const C* row = src + ih * inW;
          for (int64_t iw = lo; iw < hi; ++iw) dst[iw * sW + colOffset] += row[iw];
        }
      }
    }
  }
}

// Generic N-D scatter for 3-D and beyond.
template <class C>
void col2imNd(const C* col, int64_t channels, const SpatialGeometry& g, C* y) {
  const int rank = g.rank();
  const int64_t kernelSize = g.kernelSize(), inSize = g.inputSize(), outSize = g.outputSize();
  const std::vector<int64_t> outStrides = contiguousStrides(g.output);
  std::vector<int64_t> kIndex(rank), iIndex(rank);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t k = 0; k < kernelSize; ++k) {
      for (int64_t rest = k, d = rank - 1; d >= 0; --d) {
        kIndex[d] = rest % g.kernel[d];
        rest /= g.kernel[d];
      }
      const C* src = col + (c * kernelSize + k) * inSize;
      std::fill(iIndex.begin(), iIndex.end(), 0);
      for (int64_t i = 0; i < inSize; ++i) {
        int64_t offset = 0;
        bool inside = true;
        for (int d = 0; d < rank && inside; ++d) {
          const int64_t o = iIndex[d] * g.strides[d] - g.padsBegin[d] + kIndex[d] * g.dilations[d];
          inside = o >= 0 && o < g.output[d];
          offset += o * outStrides[d];
        }
        if (inside) y[c * outSize + offset] += src[i];
        for (int d = rank - 1; d >= 0; --d) {
          if (++iIndex[d] < g.input[d]) break;
          iIndex[d] = 0;
        }
      }
    }
  }
}

template <class C>
void convolveTranspose(const ConvProblem& p, const C* x, const C* w, const C* bias, C* y) {
  const SpatialGeometry& g = p.geometry;
  const int64_t cg = p.inChannels / p.group, mg = p.outChannels / p.group;
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  const int64_t rows = mg * g.kernelSize();
  std::vector<C> col(static_cast<size_t>(rows * inSize));
  for (int64_t n = 0; n < p.batch; ++n) {
    C* yn = y + n * p.outChannels * outSize;
    for (int64_t m = 0; m < p.outChannels; ++m) {
      std::fill(yn + m * outSize, yn + (m + 1) * outSize, bias ? bias[m] : C(0));
    }
    for (int64_t grp = 0; grp < p.group; ++grp) {
      const C* xg = x + (n * p.inChannels + grp * cg) * inSize;
      gemm(true, false, rows, inSize, cg, C(1), w + grp * cg * rows, rows, xg, inSize, C(0),
           col.data(), inSize);
      C* yg = yn + grp * mg * outSize;
      if (g.rank() <= 2) {
        col2im2d(col.data(), mg, g, yg);
      } else {
        col2imNd(col.data(), mg, g, yg);
      }
    }
  }
}

}  // namespace

Status convTransposeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.rank() < 3 || w.rank() != x.rank() || w.type() != x.type()) {
    return ctx.error("X " + shapeToString(x.shape()) + " and W " + shapeToString(w.shape()) +
                     " must have one type and one rank >= 3");
  }
  ConvProblem p;
  p.batch = x.dim(0);
  p.inChannels = x.dim(1);
  p.group = ctx.node().attrInt("group", 1);
  if (p.group < 1 || w.dim(0) != p.inChannels || p.inChannels % p.group != 0) {
    return ctx.error("W " + shapeToString(w.shape()) + " does not match X channels " +
                     std::to_string(p.inChannels) + " with group " + std::to_string(p.group));
  }
  // Checked: with no input channels any group divides them (INT64_MAX overflowed this).
  if (__builtin_mul_overflow(w.dim(1), p.group, &p.outChannels))
    return ctx.error("attribute 'group' " + std::to_string(p.group) +
                     " times W's output channels overflows");
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  KILN_RETURN_IF_ERROR(readSpatialAttributes(ctx, x.shape(), kernel, &p.geometry));
  if (p.geometry.kernel != kernel) return ctx.error("attribute 'kernel_shape' does not match W");
  KILN_RETURN_IF_ERROR(computeTransposeGeometry(ctx, &p.geometry));
  if (const Tensor* b = ctx.inputOrNull(2)) {
    if (b->type() != x.type() || b->rank() != 1 || b->dim(0) != p.outChannels) {
      return ctx.error("input B must be 1-D of size " + std::to_string(p.outChannels));
    }
  }
  Tensor& out =
      ctx.allocateOutput(0, x.type(), spatialOutputShape(p.batch, p.outChannels, p.geometry));
  if (out.numel() == 0) return Status::ok();
  Status status = dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return runTypedConvolution<T>(
        ctx, p, out,
        [](const ConvProblem& q, const auto* x, const auto* w, const auto* bias, auto* y) {
          convolveTranspose(q, x, w, bias, y);
        });
  });
  return status.isOk() ? status : ctx.unsupported(status.message());
}

}  // namespace kiln::cpu
