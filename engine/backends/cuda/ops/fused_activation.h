// Pointwise epilogues the libraries lack, applied in place after a GEMM.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// y = y * 0.5 * (1 + erf(y / sqrt(2))) over n float32/float16/bfloat16 elements,
// computed in float (cuBLASLt's GELU epilogue is the tanh approximation, which
// is not what ONNX's erf form computes).
Status geluErfInPlace(void* y, DataType type, int64_t n, cudaStream_t stream);

}  // namespace kiln::cuda
