// The engine inspector: a plan's BuildRecord as TensorRT's IEngineInspector JSON
// (Layers with Name, LayerType, Inputs/Outputs, ParameterType, TacticName,
// TacticValue, Metadata; Bindings) plus Kiln's keys (Precision, PrecisionReason,
// Candidates, Fusion, Workspace, MemoryOffset; per layer GeneratedKernel when the
// plan holds its cubin; GeneratedKernels: Count, Bytes, Architecture, Kernels), and
// as text for the terminal.
// The CLI and the studio both read plans through these.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kiln/plan.h"

namespace kiln::inspector {

// TensorRT's shape for the build's verbosity: kDetailed gives one object per
// layer, kLayerNamesOnly a list of names, kNone an empty list.
nlohmann::json engineInspectorJson(const Plan& plan);
// Identity, profiles, build statistics, memory, the precision mix and the
// generated kernels the plan holds.
std::string formatBuildSummary(const Plan& plan);
// One line per layer: name, type, precision, tactic, time; then the tactic
// candidates of each layer when `candidates` is set.
std::string formatLayerTable(const Plan& plan, bool candidates);
// Which ONNX nodes went into which engine layer, both ways: every layer with
// its source nodes and fusing pass, then every ONNX node with its layer.
std::string formatFusions(const Plan& plan);
// "Row major linear FP32", as TensorRT writes Format/Datatype.
std::string formatDatatype(const TensorRecord& tensor);

}  // namespace kiln::inspector
