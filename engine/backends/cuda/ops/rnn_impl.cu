// LSTM, GRU and RNN on the GPU, the device half (host half: rnn.cpp, which holds the op's
// contract, the GEMMs and the step loop; contract between them: rnn_impl.h): the kernels
// that load and store the states and the fused pointwise kernels of a step.
//  - sequence_lens (int32 or int64) are read per batch entry on the device, no host
//    round trip: steps past an entry's length leave its state alone (carried to Y_h /
//    Y_c) and write zeros to those Y rows; the reverse direction starts each entry at
//    its own last valid step. Lengths outside [0, seq], which the CPU rejects, are
//    clamped here (a device-side value cannot fail the run).
//  - States stay in float between steps (H also in the storage type, as the GEMM
//    operand); 16-bit storage rounds the input projection, that operand and the outputs.
//  - The gates are computed in float: Rb (and peepholes) added to the GEMMs' results,
//    clip, the activations with alpha/beta (ops/rnn_params.h's kinds).
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/rnn_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

#define KILN_RNN_GRID_LOOP(i, n)                                            \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

using namespace rnn;

// StepBuffers (rnn_impl.h) with typed pointers: what the step kernels take.
template <class T>
struct TypedStepBuffers {
  const T* xproj = nullptr;  // per direction [seq * batch, gateWidth]: X W^T + Wb
  int64_t xprojStride = 0;   // elements between directions
  const T* hz = nullptr;     // H_prev R^T [dirs, batch, hzWidth] (GRU split: z, r only)
  int64_t hzWidth = 0;
  const T* hh = nullptr;    // GRU split: (r ⊙ H_prev) R_h^T [dirs, batch, H]
  const T* bias = nullptr;  // B [dirs, 2 * gateWidth] or null
  const T* peep = nullptr;  // P [dirs, 3 * H] or null
  float* h = nullptr;       // state [dirs, batch, H]
  float* c = nullptr;       // LSTM cell state, or null
  T* hOperand = nullptr;    // H in the storage type, the next GEMM's operand
  T* rh = nullptr;          // GRU split: r ⊙ H_prev
  T* y = nullptr;           // Y or null
};

// ------------------------------------------------------------------ device helpers

__device__ __forceinline__ float activate(const ActParams& a, float x) {
  switch (a.kind) {
    case ActKind::kRelu:
      return x > 0.f ? x : 0.f;
    case ActKind::kTanh:
      return tanhf(x);
    case ActKind::kSigmoid:
      return 1.f / (1.f + expf(-x));
    case ActKind::kAffine:
      return a.alpha * x + a.beta;
    case ActKind::kLeakyRelu:
      return x >= 0.f ? x : a.alpha * x;
    case ActKind::kThresholdedRelu:
      return x > a.alpha ? x : 0.f;
    case ActKind::kScaledTanh:
      return a.alpha * tanhf(a.beta * x);
    case ActKind::kHardSigmoid:
      return fmaxf(0.f, fminf(1.f, a.alpha * x + a.beta));
    case ActKind::kElu:
      return x >= 0.f ? x : a.alpha * (expf(x) - 1.f);
    case ActKind::kSoftsign:
      return x / (1.f + fabsf(x));
    case ActKind::kSoftplus:
      return log1pf(expf(x));
  }
  return x;
}

// A gate: clip (as std::clamp: NaN passes through), then the activation.
__device__ __forceinline__ float gate(const CellParams& p, const ActParams& a, float x) {
  if (p.clip > 0.f) x = x < -p.clip ? -p.clip : (x > p.clip ? p.clip : x);
  return activate(a, x);
}

__device__ __forceinline__ int64_t lengthOf(const CellParams& p, int64_t b) {
  if (!p.lens) return p.seq;
  const int64_t len = p.lensInt64 ? static_cast<const int64_t*>(p.lens)[b]
                                  : static_cast<int64_t>(static_cast<const int32_t*>(p.lens)[b]);
  return len < 0 ? 0 : (len > p.seq ? p.seq : len);
}

// Where state element i ([dirs, batch, H]) stands at step s.
struct StepPos {
  int64_t d, b, j, t;
  bool active;  // s is within this entry's length; else t = s, a Y row to zero
};

__device__ __forceinline__ StepPos stepPosition(const CellParams& p, int64_t s, int64_t i) {
  StepPos q;
  q.j = i % p.hidden;
  const int64_t db = i / p.hidden;
  q.b = db % p.batch;
  q.d = db / p.batch;
  const int64_t len = lengthOf(p, q.b);
  q.active = s < len;
  const bool reverse = p.reverseOnly || q.d == 1;
  q.t = q.active && reverse ? len - 1 - s : s;
  return q;
}

// Row of the input projection for time t of batch entry b (X's own order).
__device__ __forceinline__ int64_t projectionRow(const CellParams& p, int64_t t, int64_t b) {
  return p.batchFirst ? b * p.seq + t : t * p.batch + b;
}

__device__ __forceinline__ int64_t yOffset(const CellParams& p, const StepPos& q) {
  return p.batchFirst ? ((q.b * p.seq + q.t) * p.dirs + q.d) * p.hidden + q.j
                      : ((q.t * p.dirs + q.d) * p.batch + q.b) * p.hidden + q.j;
}

