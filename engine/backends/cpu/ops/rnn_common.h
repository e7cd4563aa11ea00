// Types shared by the recurrent kernels (rnn.cpp); the activation lists are parsed by
// ops/rnn_params.h, shared with the CUDA kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/cpu/kernel.h"
#include "ops/rnn_params.h"

namespace kiln::cpu {

using CellKind = ops::RnnCell;
// One entry of the `activations` attribute with its alpha/beta (ops/rnn_params.h).
using Activation = ops::RnnActivation;

template <class C>
C applyActivation(const Activation& a, C x) {
  using K = Activation::Kind;
  const C alpha = static_cast<C>(a.alpha), beta = static_cast<C>(a.beta);
  switch (a.kind) {
    case K::kRelu:
      return x > C(0) ? x : C(0);
    case K::kTanh:
      return std::tanh(x);
    case K::kSigmoid:
      return C(1) / (C(1) + std::exp(-x));
    case K::kAffine:
      return alpha * x + beta;
    case K::kLeakyRelu:
      return x >= C(0) ? x : alpha * x;
    case K::kThresholdedRelu:
      return x > alpha ? x : C(0);
    case K::kScaledTanh:
      return alpha * std::tanh(beta * x);
    case K::kHardSigmoid:
      return std::fmax(C(0), std::fmin(C(1), alpha * x + beta));
    case K::kElu:
      return x >= C(0) ? x : alpha * (std::exp(x) - C(1));
    case K::kSoftsign:
      return x / (C(1) + std::fabs(x));
    case K::kSoftplus:
      return std::log1p(std::exp(x));
  }
  return x;
}

// What a kernel run needs besides the tensors. Shapes are in the canonical
// (layout = 0) order: X [seq, batch, input], states [dirs, batch, hidden].
struct RnnConfig {
  CellKind kind = CellKind::kRnn;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1;
  bool linearBeforeReset = false;       // GRU
  bool inputForget = false;             // LSTM
  float clip = 0.f;                     // 0: no clipping
  std::vector<int64_t> lengths;         // per batch entry, from sequence_lens or seq
  std::vector<Activation> activations;  // per direction, cellActivationCount(kind) each
};

// Activations each direction uses: RNN f; GRU f, g; LSTM f, g, h.
inline int cellActivationCount(CellKind kind) {
  return ops::rnnActivationsPerDirection(kind);
}

}  // namespace kiln::cpu
