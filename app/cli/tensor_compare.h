// The CLI's names for the shared tensor comparison (inspector/compare/tensor_compare.h),
// which conformance, `kiln compare` and the studio use alike.
#pragma once

#include "compare/tensor_compare.h"

namespace kiln::cli {

using compare::CompareResult;
using compare::compareTensors;
using compare::defaultTolerance;
using compare::Tolerance;

}  // namespace kiln::cli
