// The recurrent ops' (RNN, GRU, LSTM) activation lists both backends apply, decided once
// (issue 23's op table): the `activations` attribute (or each cell's defaults), one
// direction's list serving both directions of a bidirectional cell, names matched without
// case, and `activation_alpha` / `activation_beta` consumed in order by the activations
// that take them (ONNX's defaults otherwise). Host-only, no backend header; errors are
// messages without the node's name (the kernels add it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln::ops {

enum class RnnCell : int { kRnn, kGru, kLstm };

struct RnnActivation {
  enum class Kind : int {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,           // alpha * x + beta
    kLeakyRelu,        // x >= 0 ? x : alpha * x
    kThresholdedRelu,  // x > alpha ? x : 0
    kScaledTanh,       // alpha * tanh(beta * x)
    kHardSigmoid,      // clamp(alpha * x + beta, 0, 1)
    kElu,
    kSoftsign,
    kSoftplus,
  };
  Kind kind = Kind::kTanh;
  float alpha = 0.f;
  float beta = 0.f;
};

// Whether `name` (any case) is one of the activations ONNX defines for the recurrent ops.
bool isRnnActivationName(const std::string& name);

// Activations per direction: RNN 1 (its f), GRU 2 (f, g), LSTM 3 (f, g, h).
int rnnActivationsPerDirection(RnnCell cell);

// The node's activations for `directions` (1 or 2), directions * per-direction entries.
// Errors: a list of the wrong length (invalid argument); a name ONNX does not define
// (unsupported: "activation 'X'").
Result<std::vector<RnnActivation>> rnnActivations(const Node& node, RnnCell cell,
                                                  int64_t directions);

}  // namespace kiln::ops