// Offset in initial_h / Y_h (layout order) of internal state element i.
__device__ __forceinline__ int64_t stateOffset(const CellParams& p, int64_t i) {
  if (!p.batchFirst) return i;
  const int64_t j = i % p.hidden, db = i / p.hidden;
  const int64_t b = db % p.batch, d = db / p.batch;
  return (b * p.dirs + d) * p.hidden + j;
}

// The gate inputs of one (direction, batch entry, j) at one step.
template <class T>
struct GateInputs {
  const T* xp;  // projection row (X W^T + Wb)
  const T* hz;  // H_prev R^T row
  const T* rb;  // Rb of this direction or null

  // X W^T + Wb + Rb + H_prev R^T at column `col`.
  __device__ __forceinline__ float full(int64_t col) const {
    return toFloat(xp[col]) + (rb ? toFloat(rb[col]) : 0.f) + toFloat(hz[col]);
  }
};

template <class T>
__device__ __forceinline__ GateInputs<T> gateInputs(const CellParams& p,
                                                    const TypedStepBuffers<T>& buf,
                                                    const StepPos& q) {
  GateInputs<T> g;
  g.xp = buf.xproj + q.d * buf.xprojStride + projectionRow(p, q.t, q.b) * p.gateWidth;
  g.hz = buf.hz + (q.d * p.batch + q.b) * buf.hzWidth;
  g.rb = buf.bias ? buf.bias + q.d * 2 * p.gateWidth + p.gateWidth : nullptr;
  return g;
}

// GRU: z, r, h gates; H' = (1 - z) ⊙ h + z ⊙ H_prev.
template <class T>
__device__ __forceinline__ float gruCell(const CellParams& p, const TypedStepBuffers<T>& buf,
                                         const StepPos& q, const GateInputs<T>& g,
                                         const ActParams* acts, float hPrev) {
  const int64_t hsz = p.hidden, j = q.j;
  const float z = gate(p, acts[0], g.full(j));
  float candidate;
  if (p.linearBeforeReset) {
    // Wb_h only from the projection; r scales (H_prev R_h^T + Rb_h).
    const float r = gate(p, acts[0], g.full(hsz + j));
    const float rbh = g.rb ? toFloat(g.rb[2 * hsz + j]) : 0.f;
    candidate =
        gate(p, acts[1], toFloat(g.xp[2 * hsz + j]) + r * (toFloat(g.hz[2 * hsz + j]) + rbh));
  } else {
    const float hh = toFloat(buf.hh[(q.d * p.batch + q.b) * hsz + j]);
    const float rbh = g.rb ? toFloat(g.rb[2 * hsz + j]) : 0.f;
    candidate = gate(p, acts[1], toFloat(g.xp[2 * hsz + j]) + rbh + hh);
  }
  return (1.f - z) * candidate + z * hPrev;
}

// LSTM: gate order i, o, f, c; peepholes P = [p_i, p_o, p_f]. Updates *c.
template <class T>
__device__ __forceinline__ float lstmCell(const CellParams& p, const TypedStepBuffers<T>& buf,
                                          const StepPos& q, const GateInputs<T>& g,
                                          const ActParams* acts, float* c) {
  const int64_t hsz = p.hidden, j = q.j;
  const T* peep = buf.peep ? buf.peep + q.d * 3 * hsz : nullptr;
  const float cPrev = *c;
  const float i = gate(p, acts[0], g.full(j) + (peep ? toFloat(peep[j]) * cPrev : 0.f));
  const float f =
      p.inputForget ? 1.f - i
                    : gate(p, acts[0],
                           g.full(2 * hsz + j) + (peep ? toFloat(peep[2 * hsz + j]) * cPrev : 0.f));
  const float candidate = gate(p, acts[1], g.full(3 * hsz + j));
  const float cNew = f * cPrev + i * candidate;
  const float o = gate(p, acts[0], g.full(hsz + j) + (peep ? toFloat(peep[hsz + j]) * cNew : 0.f));
  *c = cNew;
  return o * activate(acts[2], cNew);
}

// ------------------------------------------------------------------ kernels

// Loads initial_h / initial_c (layout order, or zeros) into the internal states.
template <class T>
__global__ void loadStateKernel(CellParams p, const T* h0, const T* c0, float* h, float* c,
                                T* hOperand) {
  const int64_t n = p.dirs * p.batch * p.hidden;
  KILN_RNN_GRID_LOOP(i, n) {
    const int64_t src = stateOffset(p, i);
    const float hv = h0 ? toFloat(h0[src]) : 0.f;
    h[i] = hv;
    hOperand[i] = fromFloat<T>(hv);
    if (c) c[i] = c0 ? toFloat(c0[src]) : 0.f;
  }
}

// Writes the final states to Y_h / Y_c (either may be null) in layout order.
template <class T>
__global__ void storeStateKernel(CellParams p, const float* h, const float* c, T* yh, T* yc) {
  const int64_t n = p.dirs * p.batch * p.hidden;
  KILN_RNN_GRID_LOOP(i, n) {
    const int64_t dst = stateOffset(p, i);
    if (yh) yh[dst] = fromFloat<T>(h[i]);
    if (yc) yc[dst] = fromFloat<T>(c[i]);
  }
}

