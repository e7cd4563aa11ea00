#include "sweep_scan.h"

#include <QObject>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/stat.h>

#include "sweep.h"
#include "sweep_slurm_states.h"

namespace kiln::studio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Milliseconds since the Unix epoch of `path`'s last change; -1 when it does not exist.
int64_t mtimeMs(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return -1;
  return int64_t(info.st_mtim.tv_sec) * 1000 + info.st_mtim.tv_nsec / 1000000;
}

json readJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json();
  return json::parse(in, nullptr, false);
}

double number(const json& object, const char* field) {
  const auto it = object.find(field);
  return it != object.end() && it->is_number() ? it->get<double>() : -1;
}

QString text(const json& object, const char* field) {
  const auto it = object.find(field);
  return it != object.end() && it->is_string() ? QString::fromStdString(it->get<std::string>())
                                               : QString();
}

// Reads the log's new whole lines (at most `maxBytes`) into the state. A log that got
// shorter was replaced: read again from its start.
bool readNewLines(SweepScanState* state, int64_t maxBytes, QString* error) {
  const std::string path = state->logPath.toStdString();
  std::error_code ec;
  const auto size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) return false;  // not written yet
  if (size < state->offset) {
    state->offset = 0;
    state->partial.clear();
    state->order.clear();
    state->latest.clear();
    state->skippedLines = 0;
  }
  if (size == state->offset) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = QObject::tr("%1: cannot be read").arg(state->logPath);
    return false;
  }
  in.seekg(state->offset);
  std::string chunk(static_cast<size_t>(std::min(size - state->offset, maxBytes)), '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  state->offset += static_cast<int64_t>(chunk.size());
  state->partial += chunk;
  size_t start = 0;
  for (size_t end; (end = state->partial.find('\n', start)) != std::string::npos; start = end + 1) {
    const json entry =
        json::parse(state->partial.begin() + static_cast<std::ptrdiff_t>(start),
                    state->partial.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
    if (!entry.is_object() || !entry.contains("key")) {
      if (end > start) ++state->skippedLines;
      continue;
    }
    const std::string key = entry.value("key", "");
    if (!state->latest.count(key)) state->order.push_back(key);
    state->latest[key] = entry;
  }
  state->partial.erase(0, start);
  return state->offset < size;
}

// A logged configuration's row.
SweepRow loggedRow(const json& entry) {
  SweepRow row;
  row.index = entry.value("index", -1);
  row.key = text(entry, "key");
  const std::string status = entry.value("status", "");
  row.state = status == "accepted" || status == "rejected" ? SweepState::kDone
              : status == "cancelled"                      ? SweepState::kCancelled
                                                           : SweepState::kFailed;
  row.gatePassed = entry.value("accepted", false);
  row.reason = status == "rejected" ? text(entry, "reason") : text(entry, "message");
  row.medianMs = number(entry.value("latency_ms", json::object()), "median");
  const json error = entry.value("error", json::object());
  row.maxAbs = number(error, "max_abs");
  row.cosine = number(error, "cosine");
  row.plan = text(entry, "plan");
  row.command = text(entry, "command");
  row.logPath = text(entry, "task_log");
  if (const json slurm = entry.value("slurm", json::object()); !slurm.empty()) {
    row.slurmJob = text(slurm, "job");
    row.slurmState = text(slurm, "state");
    row.logPath = text(slurm, "log");
  }
  return row;
}

// The row state of a task Slurm reports in `state` and the sweep has not logged yet.
SweepState stateOfSlurm(const std::string& state) {
  switch (kiln::sweep::slurmPhase(state)) {
    case kiln::sweep::TaskPhase::kQueued:
      return SweepState::kQueued;
    case kiln::sweep::TaskPhase::kRunning:
      return SweepState::kRunning;
    case kiln::sweep::TaskPhase::kCompleted:
      return SweepState::kCompleted;
    case kiln::sweep::TaskPhase::kCancelled:
      return SweepState::kCancelled;
    case kiln::sweep::TaskPhase::kFailed:
      return SweepState::kFailed;
  }
  return SweepState::kQueued;
}

// DIR/slurm/states.json when the sweep that writes it is still polling; else empty.
kiln::sweep::SlurmStates currentSlurmStates(const std::string& dir) {
  auto states = kiln::sweep::slurmStatesFromJson(readJsonFile(dir + "/slurm/states.json"));
  if (!states.isOk() || !kiln::sweep::slurmStatesCurrent(*states, double(std::time(nullptr))))
    return {};
  return states.value();
}

// A configuration the log does not hold yet: for a task of the Slurm job, the state the
// tracking sweep last read from squeue/sacct (`polled`), else queued or running from its
// task log's (or Slurm output's) time against tasks.json's, which every sweep run rewrites.
SweepRow pendingRow(const SweepScanState& state, const json& configuration, const json& job,
                    const kiln::sweep::SlurmStates& polled) {
  SweepRow row;
  row.index = configuration.value("index", -1);
  row.key = text(configuration, "key");
  row.plan = text(configuration, "plan");
  row.command = text(configuration, "command");
  const std::string dir = state.dir.toStdString();
  std::set<int> indices;
  for (const json& i : job.value("indices", json::array()))
    if (i.is_number_integer()) indices.insert(i.get<int>());
  const std::string jobId = job.value("job", "");
  if (!jobId.empty() && indices.count(row.index) &&
      mtimeMs(dir + "/slurm/job.json") >= state.tasksMtime) {
    row.slurmJob = QString::fromStdString(jobId + "_" + std::to_string(row.index));
    const std::string out = dir + "/slurm/" + jobId + "_" + std::to_string(row.index) + ".out";
    row.logPath = QString::fromStdString(out);
    if (const auto it = polled.tasks.find(row.index);
        polled.job == jobId && it != polled.tasks.end()) {
      row.state = stateOfSlurm(it->second);
      row.slurmState = QString::fromStdString(it->second);
      row.slurmPolled = true;
      return row;
    }
    const bool started = mtimeMs(out) >= 0;
    row.state = started ? SweepState::kRunning : SweepState::kQueued;
    row.slurmState = started ? "RUNNING" : "PENDING";
    return row;
  }
  const std::string log = dir + "/configs/" + configuration.value("folder", "") + "/task.log";
  // A second of slack: file systems keep coarse times.
  if (mtimeMs(log) >= state.tasksMtime - 1000) {
    row.state = SweepState::kRunning;
    row.logPath = QString::fromStdString(log);
  }
  return row;
}

}  // namespace

