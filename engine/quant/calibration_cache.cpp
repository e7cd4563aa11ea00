// The calibration cache text format (kiln/calibration.h has the grammar): a line
// tokenizer that understands quoted names, the parser with one-line errors naming
// the file and line, and the writer whose output the parser reads back unchanged.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "kiln/calibration.h"
#include "kiln/file_io.h"

namespace kiln {
namespace {

constexpr const char* kMagic = "kiln-calibration";
constexpr int kVersion = 1;

// Splits a line into tokens: whitespace separates, '#' outside quotes ends the line,
// "..." is one token with \" and \\ escapes. False (with `error`) on an open quote.
bool tokenize(const std::string& line, std::vector<std::string>* tokens, std::string* error) {
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') break;
    std::string token;
    if (c == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '\\' && i + 1 < line.size()) {
          token += line[i + 1];
          i += 2;
        } else if (line[i] == '"') {
          closed = true;
          ++i;
          break;
        } else {
          token += line[i++];
        }
      }
      if (!closed) {
        *error = "unterminated quoted name";
        return false;
      }
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' &&
             line[i] != '#')
        token += line[i++];
    }
    tokens->push_back(token);
  }
  return true;
}

std::string quoteIfNeeded(const std::string& name) {
  bool plain = !name.empty();
  for (char c : name)
    plain = plain && c != ' ' && c != '\t' && c != '"' && c != '\\' && c != '#' && c != '\r' &&
            c != '\n';
  if (plain) return name;
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool parsePositive(const std::string& text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0) return false;
  *out = v;
  return true;
}

// One "tensor NAME AMAX" or "tensor NAME pin fp16|fp32" line.
Status parseTensorLine(const std::vector<std::string>& t, CalibrationTable* table) {
  if (t.size() == 4 && t[2] == "pin") {
    TensorRange range;
    if (t[3] == "fp32") {
      range.pinned = DataType::kFloat32;
    } else if (t[3] == "fp16") {
      range.pinned = DataType::kFloat16;
    } else {
      return invalidArgument("tensor '" + t[1] + "': pin '" + t[3] + "' must be fp16 or fp32");
    }
    table->tensors[t[1]] = range;
    return Status::ok();
  }
  if (t.size() != 3)
    return invalidArgument("expected 'tensor NAME AMAX' or 'tensor NAME pin fp16|fp32'");
  TensorRange range;
  if (!parsePositive(t[2], &range.amax))
    return invalidArgument("tensor '" + t[1] + "': range '" + t[2] +
                           "' must be a positive finite number");
  table->tensors[t[1]] = range;
  return Status::ok();
}

Status parseLine(const std::vector<std::string>& t, CalibrationTable* table) {
  const std::string& key = t[0];
  if (key == "tensor" && t.size() >= 2) return parseTensorLine(t, table);
  if (key == "method" && t.size() >= 2) {
    table->method = t[1];
    for (size_t i = 2; i < t.size(); ++i) table->method += " " + t[i];
    return Status::ok();
  }
  if (key == "samples" && t.size() == 2) {
    char* end = nullptr;
    const long v = std::strtol(t[1].c_str(), &end, 10);
    if (*end != '\0' || v < 0) return invalidArgument("samples '" + t[1] + "' is not a count");
    table->samples = static_cast<int>(v);
    return Status::ok();
  }
  if (key == "preprocessing" && t.size() == 2) {
    table->preprocessingFile = t[1];
    return Status::ok();
  }
  return invalidArgument("unknown entry '" + key +
                         "' (expected tensor, method, samples or preprocessing)");
}

}  // namespace

const TensorRange* CalibrationTable::find(const std::string& tensor) const {
  auto it = tensors.find(tensor);
  return it == tensors.end() ? nullptr : &it->second;
}

Result<CalibrationTable> parseCalibrationCache(const std::string& text,
                                               const std::string& displayName) {
  const std::string where = "calibration cache '" + displayName + "'";
  if (text.find('\0') != std::string::npos)
    return parseError(where + ": binary data, not a calibration cache");
  std::istringstream in(text);
  std::string line;
  int lineNumber = 0;
  bool sawHeader = false;
  CalibrationTable table;
  while (std::getline(in, line)) {
    ++lineNumber;
    std::vector<std::string> tokens;
    std::string error;
    const std::string at = where + " line " + std::to_string(lineNumber);
    if (!tokenize(line, &tokens, &error)) return parseError(at + ": " + error);
    if (tokens.empty()) continue;
    if (!sawHeader) {
      if (tokens[0] != kMagic)
        return parseError(where + ": not a calibration cache (the first entry must be '" + kMagic +
                          " 1')");
      if (tokens.size() != 2 || tokens[1] != std::to_string(kVersion))
        return parseError(at + ": unsupported cache version (this Kiln reads version 1)");
      sawHeader = true;
      continue;
    }
    Status status = parseLine(tokens, &table);
    if (!status.isOk()) return parseError(at + ": " + status.message());
  }
  if (!sawHeader) return parseError(where + ": empty file, not a calibration cache");
  if (table.tensors.empty()) return parseError(where + ": no tensor entries");
  return table;
}

Result<CalibrationTable> loadCalibrationCache(const std::string& path) {
  Result<std::string> bytes = readRegularFile(path, kMaxTextFileBytes);
  if (!bytes.isOk() && bytes.status().code() == StatusCode::kNotFound)
    return notFound("cannot open calibration cache '" + path + "'");
  if (!bytes.isOk()) return bytes.status().withContext("calibration cache");
  return parseCalibrationCache(bytes.value(), path);
}

std::string formatCalibrationCache(const CalibrationTable& table) {
  std::ostringstream out;
  out << kMagic << " " << kVersion << "\n";
  out << "# Kiln INT8 calibration cache: one symmetric range (amax) per tensor, scale = amax "
         "/ 127.\n# Edit a range, or write 'pin fp16' / 'pin fp32' to keep a tensor in float.\n";
  if (!table.method.empty()) out << "method " << table.method << "\n";
  out << "samples " << table.samples << "\n";
  if (!table.preprocessingFile.empty())
    out << "preprocessing " << quoteIfNeeded(table.preprocessingFile) << "\n";
  for (const auto& [name, range] : table.tensors) {
    out << "tensor " << quoteIfNeeded(name) << " ";
    if (range.pinned == DataType::kFloat32) {
      out << "pin fp32\n";
    } else if (range.pinned == DataType::kFloat16) {
      out << "pin fp16\n";
    } else if (range.amax > 0) {
      char text[40];
      std::snprintf(text, sizeof text, "%.9g", range.amax);
      out << text << "\n";
    } else {
      // A tensor that was always zero: no range to quantize with, so it stays float.
      out << "pin fp32  # always zero during calibration\n";
    }
  }
  return out.str();
}

Status saveCalibrationCache(const CalibrationTable& table, const std::string& path) {
  return writeFileAtomically(path, formatCalibrationCache(table), "the calibration cache");
}

}  // namespace kiln
