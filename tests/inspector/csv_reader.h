// A strict RFC 4180 reader for the tests: it reads what reportCsv writes back into
// rows of fields, so the tests check the CSV by content rather than by string.
#pragma once

#include <string>
#include <vector>

namespace kiln::test {

// Rows of fields. Quoted fields may hold commas, CR/LF and doubled quotes; rows end
// in CRLF (or LF). Returns false, with `error` set, on a stray quote or an
// unterminated quoted field.
bool readCsv(const std::string& text, std::vector<std::vector<std::string>>* rows,
             std::string* error);

}  // namespace kiln::test
