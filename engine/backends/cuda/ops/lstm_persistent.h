// The persistent LSTM kernel (lstm_persistent.cu) for rnn.cpp: every time step of a
// direction in one launch instead of a cuBLASLt GEMM and a cell kernel a step. Plain C++
// (both compilers).
//
// A block owns 16, 32 or 64 batch entries of one direction for the whole sequence: R of
// that direction and the entries' hidden state (16-bit) live in shared memory, each step's
// H_prev R^T runs on mma.sync (float accumulators started from the step's X W^T + Wb + Rb),
// and the cell update happens in the accumulators' registers, C in registers across the
// steps. Numerics: the state in float between steps and 16-bit as the next step's operand,
// as the step loop; the recurrent product is not rounded to 16 bits before the gates (the
// step loop's GEMM writes it in the storage type); the activations run on the special
// function unit (tanh.approx.f32, relative error below 2^-10.99, about half a float16 ulp;
// the sigmoid from ex2.approx and a fast division), where the step loop calls the precise
// library functions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "backends/cuda/ops/rnn_impl.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::rnn {

constexpr int64_t kPersistentLstmMaxHidden = 128;

// "" when launchPersistentLstm runs this LSTM; otherwise why the step loop does, in a few
// words: a 16-bit storage type, hidden size a multiple of 16 up to 128, no sequence_lens,
// clip, input_forget or peepholes (`hasPeepholes`), each direction's activations the
// defaults (sigmoid, tanh, tanh).
std::string persistentLstmRefusal(DataType type, const CellParams& p, bool hasPeepholes);

// Writes Wb + Rb of one direction (`b`: that direction's B row, [8H]) to `out` ([4H], the
// storage type): the input projection's bias when this kernel runs, which reads no Rb.
Status launchFoldRecurrentBias(DataType type, const void* b, void* out, int64_t gateWidth,
                               cudaStream_t stream);

// One LSTM's steps after the input projection. `xproj`: per direction [seq * batch, 4H]
// rows in X's order (X W^T + Wb + Rb, launchFoldRecurrentBias's bias), `xprojStride`
// elements between directions; `r`: R [dirs, 4H, H]; `h` / `c`: float
// states [dirs, batch, H], read as the initial state and written with the final one;
// `hOperand`: the initial H in the storage type, [dirs, batch, H]; `y`: Y in the layout's
// order, or null. Assumes persistentLstmRefusal(...) == "" and seq >= 1, batch >= 1.
struct PersistentLstmLaunch {
  DataType type = DataType::kUndefined;
  CellParams p;
  const void* xproj = nullptr;
  int64_t xprojStride = 0;
  const void* r = nullptr;
  float* h = nullptr;
  float* c = nullptr;
  const void* hOperand = nullptr;
  void* y = nullptr;
};

// The batch entries a block takes (16, 32 or 64) and the hidden units a warp computes a
// step (8 per group, `groups` groups), as launchPersistentLstm picks them for `smCount`
// multiprocessors: for the implementation text.
struct PersistentLstmShape {
  int rowsPerBlock = 16, groupsPerWarp = 2, warps = 1;
};
PersistentLstmShape persistentLstmShape(const CellParams& p, int smCount);

Status launchPersistentLstm(const PersistentLstmLaunch& launch, int smCount, cudaStream_t stream);

}  // namespace kiln::cuda::rnn
