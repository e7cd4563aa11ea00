// Text and JSON forms of the precision and tactic debuggers' results (kiln debug).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "compare/precision_debug.h"
#include "compare/tactic_debug.h"

namespace kiln::cli {

// "build 3: first 6 of 12 layers in fp32 -> pass (max abs 1.2e-03 on 'out')"
std::string formatPrecisionStep(const compare::PrecisionDebugStep& step);
// The steps' count, the layers and ONNX nodes to keep in fp32, and how to apply them.
std::string formatPrecisionDebug(const compare::PrecisionDebugResult& result,
                                 const std::string& model, const std::string& constraintsPath,
                                 const std::string& appliedPlan);
// {"model", "builds", "reduced_passes", "candidates", "keep": [{"layer", "onnx_nodes"}],
//  "onnx_nodes", "steps": [...], "constraints": {...}, "outputs": [...]}
nlohmann::json precisionDebugJson(const compare::PrecisionDebugResult& result,
                                  const std::string& model);

std::string formatTacticDebug(const compare::TacticDebugResult& result, const std::string& model);
// {"model", "builds", "baseline": {"pass", "max_abs"}, "trials": [...], "bad": [...],
//  "rebuilds": [...], "flaky_layers": [...]}
nlohmann::json tacticDebugJson(const compare::TacticDebugResult& result, const std::string& model);

}  // namespace kiln::cli
