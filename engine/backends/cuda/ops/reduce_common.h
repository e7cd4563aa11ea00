// What the host halves of the reduction family share (reduce.cpp: Reduce*, Softmax /
// LogSoftmax / Hardmax; arg_cumsum.cpp: ArgMax / ArgMin, CumSum): the second register
// function and the input checks that op_common.cuh holds for .cu files. Plain C++ (g++ and
// nvcc); the device helpers are reduce_common.cuh's. Internal to kiln_cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/op_common.h"
#include "kiln/data_type.h"

namespace kiln::cuda {

// ArgMax, ArgMin and CumSum (arg_cumsum.cpp); registerReduceGpuKernels calls it.
void registerArgCumSumGpuKernels(GpuKernelRegistry& registry);

namespace rd {

// op_common.h's checks, as this family's files name them.
using cuda::isFloatData;
using cuda::isIndexType;
using cuda::requireDeviceType;
using cuda::requireInputs;

}  // namespace rd
}  // namespace kiln::cuda
