// What the Sweep view shows of a sweep folder at one moment: one row per configuration
// with its state, latency, error, gate and Pareto membership. Qt-free apart from
// QString and safe to run on a worker thread: scanSweep reads only what was appended to
// the JSONL log since the last scan (the state it carries), DIR/tasks.json, the Slurm
// job record, the Slurm states the tracking sweep writes (slurm/states.json: squeue's
// and sacct's word, while it is current) and else the folders' timestamps. Layout of a
// sweep folder: docs/sweep.md.
#pragma once

#include <QString>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln::studio {

// A configuration's state. Done = judged (accepted or rejected by the gate); completed =
// Slurm says the task completed, and the sweep has not logged its result yet.
enum class SweepState { kQueued, kRunning, kDone, kFailed, kCancelled, kCompleted };
QString sweepStateName(SweepState state);  // "queued", "running", "done", ...

struct SweepRow {
  int index = -1;  // position in the product (-1: a log entry tasks.json does not list)
  QString key;     // "precision=fp16 optimization-level=3"
  SweepState state = SweepState::kQueued;
  bool gatePassed = false;          // accepted by the accuracy gate (done rows only)
  QString reason;                   // why rejected or failed ("" otherwise)
  double medianMs = -1;             // -1: not timed
  double maxAbs = -1, cosine = -1;  // -1: unknown
  double paretoError = -1;   // the gate's first metric (1 - cosine for a cosine gate); -1 none
  bool onFront = false;      // on the Pareto front (accepted, not beaten on both axes)
  QString plan;              // the configuration's plan file
  QString command;           // its `kiln build` command line
  QString slurmJob;          // "JOB_K" for a Slurm task, else ""
  QString slurmState;        // Slurm's state (PENDING, RUNNING, COMPLETED, FAILED, ...) or ""
  bool slurmPolled = false;  // slurmState is squeue's/sacct's, not guessed from files
  QString logPath;           // the task's log (task.log, or Slurm's JOB_K.out)
  bool operator==(const SweepRow&) const = default;
};

// The incremental reader's memory between scans; start with a default one per log.
struct SweepScanState {
  QString logPath;
  QString dir;          // the sweep folder (tasks.json); "" when the log has none beside it
  int64_t offset = 0;   // bytes of the log consumed (whole lines only)
  std::string partial;  // a line not yet ended by '\n'
  std::vector<std::string> order;                // keys in first-appearance order
  std::map<std::string, nlohmann::json> latest;  // latest entry per key
  int64_t tasksMtime = -1;                       // tasks.json's mtime when last read (ms)
  nlohmann::json tasks;                          // its configurations
  int skippedLines = 0;                          // lines that were not JSON objects
};

struct SweepSnapshot {
  std::vector<SweepRow> rows;  // tasks.json's order, then log-only keys
  QString gate;                // the gate's text
  QString paretoMetric;        // what paretoError measures ("1 - cosine", "max-abs", ...)
  int skippedLines = 0;
  QString error;  // the log or task file could not be read ("" when fine)
};

// Starts following `logPath`: the sweep folder is the log's folder when it holds a
// tasks.json (the default DIR/sweep.jsonl), else `dir` when given.
SweepScanState sweepScanState(const QString& logPath, const QString& dir = QString());

// Reads at most `maxBytes` of what was appended to the log since the last call (so one
// scan's work is bounded; call again while `pending` comes back true), re-reads
// tasks.json when it changed, and derives every row. A missing log is an empty sweep
// (the sweep has not logged anything yet), not an error.
SweepSnapshot scanSweep(SweepScanState* state, int64_t maxBytes = 4 << 20, bool* pending = nullptr);

}  // namespace kiln::studio
