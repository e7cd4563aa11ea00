// TensorProto <-> Tensor conversion, including external data resolution.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::onnx_import {

// Converts a TensorProto. `modelDir` is the folder external data is resolved in;
// empty means external data is refused.
Result<Tensor> tensorFromProto(const onnx::TensorProto& proto, const std::string& modelDir);
void tensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

}  // namespace kiln::onnx_import
