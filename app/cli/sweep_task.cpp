// One sweep configuration as a task (build, compare with FP32, time) and the local
// runner that starts tasks as child processes.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cli/sweep_process.h"
#include "cli/sweep_runner.h"
#include "kiln/file_io.h"

namespace kiln::cli::sweep {
namespace fs = std::filesystem;
using nlohmann::json;

const json& SweepContext::configuration(int index) const {
  return tasks.at("configurations").at(static_cast<size_t>(index));
}

int SweepContext::count() const {
  return static_cast<int>(tasks.at("configurations").size());
}

std::string SweepContext::configDir(int index) const {
  return dir + "/configs/" + configuration(index).value("folder", "");
}

std::string SweepContext::resultPath(int index) const {
  return configDir(index) + "/result.json";
}

Result<SweepContext> loadSweep(const std::string& dir, const std::string& logPath) {
  const std::string path = dir + "/tasks.json";
  KILN_ASSIGN_OR_RETURN(std::string text, readRegularFile(path, kMaxTextFileBytes));
  SweepContext sweep{dir, logPath, json::parse(text, nullptr, false), {}};
  if (sweep.tasks.is_discarded() || !sweep.tasks.is_object() ||
      !sweep.tasks.contains("configurations") || !sweep.tasks["configurations"].is_array())
    return parseError(path + ": not a kiln sweep task file");
  KILN_ASSIGN_OR_RETURN(sweep.gate, kiln::sweep::parseGate(sweep.tasks.value("gate", "")));
  return sweep;
}

namespace {

struct Step {
  int exitCode = -1;
  std::string error;  // the step's last stderr line when it failed
};

// Runs `kiln ARGS...` with stdout into `outPath`, stderr into STEP.err beside it.
Step runStep(const std::string& kiln, const json& args, const std::string& dir,
             const std::string& name, const std::string& outPath) {
  std::vector<std::string> argv{kiln};
  for (const json& a : args) argv.push_back(a.get<std::string>());
  const std::string errPath = dir + "/" + name + ".err";
  std::error_code ignored;
  fs::remove(errPath, ignored);
  Step step;
  auto pid = spawn(argv, outPath, errPath);
  if (!pid.isOk()) return {-1, pid.status().message()};
  step.exitCode = waitFor(*pid);
  auto err = readRegularFile(errPath, kMaxTextFileBytes);
  if (err.isOk() && !err->empty()) std::fputs(err->c_str(), stderr);
  if (err.isOk()) step.error = lastLine(*err);
  if (step.error.empty())
    step.error = name + " exited with status " + std::to_string(step.exitCode);
  return step;
}

Result<json> readJsonFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string text, readRegularFile(path, kMaxTextFileBytes));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return parseError(path + ": not JSON");
  return j;
}

// Builds, compares and times the configuration; fills `result` (status and all).
void judge(const SweepContext& sweep, int index, json* result) {
  const json& c = sweep.configuration(index);
  const std::string kiln = sweep.tasks.value("kiln", "kiln");
  const std::string dir = sweep.configDir(index);
  Step build = runStep(kiln, c["build_json"], dir, "build", dir + "/build.json");
  if (build.exitCode != 0) {
    (*result)["status"] = "failed";
    (*result)["message"] = "build: " + build.error;
    return;
  }
  if (auto summary = readJsonFile(dir + "/build.json"); summary.isOk())
    (*result)["layer_precisions"] = summary->value("layer_precisions", json::object());
  // Exit 3 is "compared, outside compare's own tolerance": the gate judges instead.
  Step compare = runStep(kiln, c["compare"], dir, "compare", "");
  auto accuracy = readJsonFile(dir + "/accuracy.json");
  if ((compare.exitCode != 0 && compare.exitCode != 3) || !accuracy.isOk()) {
    (*result)["status"] = "failed";
    (*result)["message"] =
        "compare: " + (compare.exitCode == 0 || compare.exitCode == 3 ? accuracy.status().message()
                                                                      : compare.error);
    return;
  }
  Step run = runStep(kiln, c["run"], dir, "run", dir + "/run.json");
  auto timing = readJsonFile(dir + "/run.json");
  if (run.exitCode != 0 || !timing.isOk()) {
    (*result)["status"] = "failed";
    (*result)["message"] = "run: " + (run.exitCode == 0 ? timing.status().message() : run.error);
    return;
  }
  (*result)["latency_ms"] = timing->value("latency_ms", json::object());
  auto metrics = kiln::sweep::metricsFromCompareJson(*accuracy);
  if (!metrics.isOk()) {
    (*result)["status"] = "failed";
    (*result)["message"] = "compare: " + metrics.status().message();
    return;
  }
  (*result)["error"] = kiln::sweep::metricsJson(*metrics);
  const std::string reason = kiln::sweep::checkGate(sweep.gate, *metrics);
  (*result)["accepted"] = reason.empty();
  (*result)["status"] = reason.empty() ? "accepted" : "rejected";
  if (!reason.empty()) (*result)["reason"] = reason;
}

}  // namespace

