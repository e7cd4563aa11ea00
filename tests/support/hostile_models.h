// Hostile inputs built in code (no opaque binaries): ONNX models whose sizes,
// types, opsets or structure are meant to break an importer, and .npy bytes with
// a lying header. Shared by the unit tests and the CLI fixture writer
// (make_hostile_inputs), so both exercise the same files.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/tensor_size.h"

namespace kiln::test::hostile {

// The default size limits depend on the machine's memory: a test that quotes a
// limit in a message sets them (TensorLimits{}: 64 GiB) and restores them after.
class ScopedTensorLimits {
 public:
  explicit ScopedTensorLimits(const TensorLimits& limits = {}) : m_saved(tensorLimits()) {
    setTensorLimits(limits);
  }
  ~ScopedTensorLimits() { setTensorLimits(m_saved); }
  ScopedTensorLimits(const ScopedTensorLimits&) = delete;
  ScopedTensorLimits& operator=(const ScopedTensorLimits&) = delete;

 private:
  TensorLimits m_saved;
};

// A test fixture under the fixed limits.
class FixedLimitsTest : public ::testing::Test {
 private:
  ScopedTensorLimits m_limits;
};

// 3 * 6148914691236517206 wraps to 2 modulo 2^64.
constexpr int64_t kWrapsToTwo = 6148914691236517206;

// y = Identity(x), x and y declared float32 of `dims`, elem type `type`.
onnx::ModelProto identityModel(const std::vector<int64_t>& dims, int32_t type = 1);
// y = Softmax(Reshape(x, target)), x float32 [2], target a Constant node's int64 tensor.
onnx::ModelProto reshapeFromConstant(const std::vector<int64_t>& target);
// y = Pad(x, pads), x float32 [2, 2], pads an initializer (opset 13).
onnx::ModelProto padModel(const std::vector<int64_t>& pads);
// x [1, 18, 4] -> Col2Im(x, image_shape, block_shape [3, 3]) -> y (opset 18): a hostile image_shape
// makes the output's dims (the shape rule reads the constant).
onnx::ModelProto col2ImModel(const std::vector<int64_t>& imageShape);
// identityModel({2}) importing opset `version` of ai.onnx.
onnx::ModelProto opsetModel(int64_t version);
// If nodes nested `depth` deep (each then-branch holds the next If; every else
// branch and the innermost then-branch yield a Constant [depth]); inputs: cond (bool).
onnx::ModelProto nestedIfModel(int depth);
// A weight whose dims wrap (3 x kWrapsToTwo) holding 8 bytes of raw data.
onnx::ModelProto wrappedInitializerModel();
// Models `kiln build` once turned into plans that `kiln run` refused.
onnx::ModelProto outputNeverProducedModel();
onnx::ModelProto splitWithoutOutputsModel();
onnx::ModelProto emptyInputNameModel();

std::string serialized(const onnx::ModelProto& model);
// A .npy v1 file of `descr` ('<f4') whose header claims `shape`, with `dataBytes` zero bytes.
std::string npyBytes(const std::string& descr, const std::vector<int64_t>& shape, size_t dataBytes);

}  // namespace kiln::test::hostile
