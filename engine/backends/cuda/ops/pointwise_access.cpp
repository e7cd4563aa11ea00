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
  spec->index32 = n <= int64_t(0xffffffff);
  std::vector<size_t> strided;
  // Row-major strides of each strided input right-aligned to `out`; 0 where it broadcasts.
  std::vector<std::vector<int64_t>> full(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Shape& in = shapes[k];
    const int64_t numel = shapeNumel(in);
    spec->inputTypes.push_back(types[k]);
    const InputAccess access = numel == n   ? InputAccess::kFull
                               : numel == 1 ? InputAccess::kScalar
                                            : InputAccess::kStrided;
    spec->access.push_back(access);
    spec->innerContiguous.push_back(false);
    if (access != InputAccess::kStrided) continue;
    strided.push_back(k);
    full[k].assign(out.size(), 0);
    int64_t stride = 1;
    for (int d = static_cast<int>(out.size()) - 1, i = static_cast<int>(in.size()) - 1; d >= 0;
         --d, --i) {
      const int64_t dim = i >= 0 ? in[i] : 1;
      full[k][d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  // Collapse (pointwise_codegen.h), innermost first: a dim of 1 indexes nothing; dim d
  // joins the one inside it when every strided input's stride at d is the inner
  // stride times the inner extent (0 = 0 * extent for a broadcast pair).
  std::vector<int64_t> dims;                                 // innermost first
  std::vector<std::vector<int64_t>> strides(shapes.size());  // innermost first
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    if (out[d] == 1) continue;
    bool joins = !dims.empty();
    for (size_t k : strided) joins = joins && full[k][d] == strides[k].back() * dims.back();
    if (joins) {
      dims.back() *= out[d];
      continue;
    }
    dims.push_back(out[d]);
    for (size_t k : strided) strides[k].push_back(full[k][d]);
  }
  spec->rank = static_cast<int>(dims.size());
  for (size_t r = 0; r < dims.size(); ++r) {
    const size_t d = dims.size() - 1 - r;  // outermost first in args
    args->dims[d] = dims[r];
    for (size_t k : strided) args->strides[k][d] = strides[k][r];
  }
  for (size_t k : strided) spec->innerContiguous[k] = strides[k].front() == 1;
  spec->stridedPacks = !strided.empty() && !dims.empty() && dims.front() % spec->packWidth() == 0;
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
