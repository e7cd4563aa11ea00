// TimingCache file I/O: {"format": "kiln-timing-cache", "version": 1,
// "entries": {key: {"ms": ..., "rejected": ..., "layer": ...}}}.
#include "kiln/timing_cache.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kiln {

std::optional<TimingCacheEntry> TimingCache::lookup(const std::string& key) const {
  auto it = m_entries.find(key);
  if (it == m_entries.end()) return std::nullopt;
  return it->second;
}

void TimingCache::insert(const std::string& key, const TimingCacheEntry& entry) {
  m_entries[key] = entry;
}

int TimingCache::merge(const TimingCache& other) {
  int added = 0;
  for (const auto& [key, entry] : other.m_entries) added += m_entries.emplace(key, entry).second;
  return added;
}

Result<TimingCache> TimingCache::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": timing cache file not found");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return parseError(path + ": not a timing cache (not JSON)");
  if (doc.value("format", "") != kFormat)
    return parseError(path + ": not a timing cache (format is not '" + kFormat + "')");
  if (!doc.contains("version") || !doc["version"].is_number_integer() ||
      doc["version"].get<int>() != kVersion) {
    return parseError(
        path + ": timing cache version " + (doc.contains("version") ? doc["version"].dump() : "?") +
        " is not supported (this build reads version " + std::to_string(kVersion) + ")");
  }
  const nlohmann::json& entries = doc["entries"];
  if (!entries.is_object()) return parseError(path + ": timing cache has no 'entries' object");
  TimingCache cache;
  for (const auto& [key, value] : entries.items()) {
    if (!value.is_object() || !value.contains("ms") || !value["ms"].is_number()) {
      return parseError(path + ": timing cache entry '" + key + "' has no numeric 'ms'");
    }
    TimingCacheEntry entry;
    entry.milliseconds = value["ms"].get<double>();
    if (value.contains("rejected") && value["rejected"].is_string())
      entry.rejected = value["rejected"].get<std::string>();
    if (value.contains("layer") && value["layer"].is_string())
      entry.layer = value["layer"].get<std::string>();
    if (value.contains("detail") && value["detail"].is_string())
      entry.detail = value["detail"].get<std::string>();
    cache.insert(key, entry);
  }
  return cache;
}

Status TimingCache::save(const std::string& path) const {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [key, entry] : m_entries) {
    nlohmann::json value = {{"ms", entry.milliseconds}, {"layer", entry.layer}};
    if (!entry.rejected.empty()) value["rejected"] = entry.rejected;
    if (!entry.detail.empty()) value["detail"] = entry.detail;
    entries[key] = value;
  }
  nlohmann::json doc = {{"format", kFormat}, {"version", kVersion}, {"entries", entries}};
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status(StatusCode::kIoError, path + ": cannot write the timing cache");
  out << doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!out) return Status(StatusCode::kIoError, path + ": writing the timing cache failed");
  return Status::ok();
}

}  // namespace kiln
