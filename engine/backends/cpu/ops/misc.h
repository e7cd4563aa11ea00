// Internal interface of the misc op family. Each misc_*.cpp file registers its own
// kernels through one function below; registerMiscKernels (misc.cpp) calls them all,
// so the family keeps one readable registration list.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

void registerDetectionKernels(KernelRegistry& registry);  // misc_detection.cpp: NMS, RoiAlign
void registerSamplingKernels(KernelRegistry& registry);  // misc_grid_sample.cpp: GridSample, Col2Im
void registerRandomKernels(KernelRegistry& registry);    // misc_random.cpp: Random*, Bernoulli, ...
void registerTrainingKernels(
    KernelRegistry& registry);  // misc_training.cpp: Adagrad, Adam, Momentum
void registerStringNormalizerKernels(KernelRegistry& registry);  // misc_strings.cpp

// Reads input `index` (a scalar or a one-element tensor) as an integer / a double.
// `name` is the ONNX input name used in error messages.
Status readScalarInt(const KernelContext& ctx, size_t index, const char* name, int64_t* out);
Status readScalarDouble(const KernelContext& ctx, size_t index, const char* name, double* out);

// numpy's legacy RandomState stream, so seeded nodes reproduce the ONNX reference
// implementation (and the ONNX test data made with it): mt19937 seeded like
// std::mt19937(seed), doubles from 53 random bits, normals by the polar method.
class RandomStream {
 public:
  explicit RandomStream(uint32_t seed) : m_gen(seed) {}
  // Uniform in [0, 1) (numpy random_sample).
  double uniform() {
    const uint32_t a = m_gen() >> 5, b = m_gen() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }
  // Standard normal (numpy legacy gauss: pairs, the second one cached).
  double normal();
  // One Bernoulli(p) draw the way numpy's legacy binomial(1, p) makes it.
  bool bernoulli(double p);

 private:
  std::mt19937 m_gen;
  bool m_hasGauss = false;
  double m_gauss = 0.0;
};

// A stream seeded from the node's `seed` attribute (int, or float truncated as
// numpy's int(seed) does); without one, from std::random_device.
RandomStream randomStream(const Node& node);

// Allocates output `index` of `type` and `shape` and fills it from `values` (row-major,
// one per element). Numeric types only: bool and string are refused.
Status writeDoublesOutput(KernelContext& ctx, size_t index, DataType type, const Shape& shape,
                          const std::vector<double>& values);

}  // namespace kiln::cpu
