#include "memory_timeline.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace kiln::inspector {
namespace {

int64_t tensorBytes(const TensorRecord& t) {
  int64_t n = static_cast<int64_t>(dataTypeSize(t.type));
  for (int64_t d : t.dimensions) {
    if (d < 0) return 0;  // a dim the record could not fix
    n *= d;
  }
  return n;
}

// Bytes in `unit` (1 << 20 for MiB, 1 << 10 for KiB), two decimals.
std::string inUnit(int64_t bytes, int64_t unit) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", static_cast<double>(bytes) / static_cast<double>(unit));
  return text;
}

}  // namespace

MemoryTimeline memoryTimeline(const Plan& plan) {
  MemoryTimeline t;
  const BuildRecord& r = plan.record;
  t.arenaBytes = r.activationBytes;
  t.weightBytes = r.weightBytes;
  const std::set<std::string> outputs(r.outputNames.begin(), r.outputNames.end());
  struct Life {
    size_t first = 0, last = 0;
    int64_t bytes = 0;
  };
  std::map<std::string, Life> lives;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerRecord& l = r.layers[i];
    for (const TensorRecord& in : l.inputs) {
      auto it = lives.find(in.name);
      if (it != lives.end()) it->second.last = i;
    }
    if (l.memoryOffset < 0) continue;  // not in the arena: an alias or host value
    for (const TensorRecord& out : l.outputs)
      if (out.location == "Device") lives[out.name] = {i, i, tensorBytes(out)};
  }
  for (const std::string& name : outputs) {
    auto it = lives.find(name);
    if (it != lives.end()) it->second.last = r.layers.empty() ? 0 : r.layers.size() - 1;
  }
  t.steps.resize(r.layers.size());
  for (size_t i = 0; i < r.layers.size(); ++i) t.steps[i].layer = r.layers[i].name;
  for (const auto& [name, life] : lives)
    for (size_t i = life.first; i <= life.last && i < t.steps.size(); ++i)
      t.steps[i].liveBytes += life.bytes;
  for (size_t i = 0; i < t.steps.size(); ++i)
    if (t.steps[i].liveBytes > t.steps[t.peakStep].liveBytes) t.peakStep = i;
  for (const auto& [name, life] : lives)
    if (!t.steps.empty() && life.first <= t.peakStep && t.peakStep <= life.last)
      t.peakTensors.push_back({name, life.bytes});
  std::stable_sort(t.peakTensors.begin(), t.peakTensors.end(),
                   [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return t;
}

std::string formatMemoryTimeline(const MemoryTimeline& t) {
  std::ostringstream s;
  const int64_t peak = t.steps.empty() ? 0 : t.steps[t.peakStep].liveBytes;
  // MiB for engines whose peak reaches one, KiB below.
  const int64_t unit = peak >= (1 << 20) ? (1 << 20) : (1 << 10);
  const char* name = unit == (1 << 20) ? "MiB" : "KiB";
  s << "memory timeline: activations alive per layer (" << name
    << ", at the build's opt shapes; weights " << inUnit(t.weightBytes, unit) << " " << name
    << " apart)\n";
  for (size_t i = 0; i < t.steps.size(); ++i) {
    const int bar = peak > 0 ? static_cast<int>(40.0 * t.steps[i].liveBytes / peak + 0.5) : 0;
    char line[64];
    std::snprintf(line, sizeof(line), "%5zu %10s  ", i, inUnit(t.steps[i].liveBytes, unit).c_str());
    s << line << std::string(static_cast<size_t>(bar), '#') << "  " << t.steps[i].layer << "\n";
  }
  if (t.steps.empty()) return s.str() + "no layers\n";
  s << "peak: " << inUnit(peak, unit) << " " << name << " alive at layer " << t.peakStep << " '"
    << t.steps[t.peakStep].layer << "'; the planner's arena: " << inUnit(t.arenaBytes, unit) << " "
    << name << " (packing included)\nat the peak:";
  for (size_t i = 0; i < t.peakTensors.size() && i < 8; ++i)
    s << (i ? ", " : " ") << t.peakTensors[i].name << " " << inUnit(t.peakTensors[i].bytes, unit);
  if (t.peakTensors.size() > 8) s << " and " << t.peakTensors.size() - 8 << " more";
  return s.str() + "\n";
}

}  // namespace kiln::inspector
