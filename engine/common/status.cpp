#include "kiln/status.h"

#include <cstdio>

namespace kiln {

std::string escapeControlCharacters(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  char code[8];
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c == 0xC2 && next >= 0x80 && next <= 0x9F) {  // a C1 control in UTF-8
      std::snprintf(code, sizeof code, "\\u%04x", next);
      out += code;
      ++i;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(code, sizeof code, "\\x%02x", c);
      out += code;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

const char* statusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kParseError:
      return "parse error";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kOutOfRange:
      return "out of range";
    case StatusCode::kIoError:
      return "i/o error";
    case StatusCode::kCancelled:
      return "cancelled";
    case StatusCode::kOutOfMemory:
      return "out of memory";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

Status Status::withContext(const std::string& context) const {
  if (isOk()) return *this;
  Status out(m_code, context + ": " + m_message);
  out.m_detail = m_detail;
  return out;
}

const StatusNode* Status::node() const {
  return m_detail && m_detail->node ? &*m_detail->node : nullptr;
}

const std::string& Status::tensor() const {
  static const std::string kNone;
  return m_detail ? m_detail->tensor : kNone;
}

const std::string& Status::layer() const {
  static const std::string kNone;
  return m_detail ? m_detail->layer : kNone;
}

// Fills the fields this status lacks from `extra`; the ones it has stay.
Status Status::withDetail(const Detail& extra) const {
  if (isOk()) return *this;
  Detail merged = m_detail ? *m_detail : Detail{};
  if (!merged.node) merged.node = extra.node;
  if (merged.tensor.empty()) merged.tensor = extra.tensor;
  if (merged.layer.empty()) merged.layer = extra.layer;
  Status out = *this;
  out.m_detail = std::make_shared<const Detail>(std::move(merged));
  return out;
}

Status Status::withNode(StatusNode node) const {
  return withDetail(Detail{std::move(node), {}, {}});
}

Status Status::withTensor(const std::string& tensor) const {
  return withDetail(Detail{{}, tensor, {}});
}

Status Status::withLayer(const std::string& layer) const {
  return withDetail(Detail{{}, {}, layer});
}

std::string Status::toString() const {
  if (isOk()) return "ok";
  return m_message;
}

Status invalidArgument(std::string message) {
  return {StatusCode::kInvalidArgument, std::move(message)};
}
Status unsupported(std::string message) {
  return {StatusCode::kUnsupported, std::move(message)};
}
Status notFound(std::string message) {
  return {StatusCode::kNotFound, std::move(message)};
}
Status parseError(std::string message) {
  return {StatusCode::kParseError, std::move(message)};
}
Status internalError(std::string message) {
  return {StatusCode::kInternal, std::move(message)};
}

}  // namespace kiln
