// Conv without im2col. Per image and group, the input channels are copied once
// into a zero-bordered buffer, so that every window read lies inside it; a
// register tile of output channels x kTileW output columns then sums, over
// each input channel and kernel offset, one weight per output channel times a
// row segment of the padded input. Weights are packed per tile so the loop
// reads them contiguously. The copy is O(input), against im2col's O(input x
// kernel), and nothing but the tile is written inside the loop.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/tactics/alternative_kernels.h"
#include "backends/cpu/tactics/tactic_common.h"
#include "backends/cpu/tactics/target_clones.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kTileM = 8;   // output channels per tile (4 or 1 when a group has fewer)
constexpr int64_t kTileW = 16;  // output columns per tile

// One image and group's input channels, zero-padded: [channels, rows, cols],
// the rows and columns every window of the output (rounded up to whole tiles)
// reads.
struct PaddedInput {
  std::vector<float> data;
  int64_t rows = 0, cols = 0;
};

void padInput(const float* x, int64_t channels, const Plane& p, int64_t tiledOutW,
              PaddedInput* out) {
  out->rows = (p.outH - 1) * p.strideH + (p.kH - 1) * p.dilH + 1;
  out->cols = (tiledOutW - 1) * p.strideW + (p.kW - 1) * p.dilW + 1;
  out->data.assign(static_cast<size_t>(channels * out->rows * out->cols), 0.0f);
  // Padded column q holds input column q - padW.
  const int64_t qBegin = p.padW, qEnd = std::min(out->cols, p.padW + p.inW);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t r = 0; r < out->rows; ++r) {
      const int64_t ih = r - p.padH;
      if (ih < 0 || ih >= p.inH || qEnd <= qBegin) continue;
      const float* src = x + (c * p.inH + ih) * p.inW;
      std::copy(src, src + (qEnd - qBegin),
                out->data.data() + (c * out->rows + r) * out->cols + qBegin);
    }
  }
}

// Packs W [mg, cg, kH, kW] of one group into tiles of `rows` output channels:
// tile t holds, per (c, ki, kj), `rows` consecutive weights (zero past mg).
void packWeights(const float* w, int64_t mg, int64_t taps, int64_t rows, float* dst) {
  for (int64_t m0 = 0; m0 < mg; m0 += rows, dst += taps * rows) {
    for (int64_t t = 0; t < taps; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        dst[t * rows + r] = m0 + r < mg ? w[(m0 + r) * taps + t] : 0.0f;
      }
    }
  }
}

// tile [kRows x kTileW] = sum over channels and kernel offsets of the packed
// weights times the padded input segment; `in` points at the tile's first
// window. Fixed trip counts keep the accumulators in vector registers.
template <int64_t kRows, bool kUnitStride>
KILN_TACTIC_CLONES void convTile(const float* in, const float* w, const Plane& p, int64_t channels,
                                 int64_t rows, int64_t cols, float* tile) {
  float acc[kRows][kTileW] = {};
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ki = 0; ki < p.kH; ++ki) {
      const float* row = in + (c * rows + ki * p.dilH) * cols;
      for (int64_t kj = 0; kj < p.kW; ++kj, w += kRows) {
        const float* src = row + kj * p.dilW;
        float xv[kTileW];
        for (int64_t j = 0; j < kTileW; ++j) xv[j] = src[kUnitStride ? j : j * p.strideW];
        for (int64_t j = 0; j < kTileW; ++j) {
          for (int64_t r = 0; r < kRows; ++r) acc[r][j] += w[r] * xv[j];
        }
      }
    }
  }
  std::memcpy(tile, acc, sizeof(acc));
}

template <int64_t kRows>
void convolveGroup(const PaddedInput& in, const float* wPack, const float* bias, const Plane& p,
                   int64_t cg, int64_t mg, float* y) {
  const int64_t taps = cg * p.kH * p.kW;
  const auto tileFn = p.strideW == 1 ? &convTile<kRows, true> : &convTile<kRows, false>;
  float tile[kRows * kTileW];
  for (int64_t oh = 0; oh < p.outH; ++oh) {
    for (int64_t ow0 = 0; ow0 < p.outW; ow0 += kTileW) {
      const float* window = in.data.data() + oh * p.strideH * in.cols + ow0 * p.strideW;
      const int64_t width = std::min(kTileW, p.outW - ow0);
      // Output channels innermost: the input segments stay in L1 across tiles.
      for (int64_t m0 = 0; m0 < mg; m0 += kRows) {
        tileFn(window, wPack + m0 * taps, p, cg, in.rows, in.cols, tile);
        for (int64_t r = 0; r < std::min(kRows, mg - m0); ++r) {
          float* dst = y + ((m0 + r) * p.outH + oh) * p.outW + ow0;
          const float b = bias ? bias[m0 + r] : 0.0f;
          for (int64_t j = 0; j < width; ++j) dst[j] = tile[r * kTileW + j] + b;
        }
      }
    }
  }
}

void convolveDirect(const ConvProblem& problem, const float* x, const float* w, const float* bias,
                    float* y) {
  const Plane p = planeOf(problem.geometry);
  const int64_t cg = problem.inChannels / problem.group;
  const int64_t mg = problem.outChannels / problem.group;
  const int64_t taps = cg * p.kH * p.kW;
  const int64_t rows = mg >= kTileM ? kTileM : mg >= 4 ? 4 : 1;
  const int64_t groupPack = (mg + rows - 1) / rows * rows * taps;
  std::vector<float> wPack(static_cast<size_t>(problem.group * groupPack));
  for (int64_t g = 0; g < problem.group; ++g) {
    packWeights(w + g * mg * taps, mg, taps, rows, wPack.data() + g * groupPack);
  }
  const int64_t tiledOutW = (p.outW + kTileW - 1) / kTileW * kTileW;
  const int64_t inPlane = p.inH * p.inW, outPlane = p.outH * p.outW;
  PaddedInput in;
  for (int64_t n = 0; n < problem.batch; ++n) {
    for (int64_t g = 0; g < problem.group; ++g) {
      padInput(x + (n * problem.inChannels + g * cg) * inPlane, cg, p, tiledOutW, &in);
      float* yg = y + (n * problem.outChannels + g * mg) * outPlane;
      const float* bg = bias ? bias + g * mg : nullptr;
      const float* wg = wPack.data() + g * groupPack;
      if (rows == kTileM) {
        convolveGroup<kTileM>(in, wg, bg, p, cg, mg, yg);
      } else if (rows == 4) {
        convolveGroup<4>(in, wg, bg, p, cg, mg, yg);
      } else {
        convolveGroup<1>(in, wg, bg, p, cg, mg, yg);
      }
    }
  }
}

}  // namespace

Status convDirectKernel(KernelContext& ctx) {
  ConvProblem problem;
  KILN_RETURN_IF_ERROR(prepareConvNode(ctx, &problem));
  if (problem.geometry.rank() > 2) {
    return ctx.unsupported("direct convolution handles 1-D and 2-D only, not " +
                           std::to_string(problem.geometry.rank()) + "-D");
  }
  return runFloatConvolution(ctx, problem, &convolveDirect);
}

}  // namespace kiln::cpu
