// A small command-line parser: positional arguments, `--key value`, `--key=value`
// and boolean `--flag`s. Options must be declared so typos are errors.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::cli {

class Args {
 public:
  // `valued` options take a value; `flags` do not; repeated valued options accumulate.
  Args(std::set<std::string> valued, std::set<std::string> flags);
  Status parse(const std::vector<std::string>& argv);

  const std::vector<std::string>& positional() const { return m_positional; }
  bool flag(const std::string& name) const { return m_flags.count(name) != 0; }
  bool has(const std::string& name) const { return m_values.count(name) != 0; }
  std::string value(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> values(const std::string& name) const;
  Status intValue(const std::string& name, int64_t fallback, int64_t* out) const;
  Status doubleValue(const std::string& name, double fallback, double* out) const;

 private:
  std::set<std::string> m_valued, m_knownFlags;
  std::vector<std::string> m_positional;
  std::set<std::string> m_flags;
  std::map<std::string, std::vector<std::string>> m_values;
};

// Takes every `--NAME VALUE` / `--NAME=VALUE` out of `args` (a global option, given
// anywhere on the line, that no command sees) and appends the values to `values`.
// Fails, naming the option, when the last one has no value.
Status takeGlobalOption(std::vector<std::string>* args, const std::string& name,
                        std::vector<std::string>* values);

// Splits "a,b,c" on commas (empty items dropped).
std::vector<std::string> splitList(const std::string& text, char separator = ',');

}  // namespace kiln::cli
