// TimingCache file I/O: {"format": "kiln-timing-cache", "version": 1,
// "entries": {key: {"ms": ..., "rejected": ..., "layer": ...}}}.
#include "kiln/timing_cache.h"

#include <nlohmann/json.hpp>

#include "kiln/build_record.h"
#include "kiln/file_io.h"
#include "kiln/json_reader.h"

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
  KILN_ASSIGN_OR_RETURN(const nlohmann::json doc, readJsonDocument(path, "timing cache file"));
  if (!doc.is_object()) return parseError(path + ": not a timing cache (not a JSON object)");
  if (!doc.contains("format") || doc["format"] != kFormat)
    return parseError(path + ": not a timing cache (format is not '" + kFormat + "')");
  if (!doc.contains("version") || doc["version"] != kVersion) {
    return parseError(path + ": timing cache version " +
                      (doc.contains("version") ? describeJsonValue(doc["version"]) : "?") +
                      " is not supported (this build reads version " + std::to_string(kVersion) +
                      ")");
  }
  KILN_ASSIGN_OR_RETURN(const nlohmann::json entries,
                        jsonMember<nlohmann::json>(doc, "entries", path));
  if (!entries.is_object()) return parseError(path + ": timing cache has no 'entries' object");
  TimingCache cache;
  for (const auto& [key, value] : entries.items()) {
    const std::string where = path + ": entry '" + key + "'";
    TimingCacheEntry entry;
    KILN_ASSIGN_OR_RETURN(entry.milliseconds, jsonMember<double>(value, "ms", where));
    KILN_ASSIGN_OR_RETURN(entry.rejected, jsonMemberOr<std::string>(value, "rejected", "", where));
    KILN_ASSIGN_OR_RETURN(entry.layer, jsonMemberOr<std::string>(value, "layer", "", where));
    KILN_ASSIGN_OR_RETURN(entry.detail, jsonMemberOr<std::string>(value, "detail", "", where));
    KILN_ASSIGN_OR_RETURN(entry.choice, jsonMemberOr<std::string>(value, "choice", "", where));
    if (!isWellFormedChoice(entry.choice))
      return parseError(where + ": 'choice' is not printable text of at most " +
                        std::to_string(kMaxChoiceBytes) + " bytes");
    KILN_ASSIGN_OR_RETURN(const nlohmann::json choices,
                          jsonMemberOr(value, "choices", nlohmann::json::array(), where));
    if (!choices.is_array() || choices.size() > kMaxOfferedChoices)
      return parseError(where + ": 'choices' must be an array of at most " +
                        std::to_string(kMaxOfferedChoices) + " choices");
    for (const nlohmann::json& choice : choices) {
      if (!choice.is_string() || choice.get<std::string>().empty() ||
          !isWellFormedChoice(choice.get<std::string>()))
        return parseError(where + ": an entry of 'choices' is not printable text of at most " +
                          std::to_string(kMaxChoiceBytes) + " bytes");
      entry.choices.push_back(choice.get<std::string>());
    }
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
    if (!entry.choice.empty()) value["choice"] = entry.choice;
    if (!entry.choices.empty()) value["choices"] = entry.choices;
    entries[key] = value;
  }
  nlohmann::json doc = {{"format", kFormat}, {"version", kVersion}, {"entries", entries}};
  return writeFileAtomically(
      path, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
      "the timing cache");
}

}  // namespace kiln