int runTask(const std::string& dir, int index) {
  auto loaded = loadSweep(dir, "");
  if (!loaded.isOk()) {
    std::fprintf(stderr, "kiln sweep: %s\n", loaded.status().message().c_str());
    return 2;
  }
  const SweepContext& sweep = *loaded;
  if (index < 0 || index >= sweep.count()) {
    std::fprintf(stderr, "kiln sweep: --task %d: the sweep has %d configurations\n", index,
                 sweep.count());
    return 2;
  }
  const json& c = sweep.configuration(index);
  std::fprintf(stderr, "kiln sweep: task %d: %s\n", index, c.value("key", "").c_str());
  // The test hook: a task that waits, so a test can cancel it while it is queued or
  // running (tests/scaleout/slurm_cluster.sh).
  sleepUnlessInterrupted(sweep.tasks.value("task_delay", 0.0));
  std::error_code ignored;
  fs::create_directories(sweep.configDir(index), ignored);
  const auto started = std::chrono::steady_clock::now();
  json result = {{"key", c["key"]},         {"index", index},    {"values", c["values"]},
                 {"command", c["command"]}, {"plan", c["plan"]}, {"gate", sweep.gate.text},
                 {"accepted", false}};
  judge(sweep, index, &result);
  // Cancelled (Ctrl-C, scancel, the local runner's kill): the steps were ended midway,
  // so no result; the configuration runs again on --continue.
  if (interrupted()) {
    std::fprintf(stderr, "kiln sweep: task %d interrupted; no result written\n", index);
    return 130;
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  result["seconds"] = took.count();
  Status written = writeFileAtomically(sweep.resultPath(index), result.dump(1) + "\n", "result");
  if (!written.isOk()) {
    std::fprintf(stderr, "kiln sweep: %s\n", written.message().c_str());
    return 1;
  }
  return result["status"] == "failed" ? 1 : 0;
}

Status recordResult(const SweepContext& sweep, int index, const json& runner,
                    const json& fallback) {
  const json& c = sweep.configuration(index);
  json entry;
  auto text = readRegularFile(sweep.resultPath(index), kMaxTextFileBytes);
  if (text.isOk()) entry = json::parse(*text, nullptr, false);
  if (entry.is_discarded() || !entry.is_object() || entry.value("key", "") != c.value("key", "")) {
    entry = {{"key", c["key"]},         {"index", index},    {"values", c["values"]},
             {"command", c["command"]}, {"plan", c["plan"]}, {"gate", sweep.gate.text},
             {"accepted", false},       {"status", "failed"}};
    entry.update(fallback);
  }
  entry.update(runner);
  KILN_RETURN_IF_ERROR(kiln::sweep::appendLogLine(sweep.logPath, entry));
  std::string detail = entry.value("reason", entry.value("message", std::string()));
  std::fprintf(stderr, "[%d] %-9s %s%s%s\n", index, entry.value("status", "?").c_str(),
               escapeControlCharacters(c.value("key", "")).c_str(), detail.empty() ? "" : ": ",
               escapeControlCharacters(detail).c_str());
  return Status::ok();
}

int runLocal(const SweepContext& sweep, const std::vector<int>& pending, int jobs) {
  const std::string kiln = sweep.tasks.value("kiln", "kiln");
  std::map<pid_t, int> running;
  size_t next = 0;
  Status failure;
  while ((next < pending.size() || !running.empty()) && failure.isOk() && !interrupted()) {
    while (next < pending.size() && static_cast<int>(running.size()) < jobs) {
      const int index = pending[next++];
      std::error_code ignored;
      fs::create_directories(sweep.configDir(index), ignored);
      fs::remove(sweep.resultPath(index), ignored);
      auto pid =
          spawn({kiln, "sweep", "--task", std::to_string(index), sweep.dir},
                sweep.configDir(index) + "/task.log", sweep.configDir(index) + "/task.log", true);
      if (!pid.isOk()) {
        failure = pid.status();
        break;
      }
      running[*pid] = index;
    }
    int status;
    const pid_t done = waitpid(-1, &status, 0);
    if (done <= 0 || !running.count(done)) continue;
    const int index = running[done];
    running.erase(done);
    const std::string log = sweep.configDir(index) + "/task.log";
    failure = recordResult(sweep, index, {{"runner", "local"}, {"task_log", log}},
                           {{"message", "the task ended without a result (see " + log + ")"}});
  }
  for (const auto& [pid, index] : running) killGroup(pid);
  if (!failure.isOk()) {
    std::fprintf(stderr, "kiln sweep: %s\n", failure.message().c_str());
    return 1;
  }
  return interrupted() ? 130 : 0;
}

}  // namespace kiln::cli::sweep
