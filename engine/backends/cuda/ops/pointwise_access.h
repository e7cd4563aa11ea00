// What a PointwiseChain layer compiles for given inputs, as pure host functions:
// the broadcast output shape, how each input is read (pointwise_codegen.h's
// InputAccess) with the dims and strides the kernel gets, the program in storage
// types and the kernel names. The runtime (pointwise_chain.cpp, at the first run of
// a shape) and the builder (generatedKernelsForLayer, at the opt shapes) both call
// these, so the source a plan's cubin was compiled from is the source the runtime
// regenerates, byte for byte. No CUDA calls here.
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/ops/pointwise_codegen.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

// The inputs' broadcast shape (numpy rules), or an error without the layer's name:
// "input 1 3x4 does not broadcast to 2x5".
Result<Shape> pointwiseOutputShape(const std::vector<Shape>& inputs);

// How each input (storage type and shape) is read for an output of shape `out`:
// appends to spec's inputTypes, access and innerContiguous, sets its rank, index32 and
// stridedPacks, fills args' dims and the strided inputs' strides, both collapsed
// (pointwise_codegen.h). Set spec's outputType first. `out` has at most
// kPointwiseMaxRank dims.
void planPointwiseAccess(const std::vector<DataType>& types, const std::vector<Shape>& shapes,
                         const Shape& out, PointwiseKernelSpec* spec, PointwiseArgs* args);

// `program` with its float32 steps in the engine's float storage type.
PointwiseProgram pointwiseStorageProgram(PointwiseProgram program, DataType floatType);

// The kernels generatePointwiseSource() defines for `spec`.
std::vector<std::string> pointwiseKernelNames(const PointwiseKernelSpec& spec);

}  // namespace kiln::cuda