QString sweepStateName(SweepState state) {
  switch (state) {
    case SweepState::kQueued:
      return QObject::tr("queued");
    case SweepState::kRunning:
      return QObject::tr("running");
    case SweepState::kDone:
      return QObject::tr("done");
    case SweepState::kFailed:
      return QObject::tr("failed");
    case SweepState::kCancelled:
      return QObject::tr("cancelled");
    case SweepState::kCompleted:
      return QObject::tr("completed");
  }
  return QString();
}

SweepScanState sweepScanState(const QString& logPath, const QString& dir) {
  SweepScanState state;
  state.logPath = logPath;
  const fs::path folder = fs::path(logPath.toStdString()).parent_path();
  state.dir = fs::exists(folder / "tasks.json") ? QString::fromStdString(folder.string()) : dir;
  return state;
}

SweepSnapshot scanSweep(SweepScanState* state, int64_t maxBytes, bool* pending) {
  SweepSnapshot snapshot;
  const bool more = readNewLines(state, maxBytes, &snapshot.error);
  if (pending) *pending = more;
  const std::string dir = state->dir.toStdString();
  if (!dir.empty()) {
    const int64_t mtime = mtimeMs(dir + "/tasks.json");
    if (mtime != state->tasksMtime) {
      const json tasks = readJsonFile(dir + "/tasks.json");
      if (tasks.is_object() && tasks.value("configurations", json()).is_array()) {
        state->tasks = tasks;
        state->tasksMtime = mtime;
      } else if (mtime >= 0) {
        snapshot.error = QObject::tr("%1/tasks.json: not a kiln sweep task file").arg(state->dir);
      }
    }
  }
  std::vector<json> latest;
  for (const std::string& key : state->order) latest.push_back(state->latest.at(key));
  if (!state->tasks.is_object()) state->tasks = json::object();  // no tasks.json (yet)
  std::string gateText = state->tasks.value("gate", "");
  if (gateText.empty() && !latest.empty()) gateText = latest.back().value("gate", "");
  auto gate = kiln::sweep::parseGate(gateText);
  const kiln::sweep::Gate parsed = gate.isOk() ? gate.value() : kiln::sweep::Gate{};
  std::set<std::string> front;
  for (const json& e : kiln::sweep::paretoFront(latest, parsed)) front.insert(e.value("key", ""));
  snapshot.gate = QString::fromStdString(gateText);
  const std::string metric = parsed.terms.empty() ? "max-abs" : parsed.terms[0].metric;
  snapshot.paretoMetric = QString::fromStdString(metric == "cosine" ? "1 - cosine" : metric);
  snapshot.skippedLines = state->skippedLines;

  auto finish = [&](SweepRow row, const json* entry) {
    if (entry) {
      const double error = kiln::sweep::paretoError(*entry, parsed);
      row.paretoError = std::isfinite(error) ? error : -1;
      row.onFront = front.count(row.key.toStdString()) > 0;
    }
    snapshot.rows.push_back(std::move(row));
  };
  std::set<std::string> listed;
  const json job = dir.empty() ? json() : readJsonFile(dir + "/slurm/job.json");
  const kiln::sweep::SlurmStates polled =
      dir.empty() ? kiln::sweep::SlurmStates{} : currentSlurmStates(dir);
  for (const json& c : state->tasks.value("configurations", json::array())) {
    const std::string key = c.value("key", "");
    listed.insert(key);
    const auto it = state->latest.find(key);
    if (it != state->latest.end())
      finish(loggedRow(it->second), &it->second);
    else
      finish(pendingRow(*state, c, job.is_object() ? job : json::object(), polled), nullptr);
  }
  for (const std::string& key : state->order)
    if (!listed.count(key)) finish(loggedRow(state->latest.at(key)), &state->latest.at(key));
  return snapshot;
}

}  // namespace kiln::studio
