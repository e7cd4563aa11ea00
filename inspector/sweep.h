// Configuration sweeps (`kiln sweep`): the cartesian product of `--vary` axes, the
// accuracy gate, the resumable JSONL log and what is read from it (table, Pareto front,
// best configuration). No Qt and no engine calls: a sweep runs each configuration as
// `kiln build`, `kiln compare` and `kiln run` processes (cmd_sweep.cpp), locally or as a
// Slurm job array, and this file only plans and judges.
//
// Log line (one JSON object per finished configuration, docs/sweep.md):
//   key, index, values{axis: value}, command (the `kiln build` line), plan, status
//   (accepted | rejected | failed | cancelled), accepted, latency_ms{median, mean, p90},
//   error{max_abs, mean_abs, max_rel, cosine, non_finite}, gate, reason, message,
//   runner (local | slurm), slurm{job, state, log}, seconds.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kiln/status.h"

namespace kiln::sweep {

// One `--vary NAME=V1,V2,...` list. Values holding commas (shape lists) are separated
// by ';' instead: `--vary 'opt-shapes=x:1x16;x:4x16'`.
struct Axis {
  std::string name;
  std::vector<std::string> values;
};
Result<Axis> parseAxis(const std::string& spec);

// One point of the product: its index in product order and its key, the
// "name=value" pairs joined by ' ' in axis order (the key the log and --continue use).
struct Configuration {
  int index = 0;
  std::string key;
  std::vector<std::pair<std::string, std::string>> values;
};
// The cartesian product, the last axis varying fastest.
std::vector<Configuration> expandAxes(const std::vector<Axis>& axes);
// A file-system-safe folder name for a configuration, unique per key.
std::string folderName(const Configuration& configuration);
// The `kiln build` options a configuration adds: precision=fp16 -> --fp16, bf16 ->
// --bf16, int8 -> --int8 (the caller adds the calibration cache), fp32 -> nothing;
// any other axis NAME=V -> --NAME V.
std::vector<std::string> buildOptions(const Configuration& configuration);

// The accuracy gate: `cosine>=0.999`, `max-abs<=1e-2`, `max-rel<=X`, `mean-abs<=X`,
// several joined by ',' (all must hold). Metrics are the worst over the outputs.
struct GateTerm {
  std::string metric;  // cosine | max-abs | max-rel | mean-abs
  bool atLeast = false;
  double bound = 0;
};
struct Gate {
  std::vector<GateTerm> terms;
  std::string text;
};
Result<Gate> parseGate(const std::string& spec);

// Error of a configuration against the FP32 reference, worst over its outputs.
// `nonFinite` counts NaN/Inf where the reference has a finite value.
struct ErrorMetrics {
  double maxAbs = 0, meanAbs = 0, maxRel = 0, cosine = 1;
  int64_t nonFinite = 0;
};
// From `kiln compare --json` (accuracyReportJson); an error when it has no outputs.
Result<ErrorMetrics> metricsFromCompareJson(const nlohmann::json& report);
nlohmann::json metricsJson(const ErrorMetrics& metrics);
// Empty when the metrics pass, else why not ("cosine 0.97 < 0.999").
std::string checkGate(const Gate& gate, const ErrorMetrics& metrics);
// The value the Pareto front ranks a log entry's error by: the gate's first metric
// (1 - cosine for cosine), infinite where it is missing.
double paretoError(const nlohmann::json& entry, const Gate& gate);

// The log: one JSON object a line. Reading skips a torn last line (a sweep killed
// while writing) and reports how many lines it skipped.
struct Log {
  std::vector<nlohmann::json> entries;
  int skippedLines = 0;
};
Result<Log> readLog(const std::string& path);
// Appends `entry` as one line with a single write on an O_APPEND descriptor, then
// fsync: readers see whole lines, and a line once written survives a crash.
Status appendLogLine(const std::string& path, const nlohmann::json& entry);
// The latest entry of each key, in log order of first appearance.
std::vector<nlohmann::json> latestByKey(const std::vector<nlohmann::json>& entries);

// Reports over the latest entries.
std::string formatTable(const std::vector<nlohmann::json>& entries);
// Accepted entries no other accepted entry beats on both latency and error, fastest
// first.
std::vector<nlohmann::json> paretoFront(const std::vector<nlohmann::json>& entries,
                                        const Gate& gate);
std::string formatPareto(const std::vector<nlohmann::json>& front, const Gate& gate);

// `argv` as one shell line, each word quoted where the shell would split or expand it.
std::string shellJoin(const std::vector<std::string>& argv);
// The words a POSIX shell makes of `line` without expanding anything: blanks separate,
// '...' is literal, "..." honours \" \\ \$ \`, a backslash outside quotes escapes one
// character. The inverse of shellJoin and of kilnBuildCommandLine's quoting (what the
// studio shows as a command line is what it runs remotely).
std::vector<std::string> shellSplit(const std::string& line);

}  // namespace kiln::sweep
