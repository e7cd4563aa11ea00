// The builder's timing of one layer's choices in one engine (cuda_build_backend.cpp): no
// CUDA types, so the backend also builds without the toolkit.
#pragma once

#include <string>

#include "kiln/cuda_runtime.h"

namespace kiln::cuda {

// From the next run on, the layer named `layer` of `context` takes `choice` as its planned
// choice (over EngineOptions::layerChoices) and sets itself up again (its state cleared),
// in this context only. False when `context` is not this build's CUDA context (a build
// without the toolkit): the caller makes an engine with the choice instead.
bool holdLayerChoice(ExecutionContext& context, const std::string& layer,
                     const std::string& choice);

}  // namespace kiln::cuda
