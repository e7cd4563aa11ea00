#include "backends/cuda/ops/cudnn_plan_cache.h"

#include <cudnn.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/layer_choice.h"
#include "backends/cuda/ops/nvrtc_module.h"
#include "common/fnv1a.h"
#include "kiln/cuda_generated_kernels.h"

namespace kiln::cuda {
namespace {

constexpr const char* kMagic = "kiln-cudnn-plan 1";

}  // namespace

Result<std::string> cudnnPlanKey(const std::string& graphText) {
  KILN_ASSIGN_OR_RETURN(std::string architecture, currentDeviceArchitecture());
  const std::string text = "cudnn " + std::to_string(cudnnGetVersion()) + "\n" + graphText;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(fnv1a64(text.data(), text.size())));
  return architecture + kCudnnPlanKeyTag + hex;
}

bool findCudnnPlanRecord(CudnnPlanStore& r, const std::string& key, CudnnPlanRecord* record) {
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(key);
  if (it == r.entries.end()) return false;
  *record = it->second.record;
  return true;
}

void rememberCudnnPlanRecord(CudnnPlanStore& r, const std::string& key,
                             const CudnnPlanRecord& record, const std::string& layer) {
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [it, added] = r.entries.emplace(key, CudnnPlanStore::Entry{record, {}});
  it->second.layers.insert(layer);
}

void rememberCudnnPlan(CudnnPlanStore& store, const std::string& key, const CudnnPlan& plan,
                       const std::string& layer, const std::string& timings) {
  CudnnPlanRecord record;
  record.choice = plan.choice;
  record.json = plan.choice.runtimeCompiled ? serializeCudnnPlan(plan) : "";
  record.timings = timings;
  rememberCudnnPlanRecord(store, key, record, layer);
}

std::string serializeCudnnPlan(const CudnnPlan& plan) {
  int64_t size = 0;
  if (cudnnBackendGetAttribute(plan.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                               CUDNN_TYPE_CHAR, 0, &size, nullptr) != CUDNN_STATUS_SUCCESS ||
      size <= 0)
    return "";
  std::string json(static_cast<size_t>(size), '\0');
  if (cudnnBackendGetAttribute(plan.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                               CUDNN_TYPE_CHAR, size, &size, json.data()) != CUDNN_STATUS_SUCCESS)
    return "";
  json.resize(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(size, json.size()))));
  while (!json.empty() && json.back() == '\0') json.pop_back();
  return json;
}

namespace {

// The plan restored from its JSON form, or nullptr when cuDNN refuses it.
std::unique_ptr<CudnnPlan> planFromJson(cudnnHandle_t handle, const CudnnPlanRecord& record) {
  std::unique_ptr<CudnnPlan> plan =
      finalizedPlan(handle, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                    static_cast<int64_t>(record.json.size()), record.json.data());
  if (!plan) return nullptr;
  plan->choice = record.choice;
  plan->description = describeCudnnChoice(record.choice);
  return plan;
}

}  // namespace

Result<std::unique_ptr<CudnnPlan>> planFromRecord(cudnnHandle_t handle,
                                                  cudnnBackendDescriptor_t graph,
                                                  const CudnnPlanRecord& record) {
  if (!record.json.empty()) {
    if (std::unique_ptr<CudnnPlan> plan = planFromJson(handle, record)) return plan;
  }
  return planFromChoice(handle, graph, record.choice);
}

std::vector<char> encodeCudnnPlanRecord(const CudnnPlanRecord& record) {
  std::ostringstream out;
  out << kMagic << "\nengine " << record.choice.engine << "\nrtc "
      << (record.choice.runtimeCompiled ? 1 : 0) << "\nknobs " << record.choice.knobs.size();
  for (const auto& [type, value] : record.choice.knobs) out << ' ' << type << ' ' << value;
  auto oneLine = [](std::string text) {
    for (char& c : text)
      if (c == '\n') c = ' ';
    return text;
  };
  out << "\ntimings " << oneLine(record.timings);
  if (!record.raceWinner.empty())  // a token: no spaces
    out << "\nrace " << record.raceWinner << ' ' << oneLine(record.raceTimings);
  out << "\njson " << record.json.size() << "\n" << record.json;
  const std::string text = out.str();
  return std::vector<char>(text.begin(), text.end());
}

