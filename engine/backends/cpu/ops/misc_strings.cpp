// StringNormalizer: drops stop words from a [C] or [1, C] string tensor and changes
// the case of what is left (ONNX Runtime semantics: each element is one word).
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/ops/misc.h"

namespace kiln::cpu {
namespace {

enum class CaseAction { kNone, kLower, kUpper };

// Lower-case counterpart of a code point in the ranges Kiln maps: ASCII, Latin-1,
// Latin Extended-A, basic Greek and Cyrillic. Others map to themselves. Locale
// independent on purpose, so results do not depend on the host's settings.
uint32_t toLowerCodePoint(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0xC0) return c;
  if (c <= 0xDE) return c == 0xD7 ? c : c + 32;
  if (c >= 0x100 && c <= 0x137) return c % 2 == 0 ? c + 1 : c;
  if (c >= 0x139 && c <= 0x148) return c % 2 == 1 ? c + 1 : c;
  if (c >= 0x14A && c <= 0x177) return c % 2 == 0 ? c + 1 : c;
  if (c == 0x178) return 0xFF;
  if (c >= 0x179 && c <= 0x17E) return c % 2 == 1 ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9) return c == 0x3A2 ? c : c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  return c;
}

uint32_t toUpperCodePoint(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0xE0) return c;
  if (c <= 0xFE) return c == 0xF7 ? c : c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x101 && c <= 0x137) return c % 2 == 1 ? c - 1 : c;
  if (c >= 0x13A && c <= 0x148) return c % 2 == 0 ? c - 1 : c;
  if (c >= 0x14B && c <= 0x177) return c % 2 == 1 ? c - 1 : c;
  if (c >= 0x17A && c <= 0x17E) return c % 2 == 0 ? c - 1 : c;
  if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? c : c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

// Applies the case mapping to UTF-8 text. Every mapped code point is below U+0800,
// so only one- and two-byte sequences change; other bytes (and malformed input)
// pass through untouched.
std::string changeCase(const std::string& text, CaseAction action) {
  if (action == CaseAction::kNone) return text;
  auto map = action == CaseAction::kLower ? &toLowerCodePoint : &toUpperCodePoint;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) {
      out.push_back(static_cast<char>(map(b0)));
      continue;
    }
    const bool twoByte = b0 >= 0xC2 && b0 <= 0xDF && i + 1 < text.size() &&
                         (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80;
    if (!twoByte) {
      out.push_back(text[i]);
      continue;
    }
    const uint32_t c = map(((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu));
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    ++i;
  }
  return out;
}

Status parseCaseAction(const KernelContext& ctx, CaseAction* action) {
  const std::string text = ctx.node().attrString("case_change_action", "NONE");
  if (text == "NONE")
    *action = CaseAction::kNone;
  else if (text == "LOWER")
    *action = CaseAction::kLower;
  else if (text == "UPPER")
    *action = CaseAction::kUpper;
  else
    return ctx.error("case_change_action must be NONE, LOWER or UPPER, got '" + text + "'");
  return Status::ok();
}

Status stringNormalizerKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kString) return ctx.error("input X must be a string tensor");
  const bool twoDim = x.rank() == 2;
  if (!(x.rank() == 1 || (twoDim && x.dim(0) == 1))) {
    return ctx.error("input X must be [C] or [1, C], got " + shapeToString(x.shape()));
  }
  CaseAction action = CaseAction::kNone;
  KILN_RETURN_IF_ERROR(parseCaseAction(ctx, &action));
  const bool caseSensitive = ctx.node().attrInt("is_case_sensitive", 0) != 0;
  // Case-insensitive matching compares lower-cased forms of both sides.
  auto key = [&](const std::string& s) {
    return caseSensitive ? s : changeCase(s, CaseAction::kLower);
  };
  std::set<std::string> stopwords;
  for (const std::string& w : ctx.node().attrStrings("stopwords")) stopwords.insert(key(w));

  std::vector<std::string> kept;
  for (const std::string& s : x.strings()) {
    if (stopwords.count(key(s)) == 0) kept.push_back(changeCase(s, action));
  }
  // An all-stop-word input still yields one (empty) element, as ONNX Runtime does.
  if (kept.empty()) kept.emplace_back();
  const int64_t count = static_cast<int64_t>(kept.size());
  Tensor& out = ctx.allocateOutput(0, DataType::kString, twoDim ? Shape{1, count} : Shape{count});
  out.strings() = std::move(kept);
  return Status::ok();
}

}  // namespace

void registerStringNormalizerKernels(KernelRegistry& registry) {
  registry.add("StringNormalizer", 10, 1000, &stringNormalizerKernel);
}

}  // namespace kiln::cpu
