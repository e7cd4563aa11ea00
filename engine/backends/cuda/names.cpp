// Display names of the CUDA runtime's enums, shared by the CUDA and CPU-only builds.
#include "kiln/cuda_runtime.h"

namespace kiln::cuda {

const char* precisionName(Precision precision) {
  switch (precision) {
    case Precision::kFloat32:
      return "fp32";
    case Precision::kFloat16:
      return "fp16";
    case Precision::kBFloat16:
      return "bf16";
  }
  return "?";
}

const char* layerPlacementName(LayerPlacement placement) {
  switch (placement) {
    case LayerPlacement::kGpu:
      return "gpu";
    case LayerPlacement::kFolded:
      return "folded";
    case LayerPlacement::kAlias:
      return "alias";
    case LayerPlacement::kHostFallback:
      return "host-fallback";
  }
  return "?";
}

std::string layerDescription(const LayerInfo& layer) {
  return std::string(layerPlacementName(layer.placement)) +
         (layer.implementation.empty() ? "" : ": " + layer.implementation) +
         (layer.note.empty() ? "" : " (" + layer.note + ")");
}

}  // namespace kiln::cuda
