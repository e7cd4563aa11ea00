#include "sweep_slurm_states.h"

#include <set>
#include <sstream>

namespace kiln::sweep {
namespace {

const std::set<std::string> kQueued = {"PENDING",      "REQUEUED",      "REQUEUE_FED",
                                       "REQUEUE_HOLD", "RESV_DEL_HOLD", "SPECIAL_EXIT"};
const std::set<std::string> kRunning = {"RUNNING",  "CONFIGURING", "COMPLETING", "SUSPENDED",
                                        "RESIZING", "SIGNALING",   "STAGE_OUT",  "STOPPED"};

}  // namespace

std::map<int, std::string> parseSlurmStates(const std::string& text) {
  std::map<int, std::string> states;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t bar = line.find('|');
    if (bar == std::string::npos) continue;
    std::string id = line.substr(0, bar), state = line.substr(bar + 1);
    if (const size_t u = id.rfind('_'); u != std::string::npos) id = id.substr(u + 1);
    if (id.empty() || id.size() > 9 || id.find_first_not_of("0123456789") != std::string::npos)
      continue;
    state = state.substr(0, state.find(' '));
    if (const size_t end = state.find_last_not_of(" \r\n"); end != std::string::npos)
      states[std::stoi(id)] = state.substr(0, end + 1);
  }
  return states;
}

TaskPhase slurmPhase(const std::string& state) {
  if (kQueued.count(state)) return TaskPhase::kQueued;
  if (kRunning.count(state)) return TaskPhase::kRunning;
  if (state == "COMPLETED") return TaskPhase::kCompleted;
  if (state == "CANCELLED") return TaskPhase::kCancelled;
  return TaskPhase::kFailed;
}

bool slurmActive(const std::string& state) {
  const TaskPhase phase = slurmPhase(state);
  return phase == TaskPhase::kQueued || phase == TaskPhase::kRunning;
}

nlohmann::json slurmStatesJson(const SlurmStates& states) {
  nlohmann::json tasks = nlohmann::json::object();
  for (const auto& [index, state] : states.tasks) tasks[std::to_string(index)] = state;
  return {
      {"job", states.job}, {"updated", states.updated}, {"poll", states.poll}, {"tasks", tasks}};
}

Result<SlurmStates> slurmStatesFromJson(const nlohmann::json& json) {
  if (!json.is_object() || !json.value("job", nlohmann::json()).is_string() ||
      !json.value("updated", nlohmann::json()).is_number() ||
      !json.value("tasks", nlohmann::json()).is_object())
    return invalidArgument("not a Slurm states file (wants job, updated and tasks)");
  SlurmStates states;
  states.job = json["job"].get<std::string>();
  states.updated = json["updated"].get<double>();
  states.poll = json.value("poll", 0.0);
  for (const auto& [key, value] : json["tasks"].items()) {
    if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos ||
        !value.is_string())
      return invalidArgument("Slurm states file: task '" + key + "' is not INDEX: \"STATE\"");
    states.tasks[std::stoi(key)] = value.get<std::string>();
  }
  return states;
}

bool slurmStatesCurrent(const SlurmStates& states, double now) {
  constexpr double kSlackSeconds = 30;
  return now - states.updated <= 3 * states.poll + kSlackSeconds;
}

}  // namespace kiln::sweep
