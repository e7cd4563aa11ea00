#include "compare_jobs.h"

#include <cmath>

#include "job_runner.h"

namespace kiln::studio {

AccuracyOutcome runAccuracyJob(std::shared_ptr<const Plan> a, std::shared_ptr<const Plan> b,
                               const compare::Tolerance& tolerance, JobContext& context) {
  AccuracyOutcome outcome;
  context.progress(0.1, QStringLiteral("preparing both engines"));
  auto runnerA = compare::planRunner(a, "A");
  auto runnerB = compare::planRunner(b, "B");
  if (!runnerA.isOk() || !runnerB.isOk()) {
    outcome.status = runnerA.isOk() ? runnerB.status() : runnerA.status();
    return outcome;
  }
  auto inputs = compare::randomInputSet(*a->network, compare::optShapesOf(a->profiles), 1);
  if (!inputs.isOk()) {
    outcome.status = inputs.status();
    return outcome;
  }
  compare::CompareOptions options;
  options.tolerance = tolerance;
  options.perTensor = true;
  context.progress(0.3, QStringLiteral("running both engines"));
  auto report = compare::compareAccuracy(**runnerB, **runnerA, {inputs.value()}, options);
  if (!report.isOk()) {
    outcome.status = report.status();
    return outcome;
  }
  outcome.report = std::make_shared<const compare::AccuracyReport>(std::move(report.value()));
  return outcome;
}

PrecisionDebugOutcome runPrecisionDebugJob(const PrecisionDebugRequest& request,
                                           JobContext& context) {
  PrecisionDebugOutcome outcome;
  auto inputs =
      compare::randomInputSet(*request.network, compare::optShapesOf(request.config.profiles), 1);
  if (!inputs.isOk()) {
    outcome.status = inputs.status();
    return outcome;
  }
  compare::PrecisionDebugOptions options;
  options.config = request.config;
  options.reduced = request.reduced;
  options.tolerance = request.tolerance;
  options.cancel = context.cancelFlag();
  int candidates = 0;
  options.onStep = [&](const compare::PrecisionDebugStep& step) {
    if (step.build == 1) candidates = static_cast<int>(request.network->graph.nodes.size());
    // About log2(n) + 2 builds for one bad layer; the bar saturates below 1.
    const double expected = 2 + std::ceil(std::log2(std::max(2, candidates)));
    context.progress(std::min(0.95, step.build / expected),
                     QStringLiteral("build %1: %2 — %3")
                         .arg(step.build)
                         .arg(QString::fromStdString(step.description))
                         .arg(step.pass ? QStringLiteral("pass") : QStringLiteral("fail")));
  };
  auto result = compare::debugPrecision(request.network, {inputs.value()}, options);
  if (!result.isOk()) {
    outcome.status = result.status();
    return outcome;
  }
  outcome.result = std::make_shared<const compare::PrecisionDebugResult>(std::move(result.value()));
  return outcome;
}

}  // namespace kiln::studio
