#include "cli/args.h"

#include <sstream>

namespace kiln::cli {

Args::Args(std::set<std::string> valued, std::set<std::string> flags)
    : m_valued(std::move(valued)), m_knownFlags(std::move(flags)) {}

Status Args::parse(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      m_positional.push_back(arg);
      continue;
    }
    std::string key = arg.substr(2), value;
    const size_t eq = key.find('=');
    const bool inlineValue = eq != std::string::npos;
    if (inlineValue) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    if (m_knownFlags.count(key)) {
      if (inlineValue) return invalidArgument("option --" + key + " takes no value");
      m_flags.insert(key);
    } else if (m_valued.count(key)) {
      if (!inlineValue) {
        if (i + 1 >= argv.size()) return invalidArgument("option --" + key + " needs a value");
        value = argv[++i];
      }
      m_values[key].push_back(value);
    } else {
      return invalidArgument("unknown option --" + key);
    }
  }
  return Status::ok();
}

std::string Args::value(const std::string& name, const std::string& fallback) const {
  auto it = m_values.find(name);
  return it == m_values.end() ? fallback : it->second.back();
}

std::vector<std::string> Args::values(const std::string& name) const {
  auto it = m_values.find(name);
  return it == m_values.end() ? std::vector<std::string>{} : it->second;
}

Status Args::intValue(const std::string& name, int64_t fallback, int64_t* out) const {
  *out = fallback;
  if (!has(name)) return Status::ok();
  try {
    size_t used = 0;
    *out = std::stoll(value(name), &used);
    if (used != value(name).size()) throw std::invalid_argument(name);
  } catch (...) {
    return invalidArgument("option --" + name + " expects an integer, got '" + value(name) + "'");
  }
  return Status::ok();
}

Status Args::doubleValue(const std::string& name, double fallback, double* out) const {
  *out = fallback;
  if (!has(name)) return Status::ok();
  try {
    size_t used = 0;
    *out = std::stod(value(name), &used);
    if (used != value(name).size()) throw std::invalid_argument(name);
  } catch (...) {
    return invalidArgument("option --" + name + " expects a number, got '" + value(name) + "'");
  }
  return Status::ok();
}

Status takeGlobalOption(std::vector<std::string>* args, const std::string& name,
                        std::vector<std::string>* values) {
  const std::string option = "--" + name, prefix = option + "=";
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a == option) {
      if (i + 1 >= args->size()) return invalidArgument(option + " needs a value");
      values->push_back((*args)[++i]);
    } else if (a.rfind(prefix, 0) == 0) {
      values->push_back(a.substr(prefix.size()));
    } else {
      rest.push_back(a);
    }
  }
  *args = std::move(rest);
  return Status::ok();
}

std::vector<std::string> splitList(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, separator)) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

}  // namespace kiln::cli
