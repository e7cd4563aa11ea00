// ModelSummary: what `kiln inspect` reports about an ONNX model: inputs and
// outputs with symbolic dims, opsets, op histogram, parameters, FLOPs for the
// given input shapes, and nodes whose shapes could not be inferred.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln::inspector {

// `inputShapes` binds dynamic inputs for FLOPs and output shapes (may be empty).
Result<nlohmann::json> summarizeModel(const Network& network, const std::map<std::string, Shape>& inputShapes);
// Human-readable form of summarizeModel's JSON.
std::string formatModelSummary(const nlohmann::json& summary);

}  // namespace kiln::inspector