bool decodeCudnnPlanRecord(const std::vector<char>& bytes, CudnnPlanRecord* record) {
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::string line, word;
  if (!std::getline(in, line) || line != kMagic) return false;
  CudnnPlanRecord r;
  int rtc = 0;
  size_t knobs = 0;
  if (!(in >> word) || word != "engine" || !(in >> r.choice.engine) || r.choice.engine < 0)
    return false;
  if (!(in >> word) || word != "rtc" || !(in >> rtc) || (rtc != 0 && rtc != 1)) return false;
  r.choice.runtimeCompiled = rtc == 1;
  if (!(in >> word) || word != "knobs" || !(in >> knobs) || knobs > 64) return false;
  for (size_t i = 0; i < knobs; ++i) {
    int64_t type = 0, value = 0;
    if (!(in >> type >> value) || type < 0 || type > 1024) return false;
    r.choice.knobs.push_back({type, value});
  }
  in.get();  // the newline after the knobs
  if (!std::getline(in, line) || line.rfind("timings ", 0) != 0) return false;
  r.timings = line.substr(8);
  if (!(in >> word)) return false;
  if (word == "race") {  // optional (plans written before the race was recorded lack it)
    if (!(in >> r.raceWinner) || !std::getline(in, line)) return false;
    r.raceTimings = line.empty() ? line : line.substr(1);
    if (!(in >> word)) return false;
  }
  size_t jsonBytes = 0;
  if (word != "json" || !(in >> jsonBytes) || in.get() != '\n') return false;
  const std::streamoff at = in.tellg();
  if (at < 0 || static_cast<size_t>(at) + jsonBytes != bytes.size()) return false;
  r.json.assign(bytes.begin() + at, bytes.end());
  *record = std::move(r);
  return true;
}

std::vector<GeneratedKernelBinary> cudnnPlanEntries(CudnnPlanStore& r,
                                                    const std::set<std::string>& layers) {
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<GeneratedKernelBinary> out;
  for (const auto& [key, entry] : r.entries) {
    GeneratedKernelBinary binary;
    for (const std::string& layer : entry.layers)
      if (layers.count(layer)) binary.layers.push_back(layer);
    if (binary.layers.empty()) continue;
    binary.architecture = key.substr(0, key.find(':'));
    binary.key = key;
    binary.cubin = encodeCudnnPlanRecord(entry.record);
    out.push_back(std::move(binary));
  }
  return out;
}

void preloadCudnnPlanEntry(CudnnPlanStore& r, const GeneratedKernelBinary& entry) {
  CudnnPlanRecord record;
  if (!decodeCudnnPlanRecord(entry.cubin, &record)) return;
  record.fromPlanFile = true;
  std::lock_guard<std::mutex> lock(r.mutex);
  CudnnPlanStore::Entry& e = r.entries[entry.key];
  if (e.layers.empty() && e.record.choice.engine < 0) e.record = record;
  for (const std::string& layer : entry.layers) e.layers.insert(layer);
}

Result<std::shared_ptr<CudnnPlan>> planOfRecordedChoice(CudnnPlanStore& store, cudnnHandle_t handle,
                                                        cudnnBackendDescriptor_t graph,
                                                        const std::string& key,
                                                        const CudnnEngineChoice& choice,
                                                        int64_t workspaceLimit,
                                                        const std::string& layer) {
  CudnnPlanRecord record;
  if (!key.empty() && findCudnnPlanRecord(store, key, &record) &&
      sameEngineChoice(record.choice, choice)) {
    Result<std::unique_ptr<CudnnPlan>> plan = planFromRecord(handle, graph, record);
    if (plan.isOk()) {
      rememberCudnnPlanRecord(store, key, record, layer);
      return std::shared_ptr<CudnnPlan>(std::move(plan.value()));
    }
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<CudnnPlan> plan, planFromChoice(handle, graph, choice));
  if (plan->workspace > workspaceLimit)
    return unsupported("cuDNN engine " + std::to_string(choice.engine) + " needs " +
                       std::to_string(plan->workspace) + " bytes of workspace, over the limit");
  if (!key.empty() && plan->choice.runtimeCompiled)
    rememberCudnnPlan(store, key, *plan, layer, "the plan's choice");
  return std::shared_ptr<CudnnPlan>(std::move(plan));
}

void rememberRaceWinner(CudnnPlanStore& r, const std::string& key, const std::string& winner,
                        const std::string& timings) {
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(key);
  if (it == r.entries.end() || it->second.record.choice.engine < 0) return;
  it->second.record.raceWinner = winner;
  it->second.record.raceTimings = timings;
}

}  // namespace kiln::cuda
