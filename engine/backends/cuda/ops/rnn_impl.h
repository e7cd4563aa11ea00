// The contract between the host half (rnn.cpp: attributes, shapes, outputs, the scratch,
// the cuBLASLt GEMMs and the step loop) and the device half (rnn_impl.cu: the state and
// cell kernels) of LSTM, GRU and RNN. Plain C++ (both compilers).
//
// Each launcher runs one kernel, one thread per state element (dirs * batch * hidden,
// grid-stride), on `stream` and returns the launch's status (a failed launch comes back as
// a Status naming the kernel). It assumes the host half checked everything: `type` in
// kRnnTypes (otherwise it returns kUnsupported "data type X", which the host half reports
// as ctx.unsupported before calling), at least one state element, the node's inputs of
// `type` with the shapes CellParams describe, and the buffers allocated as rnn.cpp's
// scratch layout carves them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"
#include "ops/rnn_params.h"

namespace kiln::cuda::rnn {

using Cell = ops::RnnCell;
using ActKind = ops::RnnActivation::Kind;
using ActParams = ops::RnnActivation;

// The storage types the kernels are instantiated for (float64 has no cuBLASLt path).
constexpr uint32_t kRnnTypes = device_types::kStorageFloats;

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

// Buffers of one step, elements of the storage type unless float. Rows of hz / hh /
// states are (direction, batch entry).
struct StepBuffers {
  const void* xproj = nullptr;  // per direction [seq * batch, gateWidth]: X W^T + Wb
  int64_t xprojStride = 0;      // elements between directions
  const void* hz = nullptr;     // H_prev R^T [dirs, batch, hzWidth] (GRU split: z, r only)
  int64_t hzWidth = 0;
  const void* hh = nullptr;    // GRU split: (r ⊙ H_prev) R_h^T [dirs, batch, H]
  const void* bias = nullptr;  // B [dirs, 2 * gateWidth] or null
  const void* peep = nullptr;  // P [dirs, 3 * H] or null
  float* h = nullptr;          // state [dirs, batch, H]
  float* c = nullptr;          // LSTM cell state, or null
  void* hOperand = nullptr;    // H in the storage type, the next GEMM's operand
  void* rh = nullptr;          // GRU split: r ⊙ H_prev
  void* y = nullptr;           // Y or null
};

// Loads initial_h / initial_c (layout order; null: zeros) into the float states h and c
// (c null but for LSTM) and h's copy in the storage type, hOperand.
Status launchLoadState(DataType type, const CellParams& p, const void* h0, const void* c0, float* h,
                       float* c, void* hOperand, cudaStream_t stream);

// GRU without linear_before_reset, step `step`: buf.rh = r ⊙ H_prev, r from the step's
// z / r GEMM in buf.hz.
Status launchGruReset(DataType type, const CellParams& p, const StepBuffers& buf, int64_t step,
                      cudaStream_t stream);

// Step `step` of every (direction, batch entry, j): Rb and the peepholes added to the
// GEMMs' results, the gates in float, H (and C) updated, Y's row written (zeros for
// entries past their sequence length, whose states stay).
Status launchCellStep(DataType type, const CellParams& p, const StepBuffers& buf, int64_t step,
                      cudaStream_t stream);

// Writes the final float states to Y_h / Y_c (either may be null) in layout order.
Status launchStoreState(DataType type, const CellParams& p, const float* h, const float* c,
                        void* yh, void* yc, cudaStream_t stream);

}  // namespace kiln::cuda::rnn
