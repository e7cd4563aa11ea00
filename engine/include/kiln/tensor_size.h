// Checked tensor sizes: the one place where Kiln turns a shape into an element
// count or a byte size. Every count is computed with overflow checks and held
// to a cap (rank, dim, total bytes), so a hostile model, plan or .npy file can
// never make Kiln allocate a buffer smaller than the shape it claims.
//
// Caps (defaults; a process sets them once, before it loads anything):
//   rank      <= 64
//   each dim  <= 2^40
//   bytes     <= 64 GiB or half the machine's memory per tensor, whichever is less;
//                the environment variable KILN_MAX_TENSOR_BYTES (a decimal byte
//                count) replaces it when read the first time.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln {

struct TensorLimits {
  int64_t maxRank = 64;
  int64_t maxDim = int64_t{1} << 40;
  int64_t maxBytes = int64_t{1} << 36;  // 64 GiB (tensorLimits() may lower it, see above)
};

// The process-wide limits (defaults + KILN_MAX_TENSOR_BYTES). Thread-safe to read.
TensorLimits tensorLimits();
// Replaces the limits (embedders, tests). Not meant to race with loads.
void setTensorLimits(const TensorLimits& limits);

// Element count of `shape` (1 for a scalar), or an error "<what>: ..." when the
// rank or a dim is out of range, a dim is negative, or the count overflows.
// `what` names the tensor, e.g. "tensor 'x'" or "node 'Pad_3' output 'y'".
Result<int64_t> checkedNumel(const std::vector<int64_t>& shape, const std::string& what);
// Byte size of a `type` tensor of `shape` (strings count one std::string each),
// or an error as above, also when it exceeds TensorLimits::maxBytes. An empty tensor is
// held to maxBytes as if its 0 dims were 1 (kernels size loops and index tables by the
// other dims): [0, 2^40, 2^31] is refused though it holds nothing.
Result<int64_t> checkedByteSize(DataType type, const std::vector<int64_t>& shape,
                                const std::string& what);
// checkedByteSize() as a Status, for callers that only validate.
Status checkTensorSize(DataType type, const std::vector<int64_t>& shape, const std::string& what);

// Thrown by the Tensor constructor, the last line of defence, when its shape
// fails checkedByteSize(): a Tensor is never allocated smaller than its shape.
// Entry points validate first and return a Status; the CPU executor turns this
// into a Status naming the node; a process's exception barrier catches the rest.
class TensorSizeError : public std::length_error {
 public:
  explicit TensorSizeError(const std::string& message) : std::length_error(message) {}
};

class Tensor;  // kiln/tensor.h

// A zero-filled tensor, or the checkedByteSize() error naming `what` ("input 'x'").
Result<Tensor> allocateTensor(DataType type, const std::vector<int64_t>& shape,
                              const std::string& what);
// randomInputTensor() (kiln/tensor.h) for a shape from outside (a model, a plan,
// the command line): the checkedByteSize() error naming `what` instead of a throw.
Result<Tensor> randomInput(DataType type, const std::vector<int64_t>& shape, uint64_t seed,
                           const std::string& what);

}  // namespace kiln
