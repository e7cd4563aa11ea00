// LSTM, GRU and RNN on the GPU: what the host half (rnn_host.cpp: attributes, shapes,
// activations, the support predicate) hands the device half (rnn.cu: the step kernels,
// the GEMMs, the launch). Contract of the op: rnn.cu's header comment.
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "ops/rnn_params.h"

namespace kiln::cuda::rnn {

using Cell = ops::RnnCell;
using ActKind = ops::RnnActivation::Kind;
using ActParams = ops::RnnActivation;

constexpr int kMaxActivations = 6;  // two directions of LSTM's f, g, h

// Everything the device kernels need besides buffers. Internal states are
// [dirs, batch, H] whatever the layout.
struct CellParams {
  Cell cell = Cell::kRnn;
  int64_t seq = 0, batch = 0, hidden = 0, dirs = 1;
  int64_t gateWidth = 0;  // gates * hidden
  bool reverseOnly = false, batchFirst = false, linearBeforeReset = false, inputForget = false;
  float clip = 0.f;  // 0: no clipping
  int actsPerDirection = 1;
  ActParams acts[kMaxActivations];
  const void* lens = nullptr;  // [batch] int32 / int64, or null: every entry runs seq steps
  bool lensInt64 = false;
};

// The node's inputs (nullptr where omitted) and X's feature width.
struct RnnInputs {
  const DeviceTensor *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *lens = nullptr,
                     *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  int64_t input = 0;
};

// Reads the attributes and checks the shapes in the CPU kernel's order, with its messages;
// kUnsupported for what the device kernels lack (sequence_lens types, activation names).
Status configure(const GpuKernelContext& ctx, Cell cell, RnnInputs* in, CellParams* p);

// "" when the GPU kernels run a node with these input types and activations, else why not.
std::string supportsRecurrent(const Node& node, const std::vector<DataType>& types);

}  // namespace kiln::cuda::rnn
