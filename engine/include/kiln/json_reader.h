// Reading untrusted JSON documents (constraints, timing caches, tactics files,
// trtexec exports and profiles): a parse that refuses deep nesting before
// nlohmann sees it (its dump() and the code walking a document recurse), and
// type-checked member lookups whose errors name the file and the JSON path. None
// of these throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kiln/status.h"

namespace kiln {

// Deeper than any document Kiln or trtexec writes (trtexec's are 4 levels).
constexpr int kMaxJsonDepth = 64;

// Parses `text`. Errors start with `origin` (the file): "x.json: not valid JSON:
// syntax error ... at line 1, column 3", "x.json: JSON nested deeper than 64 levels".
Result<nlohmann::json> parseJsonText(const std::string& text, const std::string& origin,
                                     int maxDepth = kMaxJsonDepth);

// readRegularFile (kMaxTextFileBytes) + parseJsonText.
Result<nlohmann::json> readJsonFile(const std::string& path, int maxDepth = kMaxJsonDepth);

// readJsonFile for a file the user named as a `what` ("timing cache file"): a missing
// file is kNotFound "PATH: WHAT not found".
Result<nlohmann::json> readJsonDocument(const std::string& path, const std::string& what);

// The member `key` of `object` as T (std::string, bool, int, int64_t, double or
// nlohmann::json for any value). `where` names the object ("t.json: layers['c1']").
// Errors: "WHERE: 'key' is missing", "WHERE: 'key' must be an integer, not the
// string \"1\"", "WHERE is not an object". An integer outside T's range is an error.
template <class T>
Result<T> jsonMember(const nlohmann::json& object, const std::string& key,
                     const std::string& where);

// As jsonMember, but `fallback` when `key` is absent. A member of the wrong type is
// still an error: a typo'd value is never silently replaced by the default.
template <class T>
Result<T> jsonMemberOr(const nlohmann::json& object, const std::string& key, T fallback,
                       const std::string& where);

// A short, escaped rendering of `value` for error messages ("the string \"1\"",
// "the number 5", "an array").
std::string describeJsonValue(const nlohmann::json& value);

}  // namespace kiln
