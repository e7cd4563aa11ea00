// Reading and writing tensors in the formats users bring: NumPy .npy files
// and serialized ONNX TensorProto .pb files (see onnx_import.h for .pb).
#pragma once

#include <string>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// Reads a .npy file (format 1.0-3.0, little-endian, C order; bool, ints, float16/32/64).
Result<Tensor> readNpyFile(const std::string& path);
Status writeNpyFile(const std::string& path, const Tensor& tensor);
// Reads .npy or .pb by extension.
Result<Tensor> readTensorFile(const std::string& path);

}  // namespace kiln
