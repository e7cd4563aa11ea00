// The Compare view's slow work, as job functions (any thread, no widgets): the
// accuracy of build B against build A on the same random inputs (per tensor), and
// a precision-debugging run over the document's model. Builds of a variant go
// through runBuildJob (build_job.h).
#pragma once

#include <memory>

#include "compare/accuracy_compare.h"
#include "compare/precision_debug.h"
#include "kiln/plan.h"
#include "kiln/status.h"

namespace kiln::studio {

class JobContext;

struct AccuracyOutcome {
  Status status;
  std::shared_ptr<const compare::AccuracyReport> report;
};
// B (actual) against A (expected) on one random input set (seed 1) at A's profile-0
// opt shapes, every intermediate both expose included.
AccuracyOutcome runAccuracyJob(std::shared_ptr<const Plan> a, std::shared_ptr<const Plan> b,
                               const compare::Tolerance& tolerance, JobContext& context);

struct PrecisionDebugRequest {
  std::shared_ptr<const Network> network;
  BuilderConfig config;  // the document's (profiles, passes, level)
  DataType reduced = DataType::kFloat16;
  compare::Tolerance tolerance = {1e-2, 1e-2};
};
struct PrecisionDebugOutcome {
  Status status;
  std::shared_ptr<const compare::PrecisionDebugResult> result;
};
// debugPrecision() on one random input set; progress per build; cancellable.
PrecisionDebugOutcome runPrecisionDebugJob(const PrecisionDebugRequest& request,
                                           JobContext& context);

}  // namespace kiln::studio
