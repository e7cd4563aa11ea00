// What the data-movement family's GPU tests share (test_cuda_data_movement.cpp:
// Transpose, Concat, Split, Slice, Pad; test_cuda_gather_scatter.cpp: Gather*, Scatter*,
// Expand, Tile, ReverseSequence): exact tolerances and input makers.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "gpu/gpu_op_test.h"

namespace kiln::test::data_movement {

using cuda::Precision;

inline const std::vector<PrecisionTolerance> kExact = {
    {Precision::kFloat32, 0, 0}, {Precision::kFloat16, 0, 0}, {Precision::kBFloat16, 0, 0}};

inline Tensor floats(const Shape& shape, uint32_t seed) {
  return randomTensor(DataType::kFloat32, shape, seed, -2.0, 2.0);
}
inline Tensor int64s(const Shape& shape, uint32_t seed) {
  return randomTensor(DataType::kInt64, shape, seed, -1000.0, 1000.0);
}
inline Tensor ints(const std::vector<int64_t>& values) {
  return int64Tensor({static_cast<int64_t>(values.size())}, values);
}
inline Tensor int32s(const Shape& shape, const std::vector<int32_t>& values) {
  return Tensor::fromVector(DataType::kInt32, shape, values);
}
// Indices in [-dim, dim): negative ones included.
inline Tensor indices(DataType type, const Shape& shape, int64_t dim, uint32_t seed) {
  return randomTensor(type, shape, seed, static_cast<double>(-dim), static_cast<double>(dim - 1));
}
// `count` index tuples for GatherND/ScatterND: column j in [-dims[j], dims[j]).
inline Tensor tuples(const Shape& dims, int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> values;
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t d : dims) values.push_back(std::uniform_int_distribution<int64_t>(-d, d - 1)(rng));
  }
  return int64Tensor({count, static_cast<int64_t>(dims.size())}, values);
}

}  // namespace kiln::test::data_movement
