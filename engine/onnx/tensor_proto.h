// TensorProto <-> Tensor conversion, including external data resolution.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "kiln/onnx_import.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::onnx_import {

// Converts a TensorProto. External data comes from `resolver` when it is set, else from
// files in `modelDir`; both empty means external data is refused.
Result<Tensor> tensorFromProto(const onnx::TensorProto& proto, const std::string& modelDir,
                               const ExternalDataResolver& resolver = {});
void tensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

}  // namespace kiln::onnx_import
