// The arithmetic of QuantizedPool, shared by the CPU loop and the CUDA kernel so
// both round the same way: one output element from its window.
//   max:     m = max of the window
//   average: m = (sum of the window) / (window size), in float
//   INT8:    y = saturate_int8(rint(m * inScale / outScale))  (symmetric scales)
//   float:   y = m
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define KILN_EXAMPLE_HD __host__ __device__
#else
#define KILN_EXAMPLE_HD
#endif

namespace kiln_examples {

struct PoolJob {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input NCHW
  int64_t outH = 0, outW = 0;
  int64_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1;
  bool average = false;
  float inScale = 0.f, outScale = 0.f;  // INT8 only
};

// Pools the window of output element (plane, oy, ox) of `plane`'s h x w values,
// read through `load` (a float for any storage type).
template <class Load>
KILN_EXAMPLE_HD float poolWindow(const PoolJob& job, Load load, int64_t plane, int64_t oy,
                                 int64_t ox) {
  const int64_t y0 = oy * job.strideH, x0 = ox * job.strideW;
  float best = load(plane * job.h * job.w + y0 * job.w + x0);
  float sum = 0.f;
  for (int64_t ky = 0; ky < job.kernelH; ++ky)
    for (int64_t kx = 0; kx < job.kernelW; ++kx) {
      const float v = load(plane * job.h * job.w + (y0 + ky) * job.w + (x0 + kx));
      best = v > best ? v : best;
      sum += v;
    }
  return job.average ? sum / static_cast<float>(job.kernelH * job.kernelW) : best;
}

KILN_EXAMPLE_HD inline int8_t requantize(float pooled, float inScale, float outScale) {
  const float q = rintf(pooled * inScale / outScale);
  return static_cast<int8_t>(q < -128.f ? -128.f : (q > 127.f ? 127.f : q));
}

}  // namespace kiln_examples
