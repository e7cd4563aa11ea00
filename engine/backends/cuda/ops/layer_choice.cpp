#include "backends/cuda/ops/layer_choice.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace kiln::cuda {
namespace {

constexpr size_t kMaxKnobs = 64;
constexpr int64_t kMaxKnobType = 1024;
constexpr int64_t kMaxEngine = int64_t{1} << 20;
constexpr int64_t kMaxChannels = 4096;

// A whole decimal integer in [lo, hi].
bool readInteger(const std::string& text, int64_t lo, int64_t hi, int64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size() || value < lo || value > hi) return false;
  *out = value;
  return true;
}

// Lower-case letters, digits, '_' and ':' (as in "mma:128x128"), 1..64 of them.
bool isFormWord(const std::string& word) {
  if (word.empty() || word.size() > 64) return false;
  for (char c : word)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ':')) return false;
  return true;
}

bool readKnobs(const std::string& list, std::vector<std::pair<int64_t, int64_t>>* knobs) {
  if (list.empty()) return true;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t colon = item.find(':');
    int64_t type = 0, value = 0;
    if (colon == std::string::npos || knobs->size() >= kMaxKnobs ||
        !readInteger(item.substr(0, colon), 0, kMaxKnobType, &type) ||
        !readInteger(item.substr(colon + 1), INT64_MIN, INT64_MAX, &value))
      return false;
    knobs->push_back({type, value});
  }
  return list.back() != ',';
}

}  // namespace

std::string encodeLayerChoice(const LayerChoice& choice) {
  std::ostringstream out;
  out << choice.form;
  if (choice.paddedChannels > 0) out << " pad=" << choice.paddedChannels;
  if (choice.groups > 0) out << " groups=" << choice.groups;
  if (choice.hasEngine) {
    out << " engine=" << choice.engine.engine << (choice.engine.runtimeCompiled ? " rtc" : "")
        << " knobs=";
    for (size_t i = 0; i < choice.engine.knobs.size(); ++i)
      out << (i ? "," : "") << choice.engine.knobs[i].first << ':' << choice.engine.knobs[i].second;
  }
  return out.str();
}

bool parseLayerChoice(const std::string& text, LayerChoice* out) {
  if (text.size() > 4096) return false;
  std::istringstream in(text);
  LayerChoice c;
  if (!(in >> c.form) || !isFormWord(c.form)) return false;
  bool seenPad = false, seenGroups = false, seenRtc = false, seenKnobs = false;
  std::string token;
  while (in >> token) {
    const size_t eq = token.find('=');
    const std::string name = token.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : token.substr(eq + 1);
    int64_t number = 0;
    if (name == "pad" && !seenPad && readInteger(value, 1, kMaxChannels, &number)) {
      c.paddedChannels = static_cast<int>(number);
      seenPad = true;
    } else if (name == "groups" && !seenGroups && readInteger(value, 2, kMaxChannels, &number)) {
      c.groups = number;
      seenGroups = true;
    } else if (name == "engine" && !c.hasEngine && readInteger(value, 0, kMaxEngine, &number)) {
      c.engine.engine = number;
      c.hasEngine = true;
    } else if (token == "rtc" && c.hasEngine && !seenRtc) {
      c.engine.runtimeCompiled = true;
      seenRtc = true;
    } else if (name == "knobs" && eq != std::string::npos && c.hasEngine && !seenKnobs &&
               readKnobs(value, &c.engine.knobs)) {
      seenKnobs = true;
    } else {
      return false;
    }
  }
  *out = std::move(c);
  return true;
}

bool sameEngineChoice(const CudnnEngineChoice& a, const CudnnEngineChoice& b) {
  return a.engine == b.engine && a.knobs == b.knobs && a.runtimeCompiled == b.runtimeCompiled;
}

}  // namespace kiln::cuda
