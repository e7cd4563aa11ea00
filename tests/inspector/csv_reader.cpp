#include "inspector/csv_reader.h"

namespace kiln::test {

bool readCsv(const std::string& text, std::vector<std::vector<std::string>>* rows,
             std::string* error) {
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, wasQuoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      if (!field.empty() || wasQuoted) {
        *error = "stray quote at byte " + std::to_string(i);
        return false;
      }
      quoted = wasQuoted = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      wasQuoted = false;
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      row.push_back(field);
      rows->push_back(row);
      row.clear();
      field.clear();
      wasQuoted = false;
    } else {
      field += c;
    }
  }
  if (quoted) {
    *error = "unterminated quoted field";
    return false;
  }
  if (!field.empty() || !row.empty()) {
    row.push_back(field);
    rows->push_back(row);
  }
  return true;
}

}  // namespace kiln::test
