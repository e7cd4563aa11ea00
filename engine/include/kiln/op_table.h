// The op table (issue 23): one row per operator of what every layer of Kiln asks about
// an op without running it. The shape inference's generic rules, the strongly typed
// export's typing, the channels-last pass's layout-free ops, the TensorRT layer types of
// a BuildRecord and the studio's op colours all read these rows, so a new op is one row
// here plus its kernels (docs/engine-foundation.md, "Adding an op").
//
// Contract: rows are keyed by op type; an op type names one operator in every domain Kiln
// imports (the ai.kiln aliases of newer ONNX ops share their ONNX row's properties). The
// properties hold at every opset of the op: what changes with the opset (attributes,
// accepted types) lives in the op's parameter row (engine/ops/*_params.h) and in each
// backend's kernel registration. findOp answers nullptr for an op without a row; each
// reader then falls back to its conservative default (no shape rule, not layout-free,
// follows its data's type, no TensorRT layer type, the studio's name rules).
#pragma once

#include <string_view>
#include <vector>

namespace kiln::ops {

// What kind of layer an op makes (the studio's colour categories).
enum class OpKind {
  kConvolution,
  kMatMul,
  kActivation,
  kNormalization,
  kPooling,
  kElementwise,
  kShape,  // shape computation and data movement
  kReduction,
  kAttention,
  kOther,  // constants, control flow, generators, strings, sequences
  kFused,  // Kiln's and the contrib domains' multi-op layers (last: the studio counts on it)
};

// How shape inference derives the outputs without an op-specific rule.
enum class OpShapeForm {
  kOwnRule,          // engine/shape has a rule written for the op (or none: unknown)
  kSameAsInput,      // output 0: input 0's type and shape
  kBroadcast,        // output 0: the inputs' numpy broadcast, input 0's type
  kBroadcastToBool,  // output 0: the inputs' numpy broadcast, bool
};

struct OpRow {
  std::string_view opType;
  std::string_view domain;  // where it is defined: "" = ai.onnx, "ai.kiln", "com.microsoft"
  OpKind kind = OpKind::kOther;
  OpShapeForm shape = OpShapeForm::kOwnRule;
  std::string_view tensorrtLayer;  // TensorRT's layer type for it ("Activation"); "" none
  // Each output element from the inputs' elements at the same (broadcast) position alone:
  // it runs on any storage layout (the channels-last pass lets it follow its inputs).
  bool positionwise = false;
  // Its output types are fixed by attributes, its float inputs must be float32, or its
  // types are a quantization contract: a strongly typed export keeps its types.
  bool keepsOwnTypes = false;
};

// The kind's name as the studio's legend and `kiln ops` show it ("Matrix multiply",
// "Shape / data movement", "Constants / other", ...).
std::string_view opKindName(OpKind kind);

// Every row, grouped by kind.
const std::vector<OpRow>& opTable();
// The row of `opType`, or nullptr.
const OpRow* findOp(std::string_view opType);

}  // namespace kiln::ops
