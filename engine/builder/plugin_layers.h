// The builder's plugin step (after tactic selection, before memory): configures each
// plugin layer with every profile's min/opt/max shapes, records its workspace and
// identity, checks its output shapes against what the model declares, and stores
// its serialized fields on the plan's node. Internal to kiln_engine.
#pragma once

#include <vector>

#include "builder/build_steps.h"

namespace kiln::build {

Status finishPluginLayers(Network& network, const std::vector<OptimizationProfile>& profiles,
                          const ValueMetas& metas, BuildRecord* record);

}  // namespace kiln::build
