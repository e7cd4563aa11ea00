// Precision constraints files: per-layer precision and output-type rules with their
// constraint mode, saved by `kiln debug precision` (and the studio) and read by
// `kiln build --constraints FILE` and the studio's Build panel. JSON:
//
//   {"format": "kiln-constraints", "version": 1, "precision_constraints": "obey",
//    "layer_precisions": [{"layer": "*", "precision": "fp16"},
//                         {"layer": "MatMul_7", "precision": "fp32"}],
//    "layer_output_types": [], "note": "kiln debug precision: ..."}
//
// "layer" is a rule pattern as --layer-precisions takes it: "*" or an ONNX node's
// name (a rule for a node binds the layer it is fused into).
#pragma once

#include <string>
#include <vector>

#include "kiln/builder_config.h"
#include "kiln/status.h"

namespace kiln {

struct PrecisionConstraints {
  ConstraintMode mode = ConstraintMode::kObey;
  std::vector<LayerPrecisionRule> layerPrecisions;
  std::vector<LayerPrecisionRule> layerOutputTypes;
  std::string note;  // where the rules came from, in words
};

// Errors name the file and, for a bad rule, its index.
Result<PrecisionConstraints> loadPrecisionConstraints(const std::string& path);
Status savePrecisionConstraints(const PrecisionConstraints& constraints, const std::string& path);

// Sets the mode and puts the file's rules before the config's own, so rules given
// after the file (on the command line) win where both match. Enables the fp16/bf16
// flags that the rules name.
void applyPrecisionConstraints(const PrecisionConstraints& constraints, BuilderConfig* config);

}  // namespace kiln
