#include "kiln/status.h"

namespace kiln {

const char* statusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kParseError: return "parse error";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kOutOfMemory: return "out of memory";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

Status Status::withContext(const std::string& context) const {
  if (isOk()) return *this;
  return Status(m_code, context + ": " + m_message);
}

std::string Status::toString() const {
  if (isOk()) return "ok";
  return m_message;
}

Status invalidArgument(std::string message) { return {StatusCode::kInvalidArgument, std::move(message)}; }
Status unsupported(std::string message) { return {StatusCode::kUnsupported, std::move(message)}; }
Status notFound(std::string message) { return {StatusCode::kNotFound, std::move(message)}; }
Status parseError(std::string message) { return {StatusCode::kParseError, std::move(message)}; }
Status internalError(std::string message) { return {StatusCode::kInternal, std::move(message)}; }

}  // namespace kiln
