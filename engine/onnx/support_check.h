// The pre-import pass that lists every node Kiln cannot run, in one go.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "kiln/onnx_import.h"

namespace kiln::onnx_import {

// One entry per unsupported node, subgraphs included: a kUnsupported status whose
// message is "node 'name' (#index, OpType) domain 'd' opset N" and whose node fields
// name the main-graph node (the node itself, or the one holding its subgraph).
std::vector<Status> listUnsupportedNodes(const onnx::ModelProto& model,
                                         const std::map<std::string, int>& opsets,
                                         const OpSupportQuery& isSupported);

}  // namespace kiln::onnx_import
