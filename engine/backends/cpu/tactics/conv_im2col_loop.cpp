// Conv as the reference computes it (per image and group, W_g [M/g, C/g * K] x
// col [C/g * K, out], col the im2col unfolding; pointwise convolutions read the
// input as col), with Kiln's loop GEMM in place of BLAS. Depthwise groups
// become one-row products, which the loop GEMM runs as matrix-vector loops.
#include <algorithm>
#include <vector>

#include "backends/cpu/tactics/alternative_kernels.h"
#include "backends/cpu/tactics/loop_gemm.h"
#include "backends/cpu/tactics/tactic_common.h"

namespace kiln::cpu {
namespace {

void convolveIm2colLoop(const ConvProblem& p, const float* x, const float* w, const float* bias,
                        float* y) {
  const SpatialGeometry& g = p.geometry;
  const int64_t cg = p.inChannels / p.group;
  const int64_t mg = p.outChannels / p.group;
  const int64_t inSize = g.inputSize(), outSize = g.outputSize();
  const int64_t rows = cg * g.kernelSize();
  const bool pointwise = isPointwise(g);
  std::vector<float> col(pointwise ? 0 : static_cast<size_t>(rows * outSize));
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t grp = 0; grp < p.group; ++grp) {
      const float* xg = x + (n * p.inChannels + grp * cg) * inSize;
      float* yg = y + (n * p.outChannels + grp * mg) * outSize;
      const float* source = xg;
      if (!pointwise) {
        im2col(xg, cg, g, col.data());
        source = col.data();
      }
      float beta = 0.0f;
      if (bias) {
        for (int64_t m = 0; m < mg; ++m) {
          std::fill(yg + m * outSize, yg + (m + 1) * outSize, bias[grp * mg + m]);
        }
        beta = 1.0f;
      }
      loopGemm(false, false, mg, outSize, rows, 1.0f, w + grp * mg * rows, rows, source, outSize,
               beta, yg, outSize);
    }
  }
}

}  // namespace

Status convIm2colLoopKernel(KernelContext& ctx) {
  ConvProblem problem;
  KILN_RETURN_IF_ERROR(prepareConvNode(ctx, &problem));
  return runFloatConvolution(ctx, problem, &convolveIm2colLoop);
}

}  // namespace kiln::cpu
