#include "kiln/json_reader.h"

#include <algorithm>
#include <limits>

#include "kiln/file_io.h"

namespace kiln {
namespace {
using nlohmann::json;

// The deepest nesting of `text`'s arrays and objects, strings skipped; stops
// counting once past `limit`.
int nestingDepth(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) break;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

template <class T>
struct Kind;
template <>
struct Kind<std::string> {
  static constexpr const char* kName = "a string";
  static bool holds(const json& v) { return v.is_string(); }
};
template <>
struct Kind<bool> {
  static constexpr const char* kName = "true or false";
  static bool holds(const json& v) { return v.is_boolean(); }
};
template <>
struct Kind<double> {
  static constexpr const char* kName = "a number";
  static bool holds(const json& v) { return v.is_number(); }
};
template <>
struct Kind<json> {
  static constexpr const char* kName = "a value";
  static bool holds(const json&) { return true; }
};
template <class Int>
struct IntKind {
  static constexpr const char* kName = "an integer";
  static bool holds(const json& v) {
    if (v.is_number_unsigned())
      return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
    if (!v.is_number_integer()) return false;
    const int64_t i = v.get<int64_t>();
    return i >= std::numeric_limits<Int>::min() && i <= std::numeric_limits<Int>::max();
  }
};
template <>
struct Kind<int> : IntKind<int> {};
template <>
struct Kind<int64_t> : IntKind<int64_t> {};

std::string quoteKey(const std::string& key) {
  return "'" + key + "'";
}

}  // namespace

std::string describeJsonValue(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case json::value_t::string: {
      std::string s = value.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return "the string \"" + s + "\"";
    }
    default:
      return "the number " + value.dump();
  }
}

Result<json> parseJsonText(const std::string& text, const std::string& origin, int maxDepth) {
  if (nestingDepth(text, maxDepth) > maxDepth)
    return parseError(origin + ": JSON nested deeper than " + std::to_string(maxDepth) + " levels");
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) return doc;
  // Parse again for the message only: the failure path is rare.
  try {
    const json again = json::parse(text);
    (void)again;
  } catch (const json::exception& e) {
    std::string what = e.what();
    const size_t tag = what.find("] ");
    if (tag != std::string::npos) what = what.substr(tag + 2);
    return parseError(origin + ": not valid JSON: " + what);
  }
  return parseError(origin + ": not valid JSON");
}

Result<json> readJsonFile(const std::string& path, int maxDepth) {
  KILN_ASSIGN_OR_RETURN(std::string text, readRegularFile(path, kMaxTextFileBytes));
  return parseJsonText(text, path, maxDepth);
}

Result<json> readJsonDocument(const std::string& path, const std::string& what) {
  Result<json> parsed = readJsonFile(path);
  if (!parsed.isOk() && parsed.status().code() == StatusCode::kNotFound)
    return notFound(path + ": " + what + " not found");
  return parsed;
}

template <class T>
Result<T> jsonMember(const json& object, const std::string& key, const std::string& where) {
  if (!object.is_object()) return parseError(where + " is not an object");
  auto it = object.find(key);
  if (it == object.end()) return parseError(where + ": " + quoteKey(key) + " is missing");
  if (!Kind<T>::holds(*it))
    return parseError(where + ": " + quoteKey(key) + " must be " + Kind<T>::kName + ", not " +
                      describeJsonValue(*it));
  return it->template get<T>();
}

template <class T>
Result<T> jsonMemberOr(const json& object, const std::string& key, T fallback,
                       const std::string& where) {
  if (object.is_object() && !object.contains(key)) return fallback;
  return jsonMember<T>(object, key, where);
}

#define KILN_JSON_MEMBER(T)                                                              \
  template Result<T> jsonMember<T>(const json&, const std::string&, const std::string&); \
  template Result<T> jsonMemberOr<T>(const json&, const std::string&, T, const std::string&);
KILN_JSON_MEMBER(std::string)
KILN_JSON_MEMBER(bool)
KILN_JSON_MEMBER(int)
KILN_JSON_MEMBER(int64_t)
KILN_JSON_MEMBER(double)
KILN_JSON_MEMBER(json)
#undef KILN_JSON_MEMBER

}  // namespace kiln
