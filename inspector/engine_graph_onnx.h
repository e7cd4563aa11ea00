// The engine's layer graph as an ONNX model, for graph viewers (Netron, Model Explorer):
// what ran, not what the model said. Works for any EngineReport (a Kiln plan or a
// TensorRT engine exported by trtexec). No Qt.
//
// One node per engine layer, in execution order, op type = the layer type
// ("CaskConvolution", "Attention"), domain "ai.kiln.engine", named after the layer;
// connected by the activation tensors the layers read and write (value_info carries their
// dims and element types where the report knows them). Attributes: precision,
// precision_reason, tactic, tactic_value, tactic_source, time_ms and percentage (when
// timed), source_nodes, fusion, weights (what the layer reads that no layer writes and the
// engine does not bind: named with dims, not stored), and the report's other parameters
// as "param:<key>" strings. Graph inputs and outputs are the engine's bindings. The model
// carries no weights and runs nowhere: it is for looking at.
#pragma once

#include <string>

#include "engine_report.h"
#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln::inspector {

constexpr const char* kEngineGraphDomain = "ai.kiln.engine";

Network engineGraphNetwork(const EngineReport& report);
// engineGraphNetwork written as ONNX to `path` (atomically; kIoError naming the file).
Status exportEngineGraphOnnx(const EngineReport& report, const std::string& path);

}  // namespace kiln::inspector
