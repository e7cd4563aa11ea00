// kiln/json_reader.h and the Status escaping: untrusted JSON is parsed with a depth
// limit and read through typed lookups whose errors name the file and the key;
// control characters never reach a message.
#include <gtest/gtest.h>

#include "kiln/json_reader.h"

namespace kiln {
namespace {
using nlohmann::json;

std::string nested(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(JsonReader, RefusesDeepNestingBeforeParsing) {
  Result<json> deep = parseJsonText(nested(100000), "x.json");
  ASSERT_FALSE(deep.isOk());
  EXPECT_EQ(deep.status().message(), "x.json: JSON nested deeper than 64 levels");
  EXPECT_TRUE(parseJsonText(nested(64), "x.json").isOk());
  EXPECT_FALSE(parseJsonText(nested(65), "x.json").isOk());
  // Brackets inside strings do not count; escaped quotes do not end a string.
  EXPECT_TRUE(parseJsonText("{\"a\": \"" + std::string(1000, '[') + "\\\"\"}", "x.json").isOk());
}

TEST(JsonReader, SyntaxErrorsNameTheFile) {
  Result<json> bad = parseJsonText("{\"a\": ", "y.json");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message().rfind("y.json: not valid JSON: ", 0), 0u)
      << bad.status().message();
}

TEST(JsonReader, TypedMembers) {
  const json doc = json::parse(R"({"format": 5, "version": "1", "n": 3, "x": 1.5,
                                   "big": 9223372036854775807, "ok": true, "s": "t"})");
  EXPECT_EQ(jsonMember<int>(doc, "n", "f.json").value(), 3);
  EXPECT_EQ(jsonMember<double>(doc, "x", "f.json").value(), 1.5);
  EXPECT_EQ(jsonMember<double>(doc, "n", "f.json").value(), 3.0);
  EXPECT_EQ(jsonMember<bool>(doc, "ok", "f.json").value(), true);
  EXPECT_EQ(jsonMember<std::string>(doc, "s", "f.json").value(), "t");
  EXPECT_EQ(jsonMember<std::string>(doc, "format", "f.json").status().message(),
            "f.json: 'format' must be a string, not the number 5");
  EXPECT_EQ(jsonMember<int>(doc, "version", "f.json").status().message(),
            "f.json: 'version' must be an integer, not the string \"1\"");
  EXPECT_EQ(jsonMember<int>(doc, "x", "f.json").status().message(),
            "f.json: 'x' must be an integer, not the number 1.5");
  EXPECT_FALSE(jsonMember<int>(doc, "big", "f.json").isOk());  // outside int
  EXPECT_EQ(jsonMember<int64_t>(doc, "big", "f.json").value(), INT64_MAX);
  EXPECT_EQ(jsonMember<int>(doc, "gone", "f.json").status().message(), "f.json: 'gone' is missing");
  EXPECT_EQ(jsonMember<int>(json::array(), "n", "f.json: layers").status().message(),
            "f.json: layers is not an object");
}

TEST(JsonReader, DefaultsOnlyForAbsentMembers) {
  const json doc = json::parse(R"({"note": 7})");
  EXPECT_EQ(jsonMemberOr<std::string>(doc, "other", "d", "f.json").value(), "d");
  EXPECT_EQ(jsonMemberOr<std::string>(doc, "note", "d", "f.json").status().message(),
            "f.json: 'note' must be a string, not the number 7");
}

TEST(StatusEscaping, ControlCharactersNeverReachAMessage) {
  const Status s = parseError("node 'a\nb\x1b[2J\tc\x7f' (#1, Relu): bad");
  EXPECT_EQ(s.message(), "node 'a\\nb\\x1b[2J\\tc\\x7f' (#1, Relu): bad");
  // C1 controls in UTF-8 (U+009B is a one-byte CSI to some terminals); other UTF-8 stays.
  EXPECT_EQ(parseError("x\xC2\x9B"
                       "31m \xC3\xA9")
                .message(),
            "x\\u009b31m \xC3\xA9");
  // Context added later is escaped too, and escaping twice changes nothing.
  EXPECT_EQ(s.withContext("m\r.onnx").message(),
            "m\\r.onnx: node 'a\\nb\\x1b[2J\\tc\\x7f' (#1, Relu): bad");
  EXPECT_EQ(escapeControlCharacters(s.message()), s.message());
}

}  // namespace
}  // namespace kiln
