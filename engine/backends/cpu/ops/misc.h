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
void registerSamplingKernels(KernelRegistry& registry);   // misc_grid_sample.cpp: GridSample, Col2Im
void registerRandomKernels(KernelRegistry& registry);     // misc_random.cpp: Random*, Bernoulli, ...
void registerTrainingKernels(KernelRegistry& registry);   // misc_training.cpp: Adagrad, Adam, Momentum
void registerStringNormalizerKernels(KernelRegistry& registry);  // misc_strings.cpp

// Reads input `index` (a scalar or a one-element tensor) as an integer / a double.
// `name` is the ONNX input name used in error messages.
Status readScalarInt(const KernelContext& ctx, size_t index, const char* name, int64_t* out);
Status readScalarDouble(const KernelContext& ctx, size_t index, const char* name, double* out);

// A generator seeded from the node's `seed` attribute (int or float) so seeded models
// repeat; without the attribute the seed comes from std::random_device.
std::mt19937 seededGenerator(const Node& node);

// Allocates output `index` of `type` and `shape` and fills it from `values` (row-major,
// one per element). Numeric types only: bool and string are refused.
Status writeDoublesOutput(KernelContext& ctx, size_t index, DataType type, const Shape& shape,
                          const std::vector<double>& values);

}  // namespace kiln::cpu
