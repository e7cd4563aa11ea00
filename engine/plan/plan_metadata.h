// The plan's metadata section as JSON: identity, optimization profiles and the
// BuildRecord (with the BuilderConfig it was built under). Internal to the plan
// format; reports are the inspector's job.
#pragma once

#include <nlohmann/json.hpp>

#include "kiln/plan.h"

namespace kiln::plan {

nlohmann::json metadataToJson(const Plan& plan);
// Fills everything but the network. Any missing or mistyped field is a parse
// error naming it (the caller prepends the file name).
Status metadataFromJson(const nlohmann::json& doc, Plan* plan);

}  // namespace kiln::plan
