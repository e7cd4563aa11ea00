// The sweep log (JSONL, appended a whole line at a time) and the reports read from it:
// the table, the Pareto front and shell-quoted command lines.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "kiln/file_io.h"
#include "sweep.h"

namespace kiln::sweep {
namespace {

std::string number(const nlohmann::json& object, const char* field, const char* format) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_number()) return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, it->get<double>());
  return text;
}

std::string latency(const nlohmann::json& entry) {
  return number(entry.value("latency_ms", nlohmann::json::object()), "median", "%.4f");
}

// The reason or message of an entry, cut to fit a table row.
std::string note(const nlohmann::json& entry) {
  std::string text = entry.value("reason", entry.value("message", std::string()));
  const nlohmann::json slurm = entry.value("slurm", nlohmann::json::object());
  if (slurm.contains("state") && entry.value("status", "") != "accepted" &&
      entry.value("status", "") != "rejected")
    text = "slurm " + slurm.value("state", "") + (text.empty() ? "" : ": " + text);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return escapeControlCharacters(text);
}

}  // namespace

Result<Log> readLog(const std::string& path) {
  auto text = readRegularFile(path, kMaxTextFileBytes);
  if (!text.isOk()) {
    if (text.status().code() == StatusCode::kNotFound) return Log{};
    return text.status();
  }
  Log log;
  size_t start = 0;
  const std::string& all = *text;
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    if (end == std::string::npos) end = all.size();
    const std::string line = all.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
    if (entry.is_discarded() || !entry.is_object() || !entry.contains("key") ||
        !entry["key"].is_string()) {
      ++log.skippedLines;
      continue;
    }
    log.entries.push_back(std::move(entry));
  }
  return log;
}

Status appendLogLine(const std::string& path, const nlohmann::json& entry) {
  const std::string line =
      entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return Status(StatusCode::kIoError, path + ": cannot open (" + strerror(errno) + ")");
  // One write of the whole line: O_APPEND places it at the end in one piece, so a
  // reader (or a second writer) never sees half a line before this one.
  ssize_t written;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  const bool ok = written == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok) return Status(StatusCode::kIoError, path + ": cannot append (" + strerror(error) + ")");
  return Status::ok();
}

std::vector<nlohmann::json> latestByKey(const std::vector<nlohmann::json>& entries) {
  std::vector<nlohmann::json> out;
  std::map<std::string, size_t> at;
  for (const nlohmann::json& e : entries) {
    const std::string key = e.value("key", "");
    const auto it = at.find(key);
    if (it == at.end()) {
      at[key] = out.size();
      out.push_back(e);
    } else {
      out[it->second] = e;
    }
  }
  return out;
}

std::string formatTable(const std::vector<nlohmann::json>& entries) {
  size_t width = 13;
  for (const nlohmann::json& e : entries)
    width = std::max(width, escapeControlCharacters(e.value("key", "")).size());
  char row[512];
  std::string out;
  std::snprintf(row, sizeof row, "%-*s  %-9s  %10s  %10s  %9s  %s\n", static_cast<int>(width),
                "configuration", "status", "median ms", "max abs", "cosine", "note");
  out += row;
  for (const nlohmann::json& e : entries) {
    const nlohmann::json error = e.value("error", nlohmann::json::object());
    std::snprintf(row, sizeof row, "%-*s  %-9s  %10s  %10s  %9s  %s\n", static_cast<int>(width),
                  escapeControlCharacters(e.value("key", "")).c_str(),
                  e.value("status", "?").c_str(), latency(e).c_str(),
                  number(error, "max_abs", "%.3g").c_str(), number(error, "cosine", "%.6f").c_str(),
                  note(e).c_str());
    out += row;
  }
  return out;
}

std::vector<nlohmann::json> paretoFront(const std::vector<nlohmann::json>& entries,
                                        const Gate& gate) {
  struct Point {
    double latency, error;
    const nlohmann::json* entry;
  };
  std::vector<Point> points;
  for (const nlohmann::json& e : entries) {
    if (!e.value("accepted", false)) continue;
    const nlohmann::json lat = e.value("latency_ms", nlohmann::json::object());
    if (!lat.contains("median") || !lat["median"].is_number()) continue;
    points.push_back({lat["median"].get<double>(), paretoError(e, gate), &e});
  }
  // Fastest first (ties: smaller error first); a point stays when its error is below
  // every faster point's.
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
    return a.latency != b.latency ? a.latency < b.latency : a.error < b.error;
  });
  std::vector<nlohmann::json> front;
  double best = std::numeric_limits<double>::infinity();
  for (const Point& p : points) {
    if (p.error >= best) continue;
    best = p.error;
    front.push_back(*p.entry);
  }
  return front;
}

std::string formatPareto(const std::vector<nlohmann::json>& front, const Gate& gate) {
  const std::string metric = gate.terms.empty() ? "max-abs" : gate.terms[0].metric;
  const std::string label = metric == "cosine" ? "1 - cosine" : metric;
  std::string out = "Pareto front (median latency vs " + label + ", accepted only):\n";
  if (front.empty()) return out + "  (no accepted configuration)\n";
  for (const nlohmann::json& e : front) {
    char row[512];
    std::snprintf(row, sizeof row, "  %10s ms  %-10.3g  %s\n", latency(e).c_str(),
                  paretoError(e, gate), escapeControlCharacters(e.value("key", "")).c_str());
    out += row;
  }
  return out;
}

std::string shellJoin(const std::vector<std::string>& argv) {
  static const std::string kSafe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-";
  std::string out;
  for (const std::string& word : argv) {
    if (!out.empty()) out += ' ';
    if (!word.empty() && word.find_first_not_of(kSafe) == std::string::npos) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::vector<std::string> shellSplit(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord) words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\'') {  // literal up to the next quote
      const size_t end = std::min(line.find('\'', i + 1), line.size());
      word += line.substr(i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {  // backslash escapes only " \ $ ` inside double quotes
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size() &&
            std::string("\"\\$`").find(line[i + 1]) != std::string::npos)
          ++i;
        word += line[i];
      }
    } else if (c == '\\' && i + 1 < line.size()) {
      word += line[++i];
    } else {
      word += c;
    }
  }
  if (inWord) words.push_back(std::move(word));
  return words;
}

}  // namespace kiln::sweep
