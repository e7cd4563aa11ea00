// The timing cache: measured tactic times keyed by everything that decides them
// (layer signature, shapes, precisions, formats, tactic, device and library
// versions), so a rebuild skips timing. A JSON file; load, save and merge.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln {

struct TimingCacheEntry {
  double milliseconds = 0;
  std::string rejected;  // a cached rejection ("unsupported: ...") is also a hit
  std::string layer;     // the layer it was measured for (for people reading the file)
  std::string detail;    // what the backend said about the run (its library algorithm, ...)
  std::string choice;    // the backend's choice inside the tactic (TacticCandidate::choice)
  // Every choice the tactic offered (BuildBackend::lastTimingChoices), each timed under its
  // own key (the tactic's key + "|choice=" + the choice); empty when it offered none.
  std::vector<std::string> choices;
};

class TimingCache {
 public:
  // The file's `format` field and the version this build reads and writes.
  static constexpr const char* kFormat = "kiln-timing-cache";
  static constexpr int kVersion = 1;

  std::optional<TimingCacheEntry> lookup(const std::string& key) const;
  void insert(const std::string& key, const TimingCacheEntry& entry);
  // Adds every entry of `other`; on a clash the entry already here is kept.
  // Returns the number of entries added.
  int merge(const TimingCache& other);
  size_t size() const { return m_entries.size(); }
  const std::map<std::string, TimingCacheEntry>& entries() const { return m_entries; }

  // Reads a cache file; a missing file is kNotFound, a damaged one a parse error
  // naming the file (the caller may then start empty and say so).
  static Result<TimingCache> load(const std::string& path);
  Status save(const std::string& path) const;

 private:
  std::map<std::string, TimingCacheEntry> m_entries;
};

}  // namespace kiln
