// Measured device peaks (measured_peaks.h).
#include "measured_peaks.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/file_io.h"

namespace kiln::inspector {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

double number(const json& entry, const char* key) {
  auto it = entry.find(key);
  return it != entry.end() && it->is_number() && it->get<double>() > 0 ? it->get<double>() : 0;
}

}  // namespace

std::string measuredPeaksPath() {
  if (const char* path = std::getenv("KILN_DEVICE_PEAKS"); path && *path) return path;
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && *config)
    return std::string(config) + "/kiln/device_peaks.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/kiln/device_peaks.json";
}

Result<std::map<std::string, MeasuredPeaks>> loadMeasuredPeaks(const std::string& path) {
  std::map<std::string, MeasuredPeaks> out;
  std::error_code error;
  if (!fs::exists(path, error)) return out;
  if (!fs::is_regular_file(path, error))
    return invalidArgument(path + ": the measured peaks file is not a regular file");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str(), nullptr, false);
  if (!doc.is_object() || !doc.contains("devices") || !doc["devices"].is_object())
    return invalidArgument(path +
                           ": not a measured peaks file (no \"devices\" object); "
                           "remove it and run kiln device --calibrate again");
  for (const auto& [name, entry] : doc["devices"].items()) {
    if (!entry.is_object()) return invalidArgument(path + ": device '" + name + "' is no object");
    MeasuredPeaks m;
    m.peaks.name = name;
    m.peaks.fp32Flops = number(entry, "fp32_flops");
    m.peaks.fp16Flops = number(entry, "fp16_flops");
    m.peaks.int8Ops = number(entry, "int8_ops");
    m.peaks.dramBytesPerSecond = number(entry, "dram_bytes_per_second");
    if (m.peaks.fp32Flops <= 0 || m.peaks.dramBytesPerSecond <= 0)
      return invalidArgument(path + ": device '" + name +
                             "' needs positive fp32_flops and dram_bytes_per_second");
    if (entry.contains("date") && entry["date"].is_string()) m.date = entry["date"];
    if (entry.contains("method") && entry["method"].is_string()) m.method = entry["method"];
    out[name] = m;
  }
  return out;
}

Status saveMeasuredPeaks(const MeasuredPeaks& measured, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(auto entries, loadMeasuredPeaks(path));
  entries[measured.peaks.name] = measured;
  json devices = json::object();
  for (const auto& [name, m] : entries)
    devices[name] = {{"fp32_flops", m.peaks.fp32Flops},
                     {"fp16_flops", m.peaks.fp16Flops},
                     {"int8_ops", m.peaks.int8Ops},
                     {"dram_bytes_per_second", m.peaks.dramBytesPerSecond},
                     {"date", m.date},
                     {"method", m.method}};
  std::error_code error;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, error);
  if (error) return invalidArgument(parent.string() + ": cannot create (" + error.message() + ")");
  return writeFileAtomically(path, json{{"devices", devices}}.dump(1) + "\n", "the measured peaks");
}

std::optional<MeasuredPeaks> measuredPeaksFor(const std::string& deviceName) {
  // Reread when the path or the file's modification time changes: a calibration in
  // another process shows up without a restart.
  static std::mutex mutex;
  static std::string cachedPath;
  static fs::file_time_type cachedTime;
  static std::map<std::string, MeasuredPeaks> cached;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string path = measuredPeaksPath();
  std::error_code error;
  const fs::file_time_type time = fs::last_write_time(path, error);
  if (error) return std::nullopt;  // no file: nothing measured
  if (path != cachedPath || time != cachedTime) {
    auto loaded = loadMeasuredPeaks(path);
    cached = loaded.isOk() ? std::move(*loaded) : std::map<std::string, MeasuredPeaks>{};
    cachedPath = path;
    cachedTime = time;
  }
  const std::string wanted = asciiLower(deviceName);
  for (const auto& [name, m] : cached)
    if (asciiLower(name) == wanted) return m;
  return std::nullopt;
}

}  // namespace kiln::inspector
