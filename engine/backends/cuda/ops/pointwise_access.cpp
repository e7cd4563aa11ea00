// Access planning for PointwiseChain kernels (contract: pointwise_access.h).
#include "backends/cuda/ops/pointwise_access.h"

#include <algorithm>

namespace kiln::cuda {

Result<Shape> pointwiseOutputShape(const std::vector<Shape>& inputs) {
  Shape out;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Shape& in = inputs[k];
    const size_t rank = std::max(out.size(), in.size());
    Shape next(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t a = i < rank - out.size() ? 1 : out[i - (rank - out.size())];
      const int64_t b = i < rank - in.size() ? 1 : in[i - (rank - in.size())];
      if (a != b && a != 1 && b != 1)
        return invalidArgument("input " + std::to_string(k) + " " + shapeToString(in) +
                               " does not broadcast to " + shapeToString(out));
      next[i] = a == 1 ? b : a;
    }
    out = std::move(next);
  }
  return out;
}

void planPointwiseAccess(const std::vector<DataType>& types, const std::vector<Shape>& shapes,
                         const Shape& out, PointwiseKernelSpec* spec, PointwiseArgs* args) {
  const int64_t n = shapeNumel(out);
  spec->rank = static_cast<int>(out.size());
  spec->index32 = n <= int64_t(0xffffffff);
  for (size_t d = 0; d < out.size(); ++d) args->dims[d] = out[d];
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Shape& in = shapes[k];
    const int64_t numel = shapeNumel(in);
    spec->inputTypes.push_back(types[k]);
    const InputAccess access = numel == n   ? InputAccess::kFull
                               : numel == 1 ? InputAccess::kScalar
                                            : InputAccess::kStrided;
    spec->access.push_back(access);
    if (access != InputAccess::kStrided) continue;
    int64_t stride = 1;  // row-major strides of `in` right-aligned to `out`; 0 where broadcast
    for (int d = static_cast<int>(out.size()) - 1, i = static_cast<int>(in.size()) - 1; d >= 0;
         --d, --i) {
      const int64_t dim = i >= 0 ? in[i] : 1;
      args->strides[k][d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
}

PointwiseProgram pointwiseStorageProgram(PointwiseProgram program, DataType floatType) {
  for (PointwiseStep& step : program.steps)
    if (step.type == DataType::kFloat32) step.type = floatType;
  return program;
}

std::vector<std::string> pointwiseKernelNames(const PointwiseKernelSpec& spec) {
  std::vector<std::string> kernels = {kPointwiseKernelName};
  if (spec.vectorWidth() > 0) kernels.push_back(kPointwiseVecKernelName);
  return kernels;
}

}  // namespace kiln::cuda
