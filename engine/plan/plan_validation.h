// Every field of a loaded plan that the runtime trusts, checked once on load: a
// plan is untrusted input, and its checksum is no proof (anyone can recompute it).
#pragma once

#include "kiln/plan.h"

namespace kiln::plan {

// Ok when the profiles fit the network (validateProfiles), there is one layer
// implementation per top-level node, each with a precision and output type that
// a backend can run (float32, float16, bfloat16, int8, float8e4m3), and the build
// record holds numbers a build writes (optimization level 0..5, byte counts >= 0,
// memory offsets >= -1, the same precisions). Otherwise a one-line error naming
// the profile, input, layer or field.
Status validatePlan(const Plan& plan);

}  // namespace kiln::plan
