// What Slurm says about a sweep's job array (`kiln sweep --slurm`, issue 29 item 2): the
// task states parsed from squeue and sacct, the five phases the Sweep view shows, and
// DIR/slurm/states.json, the status file the tracking sweep rewrites at each poll and
// the studio reads (docs/sweep.md). No Qt and no process calls.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kiln/status.h"

namespace kiln::sweep {

// Index -> state of a job's array tasks, from "ID|STATE" lines (squeue -o '%K|%T' gives
// the index; sacct -P -o JobID,State the id "123_4"). "CANCELLED by 1000" is CANCELLED;
// lines without an index (the array's own "123_[5-9]" line, a header) are skipped.
std::map<int, std::string> parseSlurmStates(const std::string& text);

// Where a task stands. Queued: waiting for resources (PENDING, REQUEUED, held ...);
// running: holds its node (RUNNING, CONFIGURING, COMPLETING, SUSPENDED, ...); then
// completed, cancelled, or failed (FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY,
// BOOT_FAIL, DEADLINE, PREEMPTED, and any state Slurm adds that is none of the above).
enum class TaskPhase { kQueued, kRunning, kCompleted, kFailed, kCancelled };
TaskPhase slurmPhase(const std::string& state);
// Whether a task in `state` may still write its result (queued or running).
bool slurmActive(const std::string& state);

// DIR/slurm/states.json: {"job": "123", "updated": UNIX_SECONDS, "poll": SECONDS,
// "tasks": {"0": "COMPLETED", "1": "RUNNING", ...}}.
struct SlurmStates {
  std::string job;
  double updated = 0;  // when the sweep last asked Slurm (Unix time, seconds)
  double poll = 0;     // how often it asks
  std::map<int, std::string> tasks;
  bool operator==(const SlurmStates&) const = default;
};
nlohmann::json slurmStatesJson(const SlurmStates& states);
// An error names what is missing or malformed.
Result<SlurmStates> slurmStatesFromJson(const nlohmann::json& json);
// Whether states written at `updated` by a sweep polling every `poll` seconds are still
// current at `now`: a sweep that stopped polling (killed) leaves them stale after three
// polls and half a minute of slack.
bool slurmStatesCurrent(const SlurmStates& states, double now);

}  // namespace kiln::sweep
