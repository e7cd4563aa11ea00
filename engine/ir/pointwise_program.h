// The expression program of an ai.kiln PointwiseChain node (the fuse_pointwise_chain
// pass writes it; the CPU reference interprets it; the CUDA backend generates and
// NVRTC-compiles a kernel from it). One output element is computed from one element
// of each (numpy-broadcast) input by a list of steps, each one ONNX elementwise op.
//
// Node attributes (all lists have one entry per step unless said otherwise):
//   ops       strings  the ONNX op of each step (pointwiseOpNames(): Relu .. Min)
//   operands  ints     flattened, arity(op) value ids per step (1 unary, 2 binary)
//   constants floats   scalar constants inlined from one-element initializers (any count)
//   alphas    floats   Clip: min; LeakyRelu / HardSigmoid: alpha; Gelu: 1 = tanh form
//   betas     floats   Clip: max; HardSigmoid: beta
//   types     ints     the ONNX type (TensorProto code) of each step's result; a Cast
//                      step's is its target, the last step's is the node's output type
// Value ids: [0, I) the node's inputs, [I, I + K) the constants, I + K + s the result
// of step s; a step reads only values defined before it. The last step is the output.
// Arithmetic is float32 (every storage type here is float32, float16 or bfloat16); a
// value is rounded to 16 bits only where a Cast step says so and at the output.
#pragma once

#include <string>
#include <vector>

#include "kiln/data_type.h"
#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln {

constexpr const char* kPointwiseChainOp = "PointwiseChain";

enum class PointwiseOp {
  kRelu,
  kSigmoid,
  kTanh,
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kErf,
  kReciprocal,
  kGelu,
  kClip,
  kLeakyRelu,
  kHardSigmoid,
  kHardSwish,
  kSoftplus,
  kCast,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kMin,
};

struct PointwiseStep {
  PointwiseOp op = PointwiseOp::kRelu;
  std::vector<int> operands;  // value ids, arity(op) of them
  float alpha = 0.f;
  float beta = 0.f;
  DataType type = DataType::kFloat32;  // the result's model type
};

struct PointwiseProgram {
  int inputCount = 0;
  std::vector<float> constants;
  std::vector<PointwiseStep> steps;

  int stepValue(size_t step) const {
    return inputCount + static_cast<int>(constants.size() + step);
  }
  DataType outputType() const { return steps.empty() ? DataType::kUndefined : steps.back().type; }
};

// The ONNX name of `op` and the number of operands it reads (1 or 2).
const char* pointwiseOpName(PointwiseOp op);
int pointwiseArity(PointwiseOp op);
// The op named `name`, or false when the program has no such op.
bool parsePointwiseOp(const std::string& name, PointwiseOp* op);
// The storage types a program computes on: float32, float16, bfloat16.
bool isPointwiseType(DataType type);

// Reads and checks the program of `node` (inputCount = the node's input count): every
// list of the right length, every op known, every operand defined before its step,
// every type a pointwise type. A bad program is an error naming the node.
Result<PointwiseProgram> readPointwiseProgram(const Node& node);
// Writes `program` as the node attributes above (inputs are the caller's).
void writePointwiseProgram(const PointwiseProgram& program, Node* node);

// One line per step, for layer notes and docs: "v3 = Add(v0, c0 = 0.5)".
std::string describePointwiseProgram(const PointwiseProgram& program);

}  // namespace kiln
