// Status and Result<T>: the error currency of libkiln. No exception crosses the
// public API; every fallible function returns one of these, [[nodiscard]].
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kiln {

enum class StatusCode {
  kOk,
  kInvalidArgument,  // bad input from the user: wrong shape, dtype, option
  kParseError,       // a file that is not what it claims to be
  kNotFound,         // missing file, tensor or name
  kUnsupported,      // valid input that Kiln does not implement
  kOutOfRange,
  kIoError,
  kCancelled,
  kOutOfMemory,
  kInternal,  // a bug in Kiln
};

const char* statusCodeName(StatusCode code);

// `text` with its control characters escaped: C0 controls as \n, \r, \t or \x1b,
// DEL as \x7f, C1 controls (UTF-8 C2 80..C2 9F) as \u009b. Names in models, plans
// and files are attacker-controlled; escaped, a message stays one line and cannot
// drive the terminal. Idempotent (backslashes are left alone).
std::string escapeControlCharacters(const std::string& text);

// The ONNX node a status is about, as data: the studio selects it and the CLI's
// --json prints it, so neither parses the message (which says the same in words).
// The fields are raw model text (any character, quotes and spaces included); unlike
// the message they are not escaped, so whoever prints them escapes them.
struct StatusNode {
  std::string name;    // as the model names it; "" for an unnamed node
  int64_t index = -1;  // Node::index: position in its graph's node list; -1 if unknown
  std::string opType;  // as ONNX spells it: "Conv"
  std::string domain;  // "" for ai.onnx
  bool operator==(const StatusNode&) const = default;
};

// A status is ok, or a code with a one-line message. Context is prepended by
// each layer it passes through ("model.onnx: node 'Conv_3' (#4, Conv): ...").
// The message is stored with its control characters escaped, whoever built it.
// Beside the message a status may name, as fields, the node it is about, the
// tensor (value) and the engine layer: set where the error is made, or attached by
// the layer that knows the node (the executor around a kernel). The first one set
// stays: the innermost layer knows best. Context and copies keep them.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, const std::string& message)
      : m_code(code), m_message(escapeControlCharacters(message)) {}
  static Status ok() { return {}; }

  bool isOk() const { return m_code == StatusCode::kOk; }
  StatusCode code() const { return m_code; }
  const std::string& message() const { return m_message; }
  // Returns this status with "context: " prepended to its message (ok stays ok).
  Status withContext(const std::string& context) const;
  std::string toString() const;

  // The node this status is about; null when none is known.
  const StatusNode* node() const;
  // The tensor (value) name it is about; "" when none.
  const std::string& tensor() const;
  // The engine layer it is about (a fused layer's name, "a + b"); "" when none.
  const std::string& layer() const;
  // Return this status with the field set, unless it already has one (ok stays ok;
  // the message is unchanged).
  Status withNode(StatusNode node) const;
  Status withTensor(const std::string& tensor) const;
  Status withLayer(const std::string& layer) const;
  // withNode for anything with name, index, opType and domain members (kiln::Node).
  template <class N>
  Status withNodeOf(const N& node) const {
    return withNode(
        StatusNode{node.name, static_cast<int64_t>(node.index), node.opType, node.domain});
  }

 private:
  struct Detail {
    std::optional<StatusNode> node;
    std::string tensor;
    std::string layer;
  };
  Status withDetail(const Detail& extra) const;

  StatusCode m_code = StatusCode::kOk;
  std::string m_message;
  std::shared_ptr<const Detail> m_detail;  // null for most statuses; shared by copies
};

// A status about `node` (kiln::Node): "node 'x' (#3, Conv): message", with its fields.
template <class N>
Status nodeStatus(StatusCode code, const N& node, const std::string& message) {
  return Status(code, node.describe() + ": " + message).withNodeOf(node);
}

Status invalidArgument(std::string message);
Status unsupported(std::string message);
Status notFound(std::string message);
Status parseError(std::string message);
Status internalError(std::string message);

// A value or the status explaining why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : m_value(std::move(value)) {}
  Result(Status status) : m_status(std::move(status)) {}
  bool isOk() const { return m_value.has_value(); }
  const Status& status() const { return m_status; }
  T& value() & { return *m_value; }
  const T& value() const& { return *m_value; }
  T&& value() && { return std::move(*m_value); }
  T* operator->() { return &*m_value; }
  const T* operator->() const { return &*m_value; }
  T& operator*() { return *m_value; }

 private:
  std::optional<T> m_value;
  Status m_status;
};

}  // namespace kiln

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

// Returns the status of `expr` from the enclosing function when it is not ok.
#define KILN_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::kiln::Status kiln_status_ = (expr);          \
    if (!kiln_status_.isOk()) return kiln_status_; \
  } while (0)

// As KILN_RETURN_IF_ERROR, prepending `context` (a std::string expression).
#define KILN_RETURN_IF_ERROR_CTX(expr, context)                         \
  do {                                                                  \
    ::kiln::Status kiln_status_ = (expr);                               \
    if (!kiln_status_.isOk()) return kiln_status_.withContext(context); \
  } while (0)

// As KILN_RETURN_IF_ERROR, attaching `node` (a kiln::Node) unless the status names one.
#define KILN_RETURN_IF_ERROR_NODE(expr, node)                       \
  do {                                                              \
    ::kiln::Status kiln_status_ = (expr);                           \
    if (!kiln_status_.isOk()) return kiln_status_.withNodeOf(node); \
  } while (0)

// Declares `lhs` from a Result<T> expression or returns its status.
#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL(KILN_CONCAT(kiln_result_, __LINE__), lhs, expr)
#define KILN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.isOk()) return tmp.status();            \
  lhs = std::move(tmp).value()
