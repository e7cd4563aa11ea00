// The Slurm runner of `kiln sweep --slurm`: one job array whose task K runs `kiln sweep
// --task K DIR` on configuration K, tracked with squeue (and sacct once squeue has
// forgotten a task), cancelled with scancel. Only Slurm's own commands: no scheduler
// or transport of Kiln's.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "cli/sweep_process.h"
#include "cli/sweep_runner.h"
#include "sweep_slurm_states.h"
#include "kiln/file_io.h"

namespace kiln::cli::sweep {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kCommandTimeout = 60;  // seconds for one sbatch/squeue/sacct/scancel call

std::string joinIndices(const std::vector<int>& indices) {
  std::string out;
  for (int i : indices) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

std::string slurmLog(const SweepContext& sweep, const std::string& job, int index) {
  return sweep.dir + "/slurm/" + job + "_" + std::to_string(index) + ".out";
}

// False when squeue did not answer (then nothing is concluded from this poll).
bool squeueStates(const std::string& job, std::map<int, std::string>* states) {
  auto r = capture({"squeue", "-h", "-r", "-t", "all", "-j", job, "-o", "%K|%T"}, kCommandTimeout);
  if (!r.isOk() || r->exitCode != 0) return false;
  *states = kiln::sweep::parseSlurmStates(r->out);
  return true;
}

std::map<int, std::string> sacctStates(const std::string& job) {
  auto r = capture({"sacct", "-n", "-P", "-X", "-j", job, "-o", "JobID,State"}, kCommandTimeout);
  return r.isOk() && r->exitCode == 0 ? kiln::sweep::parseSlurmStates(r->out)
                                      : std::map<int, std::string>{};
}

Result<std::string> submit(const SweepContext& sweep, const std::vector<int>& indices,
                           const SlurmOptions& options) {
  std::error_code ignored;
  fs::create_directories(sweep.dir + "/slurm", ignored);
  for (int i : indices) fs::remove(sweep.resultPath(i), ignored);
  std::string array = joinIndices(indices);
  if (options.arrayMax > 0) array += "%" + std::to_string(options.arrayMax);
  std::string script = "#!/bin/sh\n#SBATCH --job-name=kiln-sweep\n";
  script += "#SBATCH --output=" + sweep.dir + "/slurm/%A_%a.out\n";
  script += "#SBATCH --array=" + array + "\n";
  if (!options.partition.empty()) script += "#SBATCH --partition=" + options.partition + "\n";
  if (!options.gres.empty()) script += "#SBATCH --gres=" + options.gres + "\n";
  if (!options.time.empty()) script += "#SBATCH --time=" + options.time + "\n";
  script += "exec " +
            kiln::sweep::shellJoin({sweep.tasks.value("kiln", "kiln"), "sweep", "--task"}) +
            " \"$SLURM_ARRAY_TASK_ID\" " + kiln::sweep::shellJoin({sweep.dir}) + "\n";
  const std::string path = sweep.dir + "/slurm/array.sh";
  KILN_RETURN_IF_ERROR(writeFileAtomically(path, script, "the job script"));
  KILN_ASSIGN_OR_RETURN(Captured r, capture({"sbatch", "--parsable", path}, kCommandTimeout));
  if (r.exitCode != 0)
    return invalidArgument(
        "sbatch refused the job array: " +
        (lastLine(r.err).empty() ? "exit " + std::to_string(r.exitCode) : lastLine(r.err)));
  std::string job = lastLine(r.out);
  job = job.substr(0, job.find(';'));  // "JOBID;CLUSTER" on a federation
  if (job.empty() || job.find_first_not_of("0123456789") != std::string::npos)
    return invalidArgument("sbatch answered '" + lastLine(r.out) + "', not a job id");
  const json record = {{"job", job}, {"indices", indices}, {"script", path}};
  KILN_RETURN_IF_ERROR(
      writeFileAtomically(sweep.dir + "/slurm/job.json", record.dump(1) + "\n", "the job record"));
  return job;
}

// Rewrites DIR/slurm/states.json (the Sweep view's live states) when they changed.
void publishStates(const SweepContext& sweep, const std::string& job,
                   const std::map<int, std::string>& states, const SlurmOptions& options,
                   std::map<int, std::string>* published) {
  if (states == *published) return;
  const kiln::sweep::SlurmStates file{job, double(std::time(nullptr)), options.pollSeconds, states};
  const Status s = writeFileAtomically(sweep.dir + "/slurm/states.json",
                                       kiln::sweep::slurmStatesJson(file).dump(1) + "\n",
                                       "the Slurm states file");
  if (s.isOk()) *published = states;  // else tried again at the next poll; the log still holds
}

// Records a finished task: its result file (with its Slurm state), or its state alone
// (`why` says how it is known).
Status recordTask(const SweepContext& sweep, const std::string& job, int index,
                  const std::string& state, const std::string& why = "") {
  const std::string log = slurmLog(sweep, job, index);
  const json slurm = {
      {"runner", "slurm"},
      {"slurm", {{"job", job + "_" + std::to_string(index)}, {"state", state}, {"log", log}}}};
  const bool cancelled = state == "CANCELLED";
  return recordResult(
      sweep, index, slurm,
      {{"status", cancelled ? "cancelled" : "failed"},
       {"message", "task " + state + " without a result" + why + " (log: " + log + ")"}});
}

// Tracks `indices` of `job` until each is recorded. Returns the indices Slurm no longer
// knows and that left no result (to submit again), or -1 in `code` on interrupt.
std::vector<int> track(const SweepContext& sweep, const std::string& job, std::set<int> left,
                       const SlurmOptions& options, int* code) {
  const auto started = std::chrono::steady_clock::now();
  std::map<int, int> unseen;  // polls in a row in which neither squeue nor sacct knew a task
  std::map<int, std::string> lastSeen;
  std::map<int, std::string> published;  // what states.json holds
  std::vector<int> lost;
  while (!left.empty()) {
    if (interrupted()) {
      std::fprintf(stderr, "kiln sweep: cancelling job %s (scancel)\n", job.c_str());
      (void)capture({"scancel", job}, kCommandTimeout);
      *code = 130;
      return lost;
    }
    std::map<int, std::string> states;
    if (!squeueStates(job, &states)) {
      sleepUnlessInterrupted(options.pollSeconds);
      continue;
    }
    bool askedSacct = false;
    for (auto it = left.begin(); it != left.end();) {
      const int index = *it;
      if (!states.count(index) && !askedSacct) {
        for (const auto& [i, s] : sacctStates(job)) states.emplace(i, s);
        askedSacct = true;
      }
      const auto state = states.find(index);
      const bool resultWritten = fs::exists(sweep.resultPath(index));
      if (state != states.end()) lastSeen[index] = state->second;
      if (state != states.end() && kiln::sweep::slurmActive(state->second)) {
        ++it;
        continue;
      }
      // A pending array task that scancel removes leaves no record behind (without
      // accounting, sacct has none either): gone while pending is cancelled.
      const bool vanished = state == states.end() && !resultWritten;
      const bool cancelledPending = vanished && lastSeen[index] == "PENDING";
      if (vanished && !cancelledPending && ++unseen[index] < 3) {
        ++it;
        continue;
      }
      Status s;
      if (cancelledPending) {
        lastSeen[index] = "CANCELLED";
        s = recordTask(sweep, job, index, "CANCELLED", ", removed from the queue while pending");
      } else if (vanished)
        lost.push_back(index);
      else
        s = recordTask(sweep, job, index, state == states.end() ? "UNKNOWN" : state->second);
      if (!s.isOk()) {
        std::fprintf(stderr, "kiln sweep: %s\n", s.message().c_str());
        *code = 1;
        return lost;
      }
      it = left.erase(it);
    }
    publishStates(sweep, job, lastSeen, options, &published);
    const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - started;
    if (left.empty()) break;
    if (options.maxWaitSeconds > 0 && waited.count() > options.maxWaitSeconds) {
      std::fprintf(stderr,
                   "kiln sweep: job %s still has %zu tasks after %.0f s; it keeps running: "
                   "resume tracking with --continue, or scancel %s\n",
                   job.c_str(), left.size(), waited.count(), job.c_str());
      *code = 1;
      return lost;
    }
    sleepUnlessInterrupted(options.pollSeconds);
  }
  return lost;
}

// The job of an earlier run (DIR/slurm/job.json) and those of `pending` it still owns.
std::pair<std::string, std::vector<int>> earlierJob(const SweepContext& sweep,
                                                    const std::vector<int>& pending) {
  auto text = readRegularFile(sweep.dir + "/slurm/job.json", kMaxTextFileBytes);
  if (!text.isOk()) return {};
  const json record = json::parse(*text, nullptr, false);
  if (!record.is_object() || !record.contains("indices")) return {};
  const std::string job = record.value("job", "");
  const std::set<int> owned = record["indices"].get<std::set<int>>();
  std::vector<int> mine;
  for (int i : pending)
    if (owned.count(i)) mine.push_back(i);
  return {job, mine};
}

}  // namespace

int runSlurm(const SweepContext& sweep, std::vector<int> pending, const SlurmOptions& options) {
  for (const char* tool : {"sbatch", "squeue", "scancel"})
    if (findProgram(tool).empty()) {
      std::fprintf(stderr, "kiln sweep: --slurm needs Slurm's %s in PATH\n", tool);
      return 1;
    }
  int code = 0;
  if (options.resume) {  // a job an interrupted sweep left running: track it, do not resubmit
    auto [job, owned] = earlierJob(sweep, pending);
    // Only the tasks still queued or running: those that ended were collected or are
    // submitted again.
    std::map<int, std::string> states;
    if (!job.empty() && squeueStates(job, &states))
      std::erase_if(
          owned, [&](int i) { return !states.count(i) || !kiln::sweep::slurmActive(states[i]); });
    else
      owned.clear();
    if (!owned.empty()) {
      std::fprintf(stderr, "kiln sweep: tracking job %s again (%zu tasks)\n", job.c_str(),
                   owned.size());
      std::vector<int> lost = track(sweep, job, {owned.begin(), owned.end()}, options, &code);
      if (code != 0) return code;
      std::set<int> again(lost.begin(), lost.end());
      std::erase_if(pending, [&](int i) {
        return std::find(owned.begin(), owned.end(), i) != owned.end() && !again.count(i);
      });
    }
  }
  if (pending.empty()) return 0;
  auto job = submit(sweep, pending, options);
  if (!job.isOk()) {
    std::fprintf(stderr, "kiln sweep: %s\n", job.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "kiln sweep: submitted job array %s (%zu tasks); logs in %s/slurm\n",
               job->c_str(), pending.size(), sweep.dir.c_str());
  std::vector<int> lost = track(sweep, *job, {pending.begin(), pending.end()}, options, &code);
  for (int index : lost) {
    std::fprintf(stderr, "kiln sweep: task %s_%d: Slurm does not know it and it left no result\n",
                 job->c_str(), index);
    (void)recordTask(sweep, *job, index, "UNKNOWN");
  }
  return code;
}

}  // namespace kiln::cli::sweep