// GRU without linear_before_reset: rh = r ⊙ H_prev, r from this step's z/r GEMM.
template <class T>
__global__ void gruResetKernel(CellParams p, TypedStepBuffers<T> buf, int64_t s) {
  const int64_t n = p.dirs * p.batch * p.hidden;
  KILN_RNN_GRID_LOOP(i, n) {
    const StepPos q = stepPosition(p, s, i);
    float r = 0.f;  // entries past their length do not update; any value works
    if (q.active) {
      const GateInputs<T> g = gateInputs(p, buf, q);
      r = gate(p, p.acts[q.d * p.actsPerDirection], g.full(p.hidden + q.j));
    }
    buf.rh[i] = fromFloat<T>(r * buf.h[i]);
  }
}

// One time step of every (direction, batch entry, j): the cell update and Y[t].
template <class T>
__global__ void cellStepKernel(CellParams p, TypedStepBuffers<T> buf, int64_t s) {
  const int64_t n = p.dirs * p.batch * p.hidden;
  KILN_RNN_GRID_LOOP(i, n) {
    const StepPos q = stepPosition(p, s, i);
    if (!q.active) {
      if (buf.y) buf.y[yOffset(p, q)] = fromFloat<T>(0.f);
      continue;
    }
    const GateInputs<T> g = gateInputs(p, buf, q);
    const ActParams* acts = p.acts + q.d * p.actsPerDirection;
    float hNew;
    if (p.cell == Cell::kRnn) {
      hNew = gate(p, acts[0], g.full(q.j));
    } else if (p.cell == Cell::kGru) {
      hNew = gruCell(p, buf, q, g, acts, buf.h[i]);
    } else {
      hNew = lstmCell(p, buf, q, g, acts, buf.c + i);
    }
    buf.h[i] = hNew;
    buf.hOperand[i] = fromFloat<T>(hNew);
    if (buf.y) buf.y[yOffset(p, q)] = fromFloat<T>(hNew);
  }
}

template <class T>
TypedStepBuffers<T> typedBuffers(const StepBuffers& b) {
  TypedStepBuffers<T> t;
  t.xproj = static_cast<const T*>(b.xproj);
  t.xprojStride = b.xprojStride;
  t.hz = static_cast<const T*>(b.hz);
  t.hzWidth = b.hzWidth;
  t.hh = static_cast<const T*>(b.hh);
  t.bias = static_cast<const T*>(b.bias);
  t.peep = static_cast<const T*>(b.peep);
  t.h = b.h;
  t.c = b.c;
  t.hOperand = static_cast<T*>(b.hOperand);
  t.rh = static_cast<T*>(b.rh);
  t.y = static_cast<T*>(b.y);
  return t;
}

int64_t stateCount(const CellParams& p) {
  return p.dirs * p.batch * p.hidden;
}

}  // namespace

namespace rnn {

Status launchLoadState(DataType type, const CellParams& p, const void* h0, const void* c0, float* h,
                       float* c, void* hOperand, cudaStream_t stream) {
  return dispatchDeviceType<kRnnTypes>(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    loadStateKernel<T><<<gridFor(stateCount(p)), kBlockSize, 0, stream>>>(
        p, static_cast<const T*>(h0), static_cast<const T*>(c0), h, c, static_cast<T*>(hOperand));
    KILN_CUDA_CHECK_LAUNCH("loadStateKernel");
    return Status::ok();
  });
}

Status launchGruReset(DataType type, const CellParams& p, const StepBuffers& buf, int64_t step,
                      cudaStream_t stream) {
  return dispatchDeviceType<kRnnTypes>(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    gruResetKernel<T>
        <<<gridFor(stateCount(p)), kBlockSize, 0, stream>>>(p, typedBuffers<T>(buf), step);
    KILN_CUDA_CHECK_LAUNCH("gruResetKernel");
    return Status::ok();
  });
}

Status launchCellStep(DataType type, const CellParams& p, const StepBuffers& buf, int64_t step,
                      cudaStream_t stream) {
  return dispatchDeviceType<kRnnTypes>(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    cellStepKernel<T>
        <<<gridFor(stateCount(p)), kBlockSize, 0, stream>>>(p, typedBuffers<T>(buf), step);
    KILN_CUDA_CHECK_LAUNCH("cellStepKernel");
    return Status::ok();
  });
}

Status launchStoreState(DataType type, const CellParams& p, const float* h, const float* c,
                        void* yh, void* yc, cudaStream_t stream) {
  return dispatchDeviceType<kRnnTypes>(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    storeStateKernel<T><<<gridFor(stateCount(p)), kBlockSize, 0, stream>>>(
        p, h, c, static_cast<T*>(yh), static_cast<T*>(yc));
    KILN_CUDA_CHECK_LAUNCH("storeStateKernel");
    return Status::ok();
  });
}

}  // namespace rnn
}  // namespace kiln::cuda
