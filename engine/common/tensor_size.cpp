// Checked element counts and byte sizes (kiln/tensor_size.h).
#include "kiln/tensor_size.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "kiln/tensor.h"

namespace kiln {
namespace {

// KILN_MAX_TENSOR_BYTES when it is a positive decimal number, else 64 GiB or half
// the machine's memory, whichever is less: a zero-filled buffer past physical
// memory is not a bad_alloc but the OOM killer.
int64_t maxBytesFromEnvironment() {
  const char* text = std::getenv("KILN_MAX_TENSOR_BYTES");
  if (text && *text) {
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    if (*end == '\0' && value > 0) return static_cast<int64_t>(value);
  }
  int64_t limit = TensorLimits{}.maxBytes;
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && pageSize > 0 && pages / 2 < limit / pageSize) limit = pages / 2 * pageSize;
  return limit;
}

struct AtomicLimits {
  std::atomic<int64_t> maxRank{TensorLimits{}.maxRank};
  std::atomic<int64_t> maxDim{TensorLimits{}.maxDim};
  std::atomic<int64_t> maxBytes{maxBytesFromEnvironment()};
};

AtomicLimits& limitsStorage() {
  static AtomicLimits limits;
  return limits;
}

}  // namespace

TensorLimits tensorLimits() {
  const AtomicLimits& s = limitsStorage();
  return {s.maxRank.load(), s.maxDim.load(), s.maxBytes.load()};
}

void setTensorLimits(const TensorLimits& limits) {
  AtomicLimits& s = limitsStorage();
  s.maxRank = limits.maxRank;
  s.maxDim = limits.maxDim;
  s.maxBytes = limits.maxBytes;
}

Result<int64_t> checkedNumel(const std::vector<int64_t>& shape, const std::string& what) {
  const TensorLimits limits = tensorLimits();
  if (static_cast<int64_t>(shape.size()) > limits.maxRank) {
    return invalidArgument(what + ": rank " + std::to_string(shape.size()) +
                           " exceeds the limit of " + std::to_string(limits.maxRank));
  }
  bool hasZero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d < 0)
      return invalidArgument(what + ": dim " + std::to_string(i) + " is negative (" +
                             std::to_string(d) + ")");
    if (d > limits.maxDim) {
      return invalidArgument(what + ": dim " + std::to_string(i) + " (" + std::to_string(d) +
                             ") exceeds the limit of " + std::to_string(limits.maxDim));
    }
    hasZero = hasZero || d == 0;
  }
  if (hasZero) return int64_t{0};
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(numel, d, &numel)) {
      return invalidArgument(what + ": shape " + shapeToString(shape) +
                             " has more elements than a 64-bit count holds");
    }
  }
  return numel;
}

Result<int64_t> checkedByteSize(DataType type, const std::vector<int64_t>& shape,
                                const std::string& what) {
  KILN_ASSIGN_OR_RETURN(const int64_t numel, checkedNumel(shape, what));
  const int64_t maxBytes = tensorLimits().maxBytes;
  // A string element costs its std::string in memory though its byte size is 0.
  const int64_t element = type == DataType::kString ? static_cast<int64_t>(sizeof(std::string))
                                                    : static_cast<int64_t>(dataTypeSize(type));
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel, element, &bytes) || bytes > maxBytes) {
    return invalidArgument(what + ": shape " + shapeToString(shape) + " of " + dataTypeName(type) +
                           " needs more than the limit of " + std::to_string(maxBytes) +
                           " bytes (KILN_MAX_TENSOR_BYTES)");
  }
  // An empty tensor is held to the cap as if its 0 dims were 1: kernels size index tables
  // and loops by the other dims before they notice there is nothing to do ([0, 2^40,
  // 2^31] reached MatMul, Reduce, Unique, MaxPool and friends this way: fuzz_onnx_import).
  if (numel == 0) {
    int64_t claimed = element;
    for (int64_t d : shape)
      if (d > 0 && (__builtin_mul_overflow(claimed, d, &claimed) || claimed > maxBytes))
        return invalidArgument(what + ": shape " + shapeToString(shape) + " of " +
                               dataTypeName(type) +
                               " is empty, but its other dims alone pass the limit of " +
                               std::to_string(maxBytes) + " bytes (KILN_MAX_TENSOR_BYTES)");
  }
  return type == DataType::kString ? int64_t{0} : bytes;
}

Status checkTensorSize(DataType type, const std::vector<int64_t>& shape, const std::string& what) {
  auto bytes = checkedByteSize(type, shape, what);
  return bytes.isOk() ? Status::ok() : bytes.status();
}

}  // namespace kiln
