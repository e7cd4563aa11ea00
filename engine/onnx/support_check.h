// The pre-import pass that lists every node Kiln cannot run, in one go.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "kiln/onnx_import.h"

namespace kiln::onnx_import {

// One entry per unsupported node, subgraphs included:
// "node 'name' (#index, OpType) domain 'd' opset N".
std::vector<std::string> listUnsupportedNodes(const onnx::ModelProto& model, const std::map<std::string, int>& opsets,
                                              const OpSupportQuery& isSupported);

}  // namespace kiln::onnx_import
