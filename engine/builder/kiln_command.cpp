// The `kiln build` command line for a BuilderConfig, so the studio can show the
// CLI equivalent of what its build panel will do. Spellings follow
// app/cli/build_options.cpp; only settings that differ from BuilderConfig's defaults
// appear, which are the CLI's too: it leaves an option not given at that default.
#include <string>
#include <vector>

#include "kiln/builder.h"

namespace kiln {
namespace {

bool isShellSafe(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  const std::string safe = "_@%+=:,./-";
  return safe.find(c) != std::string::npos;
}

// POSIX shell quoting: bare when every character is safe, else single quotes with
// each embedded quote written as '\''.
std::string shellQuote(const std::string& text) {
  bool bare = !text.empty();
  for (char c : text) bare = bare && isShellSafe(c);
  if (bare) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string shapeList(const OptimizationProfile& profile, const Shape ShapeRange::*which) {
  std::string out;
  for (const auto& [name, range] : profile.inputs) {
    if (!out.empty()) out += ",";
    out += name + ":" + shapeToString(range.*which);
  }
  return out;
}

class CommandLine {
 public:
  void add(const std::string& word) {
    if (!m_text.empty()) m_text += ' ';
    m_text += shellQuote(word);
  }
  void add(const std::string& option, const std::string& value) {
    add(option);
    add(value);
  }
  const std::string& text() const { return m_text; }

 private:
  std::string m_text;
};

void addPrecisions(const BuilderConfig& config, CommandLine* cmd) {
  if (config.fp16) cmd->add("--fp16");
  if (config.bf16) cmd->add("--bf16");
  if (!config.tf32) cmd->add("--no-tf32");
  if (config.int8) cmd->add("--int8");
  if (config.int8 && !config.calibrationCachePath.empty())
    cmd->add("--calib-cache", config.calibrationCachePath);
  if (config.fp8) cmd->add("--fp8");
  if (config.stronglyTyped) cmd->add("--strongly-typed");
  const bool rules = !config.layerPrecisions.empty() || !config.layerOutputTypes.empty();
  // With rules and no mode the CLI assumes prefer, so "none" is then written out.
  if (config.precisionConstraints != ConstraintMode::kNone || rules)
    cmd->add("--precision-constraints", constraintModeName(config.precisionConstraints));
  if (!config.layerPrecisions.empty())
    cmd->add("--layer-precisions", layerPrecisionSpecToString(config.layerPrecisions));
  if (!config.layerOutputTypes.empty())
    cmd->add("--layer-output-types", layerPrecisionSpecToString(config.layerOutputTypes));
}

// The CLI makes profile i from the i-th --min-shapes/--opt-shapes/--max-shapes triple.
void addProfiles(const BuilderConfig& config, CommandLine* cmd) {
  for (const OptimizationProfile& profile : config.profiles) {
    if (profile.inputs.empty()) continue;
    cmd->add("--min-shapes", shapeList(profile, &ShapeRange::min));
    cmd->add("--opt-shapes", shapeList(profile, &ShapeRange::opt));
    cmd->add("--max-shapes", shapeList(profile, &ShapeRange::max));
  }
}

// Options left at BuilderConfig's defaults are left out.
void addSearch(const BuilderConfig& config, CommandLine* cmd) {
  const BuilderConfig defaults;
  if (config.optimizationLevel != defaults.optimizationLevel)
    cmd->add("--optimization-level", std::to_string(config.optimizationLevel));
  const int64_t workspaceMiB = config.workspaceLimitBytes >> 20;
  if (workspaceMiB != defaults.workspaceLimitBytes >> 20)
    cmd->add("--workspace", std::to_string(workspaceMiB));
  if (config.tacticSources != defaults.tacticSources)
    cmd->add("--tactic-sources", tacticSourcesToString(config.tacticSources));
  if (config.profilingVerbosity != defaults.profilingVerbosity)
    cmd->add("--profiling-verbosity", profilingVerbosityName(config.profilingVerbosity));
  for (const std::string& pass : config.disabledPasses) cmd->add("--disable-pass", pass);
  if (config.seed != defaults.seed) cmd->add("--seed", std::to_string(config.seed));
}

}  // namespace

std::string kilnBuildCommandLine(const BuilderConfig& config, const std::string& onnxPath,
                                 const std::string& planPath, const std::string& backend,
                                 const std::string& timingCachePath) {
  CommandLine cmd;
  cmd.add("kiln");
  cmd.add("build");
  cmd.add(onnxPath);
  cmd.add("-o", planPath);
  cmd.add("--backend", backend);
  addPrecisions(config, &cmd);
  addProfiles(config, &cmd);
  addSearch(config, &cmd);
  if (!timingCachePath.empty()) cmd.add("--timing-cache", timingCachePath);
  return cmd.text();
}

}  // namespace kiln
