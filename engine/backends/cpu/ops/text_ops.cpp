// The opset-20 string ops: StringConcat (broadcasting concatenation), StringSplit (Python
// str.split semantics, padded to a common count) and RegexFullMatch.
#include <regex>
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {
namespace {

Status requireStrings(const KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.type() != DataType::kString) {
    return ctx.error(std::string("input ") + name + " must be a string tensor, got " +
                     dataTypeName(t.type()));
  }
  return Status::ok();
}

Status stringConcatKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  KILN_RETURN_IF_ERROR(requireStrings(ctx, x, "X"));
  KILN_RETURN_IF_ERROR(requireStrings(ctx, y, "Y"));
  Shape shape;
  if (!broadcastShapes(x.shape(), y.shape(), &shape).isOk()) {
    return ctx.error("cannot broadcast " + shapeToString(x.shape()) + " with " +
                     shapeToString(y.shape()));
  }
  Tensor& out = ctx.allocateOutput(0, DataType::kString, shape);
  const auto& xs = x.strings();
  const auto& ys = y.strings();
  auto& dst = out.strings();
  forEachBroadcast(
      shape, {broadcastStrides(x.shape(), shape), broadcastStrides(y.shape(), shape)},
      [&](int64_t i, const std::vector<int64_t>& off) { dst[i] = xs[off[0]] + ys[off[1]]; });
  return Status::ok();
}

// Python's str.isspace for ASCII: space, \t \n \v \f \r and the separators 0x1c-0x1f.
bool isSpace(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

// str.split(): runs of whitespace separate, leading and trailing whitespace is dropped;
// after maxSplit splits the rest (without its leading whitespace) is the last part.
std::vector<std::string> splitOnWhitespace(const std::string& s, int64_t maxSplit) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (true) {
    while (i < s.size() && isSpace(s[i])) ++i;
    if (i == s.size()) break;
    if (maxSplit >= 0 && static_cast<int64_t>(parts.size()) == maxSplit) {
      parts.push_back(s.substr(i));
      break;
    }
    size_t end = i;
    while (end < s.size() && !isSpace(s[end])) ++end;
    parts.push_back(s.substr(i, end - i));
    i = end;
  }
  return parts;
}

// str.split(delimiter): every occurrence separates, so neighbours give empty parts.
std::vector<std::string> splitOnDelimiter(const std::string& s, const std::string& delimiter,
                                          int64_t maxSplit) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (maxSplit < 0 || static_cast<int64_t>(parts.size()) < maxSplit) {
    const size_t at = s.find(delimiter, start);
    if (at == std::string::npos) break;
    parts.push_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

// Outputs: substrings [X's shape..., max count] padded with "", and the int64 counts.
Status stringSplitKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  KILN_RETURN_IF_ERROR(requireStrings(ctx, x, "X"));
  const std::string delimiter = ctx.node().attrString("delimiter", "");
  const int64_t maxSplit = ctx.node().hasAttr("maxsplit") ? ctx.node().attrInt("maxsplit", -1) : -1;
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(x.numel()));
  size_t widest = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string& s = x.strings()[i];
    parts[i] = delimiter.empty() ? splitOnWhitespace(s, maxSplit)
                                 : splitOnDelimiter(s, delimiter, maxSplit);
    widest = std::max(widest, parts[i].size());
  }
  Shape outShape = x.shape();
  outShape.push_back(static_cast<int64_t>(widest));
  Tensor& substrings = ctx.allocateOutput(0, DataType::kString, outShape);
  for (size_t i = 0; i < parts.size(); ++i) {
    for (size_t k = 0; k < widest; ++k) {
      substrings.strings()[i * widest + k] = k < parts[i].size() ? parts[i][k] : std::string();
    }
  }
  if (ctx.wantsOutput(1)) {
    Tensor& lengths = ctx.allocateOutput(1, DataType::kInt64, x.shape());
    for (size_t i = 0; i < parts.size(); ++i)
      lengths.data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
  }
  return Status::ok();
}

// ONNX specifies RE2 syntax; std::regex's ECMAScript grammar agrees on the common subset
// (classes, \w \d \s \b, groups, alternation, counted repetition).
Status regexFullMatchKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  KILN_RETURN_IF_ERROR(requireStrings(ctx, x, "X"));
  if (!ctx.node().hasAttr("pattern")) return ctx.error("attribute 'pattern' is required");
  const std::string pattern = ctx.node().attrString("pattern", "");
  std::regex regex;
  try {
    regex = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return ctx.error("attribute 'pattern' '" + pattern + "' is not a valid regex: " + e.what());
  }
  Tensor& y = ctx.allocateOutput(0, DataType::kBool, x.shape());
  bool* out = y.data<bool>();
  try {
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = std::regex_match(x.strings()[i], regex);
  } catch (const std::regex_error& e) {  // e.g. error_complexity on pathological input
    return ctx.error(std::string("matching failed: ") + e.what());
  }
  return Status::ok();
}

}  // namespace

void registerTextKernels(KernelRegistry& registry) {
  registry.add("StringConcat", 20, 1000, &stringConcatKernel);
  registry.add("StringSplit", 20, 1000, &stringSplitKernel);
  registry.add("RegexFullMatch", 20, 1000, &regexFullMatchKernel);
}

}  // namespace kiln::cpu
