#include "build_job.h"

#include "input_values.h"

#include "job_runner.h"
#include "kiln/builder.h"
#include "kiln/backends.h"
#include "kiln/timing_cache.h"

namespace kiln::studio {
namespace {

QString progressText(const BuildProgress& p) {
  if (p.phase == "timing" && !p.item.empty())
    return QStringLiteral("timing %1/%2: %3")
        .arg(p.done + 1)
        .arg(p.total)
        .arg(QString::fromStdString(p.item));
  return QString::fromStdString(p.phase);
}

// Loads the cache when its file exists; a missing file starts an empty cache.
Status loadCache(const std::string& path, TimingCache* cache) {
  auto loaded = TimingCache::load(path);
  if (loaded.isOk()) {
    *cache = std::move(loaded.value());
    return Status::ok();
  }
  return loaded.status().code() == StatusCode::kNotFound ? Status::ok() : loaded.status();
}

}  // namespace

double buildFraction(const BuildProgress& p) {
  const double within = p.total > 0 ? static_cast<double>(p.done) / p.total : 0.0;
  if (p.phase == "shapes") return 0.05 * within;
  if (p.phase == "timing") return 0.05 + 0.85 * within;
  if (p.phase == "kernels") return 0.90;  // generated kernels compiled for the plan
  if (p.phase == "memory") return 0.90 + 0.05 * within;
  if (p.phase == "plan") return 0.95 + 0.05 * within;
  return -1;
}

BuildOutcome runBuildJob(const BuildRequest& request, JobContext& context) {
  BuildOutcome outcome;
  BuilderConfig config = request.config;
  TimingCache cache;
  if (!request.timingCachePath.empty()) {
    outcome.status = loadCache(request.timingCachePath, &cache);
    if (!outcome.status.isOk()) return outcome;
    config.timingCache = &cache;
  }
  config.replay = nullptr;
  config.callbacks.onProgress = [&context](const BuildProgress& p) {
    context.progress(buildFraction(p), progressText(p));
  };
  // Called on this thread, at the end of a successful build.
  config.callbacks.onWarning = [&outcome](const std::string& w) { outcome.warnings.push_back(w); };
  config.callbacks.cancel = context.cancelFlag();

  auto backend = createBuildBackend(request.backend, 0, config);
  if (!backend.isOk()) {
    outcome.status = backend.status();
    return outcome;
  }
  auto network = withInputValues(request.network, request.inputValues);
  if (!network.isOk()) {
    outcome.status = network.status();
    return outcome;
  }
  auto plan = buildPlan(network.value(), config, **backend);
  if (!plan.isOk()) {
    outcome.status = plan.status();
    return outcome;
  }
  auto built = std::make_shared<const Plan>(std::move(plan.value()));
  if (config.timingCache) {
    if (Status s = cache.save(request.timingCachePath); !s.isOk())
      outcome.warnings.push_back("timing cache not saved: " + s.message());
  }
  if (!request.planPath.empty()) {
    Status s = savePlan(*built, request.planPath);
    outcome.saved = s.isOk();
    if (!s.isOk()) outcome.warnings.push_back("plan not saved: " + s.message());
  }
  context.progress(1.0, QStringLiteral("report"));
  outcome.report = std::make_shared<const inspector::EngineReport>(
      inspector::reportFromPlan(*built, request.title));
  outcome.plan = std::move(built);
  return outcome;
}

QString nodeNamedInText(const std::string& message, const Network* network) {
  if (!network) return QString();
  for (const std::string& prefix : {std::string("layer '"), std::string("node '")}) {
    const size_t start = message.find(prefix);
    if (start == std::string::npos) continue;
    const size_t from = start + prefix.size();
    const size_t end = message.find('\'', from);
    if (end == std::string::npos) continue;
    // A fused layer is named after its nodes joined by " + ".
    const std::string named = message.substr(from, end - from);
    size_t pos = 0;
    while (pos <= named.size()) {
      size_t plus = named.find(" + ", pos);
      if (plus == std::string::npos) plus = named.size();
      const std::string part = named.substr(pos, plus - pos);
      for (const Node& node : network->graph.nodes)
        if (node.displayName() == part) return QString::fromStdString(part);
      pos = plus + 3;
    }
  }
  return QString();
}

}  // namespace kiln::studio
