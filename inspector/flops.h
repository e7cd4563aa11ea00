// Floating-point operation estimates per node, from inferred shapes. A
// multiply-add counts as 2 FLOPs; pointwise ops count one per output element.
#pragma once

#include <optional>

#include "kiln/graph.h"
#include "kiln/shape_inference.h"

namespace kiln::inspector {

// FLOPs of `node`, or nullopt when a needed shape is not concrete.
std::optional<double> nodeFlops(const Node& node, const ShapeInferenceResult& shapes);

}  // namespace kiln::inspector
