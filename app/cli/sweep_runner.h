// The runners of `kiln sweep`: the task that builds, checks and times one
// configuration (`kiln sweep --task K DIR`), the local runner that starts tasks as
// child processes, and the Slurm runner that submits them as one job array. All of
// them read the sweep folder's tasks.json and turn each task's result file into one
// line of the JSONL log (inspector/sweep.h; docs/sweep.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/status.h"
#include "sweep.h"

namespace kiln::cli::sweep {

// A sweep folder: DIR/tasks.json (the configurations and each one's commands),
// DIR/configs/FOLDER/ (plan, reports, result.json, task.log), DIR/slurm/.
struct SweepContext {
  std::string dir;
  std::string logPath;
  nlohmann::json tasks;
  kiln::sweep::Gate gate;

  const nlohmann::json& configuration(int index) const;
  int count() const;
  std::string configDir(int index) const;
  std::string resultPath(int index) const;
};

// Reads DIR/tasks.json; errors name the file.
Result<SweepContext> loadSweep(const std::string& dir, const std::string& logPath);

// `kiln sweep --task K DIR`: builds configuration K, compares it with FP32, times it,
// writes its result file. Exit 0 when it was judged (accepted or rejected), 1 when a
// step failed (the result file says which and why), 2 for a bad task.
int runTask(const std::string& dir, int index);

// Appends configuration `index`'s result file to the log with `runner` merged in (a
// "slurm" object, ...). Without a result file, `fallback` (its status and message) is
// logged instead. Prints one progress line.
Status recordResult(const SweepContext& sweep, int index, const nlohmann::json& runner,
                    const nlohmann::json& fallback);

// Runs `pending` configurations as child tasks, `jobs` at a time; Ctrl-C ends them.
// Exit code 0, or 130 when interrupted.
int runLocal(const SweepContext& sweep, const std::vector<int>& pending, int jobs);

struct SlurmOptions {
  std::string partition, gres, time;
  int arrayMax = 0;  // 0: no %N throttle
  double pollSeconds = 10;
  double maxWaitSeconds = 0;  // 0: until the job ends
  bool resume = false;        // --continue: re-attach to the job in DIR/slurm/job.json
};
// Submits `pending` as one job array (index = configuration index), tracks it with
// squeue/sacct, records each task; Ctrl-C cancels the job (scancel). Exit code 0, 1
// when Slurm refused or the wait ran out, 130 when interrupted.
int runSlurm(const SweepContext& sweep, std::vector<int> pending, const SlurmOptions& options);

}  // namespace kiln::cli::sweep
