// LSTM, GRU and RNN on the GPU.
//
// Contract: the same opset ranges, attributes, defaults, output shapes, error messages
// and cell arithmetic as the CPU kernels (engine/backends/cpu/ops/rnn.cpp and
// rnn_activations.cpp): directions forward / reverse / bidirectional, layout 0 and 1
// (read from opset 14), optional B, sequence_lens, initial_h / initial_c, LSTM
// peepholes and input_forget, clip (gate pre-activations only, not LSTM's h(C)),
// activations with alpha/beta, GRU linear_before_reset, each of Y / Y_h / Y_c optional.
//  - Per direction one cuBLASLt GEMM projects every time step at once: X W^T + Wb (bias
//    epilogue) into a [rows, gates*H] scratch whose rows stay in X's own order
//    (t*batch+b, or b*seq+t for layout 1), so X is never transposed.
//  - Each step: one GEMM, strided-batched over the directions, H_prev R^T into a gates
//    scratch, then one fused pointwise kernel that adds Rb (and peepholes), applies the
//    activations in float, updates H (and C) and writes Y[t]. GRU without
//    linear_before_reset needs r before its candidate GEMM: a small kernel forms
//    r ⊙ H_prev, a second GEMM multiplies it by R_h^T, then the pointwise kernel runs.
//    Each distinct GEMM keeps its own cuBLASLt plan slot in the layer state.
//  - sequence_lens (int32 or int64) are read per batch entry on the device, no host
//    round trip: steps past an entry's length leave its state alone (carried to Y_h /
//    Y_c) and write zeros to those Y rows; the reverse direction starts each entry at
//    its own last valid step. Lengths outside [0, seq], which the CPU rejects, are
//    clamped here (a device-side value cannot fail the run).
//  - States stay in float between steps (H also in the storage type, as the GEMM
//    operand); 16-bit storage rounds the input projection, that operand and the outputs.
//  - cuBLASLt's heuristic assumes 256-byte aligned base pointers, so a GEMM operand this
//    kernel offsets into is staged in aligned scratch: each direction's W and Wb slice
//    when unaligned, GRU's R_h rows always (packed [dirs, H, H]); scratch sub-buffers
//    are 256-aligned.
//  - Scratch: one ctx.workspace() call carved into the step buffers; runGemm's cuBLASLt
//    workspace is the separate ctx.libraryWorkspace(), so the two never overlap.
// The host half (attributes, shapes, the support predicate): rnn_host.cpp.
// Host fallback (support predicate): float64 data (no cuBLASLt path), sequence_lens of
// other than int32/int64, unknown activation names (the CPU reports those).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/gemm.h"
#include "backends/cuda/type_dispatch.cuh"
#include "backends/cuda/ops/rnn_common.h"

namespace kiln::cuda {
namespace {

#define KILN_RNN_GRID_LOOP(i, n)                                            \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

using namespace rnn;

// runGemm's cap on the cuBLASLt workspace it requests (its heuristic preference in
// matmul.cpp is min(workspaceLimitBytes, 64 MiB)); our scratch starts after it.
constexpr size_t kAlign = 256;

// Buffers of one step. Rows of hz / hh / states are (direction, batch entry).
template <class T>
struct StepBuffers {
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
__device__ __forceinline__ GateInputs<T> gateInputs(const CellParams& p, const StepBuffers<T>& buf,
                                                    const StepPos& q) {
  GateInputs<T> g;
  g.xp = buf.xproj + q.d * buf.xprojStride + projectionRow(p, q.t, q.b) * p.gateWidth;
  g.hz = buf.hz + (q.d * p.batch + q.b) * buf.hzWidth;
  g.rb = buf.bias ? buf.bias + q.d * 2 * p.gateWidth + p.gateWidth : nullptr;
  return g;
}

// GRU: z, r, h gates; H' = (1 - z) ⊙ h + z ⊙ H_prev.
template <class T>
__device__ __forceinline__ float gruCell(const CellParams& p, const StepBuffers<T>& buf,
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
__device__ __forceinline__ float lstmCell(const CellParams& p, const StepBuffers<T>& buf,
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
__global__ void gruResetKernel(CellParams p, StepBuffers<T> buf, int64_t s) {
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
__global__ void cellStepKernel(CellParams p, StepBuffers<T> buf, int64_t s) {
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

// cuBLASLt plans of the kernel's distinct GEMMs.
struct RnnLayerState {
  std::shared_ptr<void> inputProjection, recurrent, gruCandidate;
};

RnnLayerState& layerState(GpuKernelContext& ctx) {
  std::shared_ptr<void>& slot = ctx.layerState();
  if (!slot) slot = std::make_shared<RnnLayerState>();
  return *std::static_pointer_cast<RnnLayerState>(slot);
}

size_t alignUp(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Sub-buffers of the scratch, as offsets from the start of the workspace.
struct ScratchLayout {
  size_t xproj = 0, xprojDirBytes = 0, hz = 0, hh = 0, rh = 0, h = 0, c = 0, hOperand = 0;
  size_t wStage = 0, bStage = 0, rhStage = 0, total = 0;
};

ScratchLayout scratchLayout(const CellParams& p, int64_t input, int64_t hzWidth, bool gruSplit,
                            size_t elem) {
  const size_t states = static_cast<size_t>(p.dirs * p.batch * p.hidden);
  ScratchLayout s;
  size_t at = 0;
  const auto take = [&](size_t bytes) {
    const size_t offset = at;
    at += alignUp(bytes);
    return offset;
  };
  s.xprojDirBytes = alignUp(static_cast<size_t>(p.seq * p.batch * p.gateWidth) * elem);
  s.xproj = take(s.xprojDirBytes * static_cast<size_t>(p.dirs));
  s.hz = take(static_cast<size_t>(p.dirs * p.batch * hzWidth) * elem);
  s.hh = take(gruSplit ? states * elem : 0);
  s.rh = take(gruSplit ? states * elem : 0);
  s.h = take(states * sizeof(float));
  s.c = take(p.cell == Cell::kLstm ? states * sizeof(float) : 0);
  s.hOperand = take(states * elem);
  s.wStage = take(static_cast<size_t>(p.gateWidth * input) * elem);
  s.bStage = take(static_cast<size_t>(p.gateWidth) * elem);
  s.rhStage = take(gruSplit ? static_cast<size_t>(p.dirs * p.hidden * p.hidden) * elem : 0);
  s.total = at;
  return s;
}

bool isAligned(const void* ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % kAlign == 0;
}

// `src` itself when aligned, else `stage` after an async copy of `bytes` into it.
Result<const void*> alignedOperand(GpuKernelContext& ctx, const void* src, size_t bytes,
                                   void* stage) {
  if (isAligned(src)) return src;
  KILN_CUDA_CHECK(cudaMemcpyAsync(stage, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
  return static_cast<const void*>(stage);
}

template <class T>
Status launchStep(GpuKernelContext& ctx, const CellParams& p, const StepBuffers<T>& buf, int64_t s,
                  bool resetOnly) {
  const int64_t n = p.dirs * p.batch * p.hidden;
  if (resetOnly) {
    gruResetKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(p, buf, s);
    KILN_CUDA_CHECK_LAUNCH("gruResetKernel");
  } else {
    cellStepKernel<T><<<gridFor(n), kBlockSize, 0, ctx.stream()>>>(p, buf, s);
    KILN_CUDA_CHECK_LAUNCH("cellStepKernel");
  }
  return Status::ok();
}

template <class T>
Status runTyped(GpuKernelContext& ctx, const RnnInputs& in, const CellParams& p) {
  const DataType type = in.x->type;
  const int64_t seq = p.seq, batch = p.batch, hsz = p.hidden, dirs = p.dirs, gw = p.gateWidth;
  const Shape yShape = p.batchFirst ? Shape{batch, seq, dirs, hsz} : Shape{seq, dirs, batch, hsz};
  const Shape stateShape = p.batchFirst ? Shape{batch, dirs, hsz} : Shape{dirs, batch, hsz};
  T *y = nullptr, *yh = nullptr, *yc = nullptr;
  if (ctx.wantsOutput(0)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, yShape));
    y = out.as<T>();
  }
  if (ctx.wantsOutput(1)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(1, type, stateShape));
    yh = out.as<T>();
  }
  if (p.cell == Cell::kLstm && ctx.wantsOutput(2)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(2, type, stateShape));
    yc = out.as<T>();
  }
  const int64_t states = dirs * batch * hsz;
  if (states == 0) return Status::ok();  // Y, Y_h and Y_c are all empty
  if (seq > 0 && in.input == 0) return ctx.unsupported("RNN with an empty input dim");

  const bool gruSplit = p.cell == Cell::kGru && !p.linearBeforeReset;
  const int64_t hzWidth = gruSplit ? 2 * hsz : gw;
  const ScratchLayout layout = scratchLayout(p, in.input, hzWidth, gruSplit, sizeof(T));
  const int64_t limit = ctx.options().workspaceLimitBytes;
  if (static_cast<int64_t>(layout.total) > limit * 4) {
    return ctx.unsupported("RNN scratch of " + std::to_string(layout.total >> 20) +
                           " MiB exceeds the workspace limit");
  }
  KILN_ASSIGN_OR_RETURN(void* workspace, ctx.workspace(layout.total));
  char* scratch = static_cast<char*>(workspace);

  StepBuffers<T> buf;
  T* xproj = reinterpret_cast<T*>(scratch + layout.xproj);
  T* hz = reinterpret_cast<T*>(scratch + layout.hz);
  T* hh = gruSplit ? reinterpret_cast<T*>(scratch + layout.hh) : nullptr;
  buf.xproj = xproj;
  buf.xprojStride = static_cast<int64_t>(layout.xprojDirBytes / sizeof(T));
  buf.hz = hz;
  buf.hzWidth = hzWidth;
  buf.hh = hh;
  buf.bias = in.b ? in.b->as<const T>() : nullptr;
  buf.peep = in.p ? in.p->as<const T>() : nullptr;
  buf.h = reinterpret_cast<float*>(scratch + layout.h);
  buf.c = p.cell == Cell::kLstm ? reinterpret_cast<float*>(scratch + layout.c) : nullptr;
  buf.hOperand = reinterpret_cast<T*>(scratch + layout.hOperand);
  buf.rh = gruSplit ? reinterpret_cast<T*>(scratch + layout.rh) : nullptr;
  buf.y = y;

  loadStateKernel<T><<<gridFor(states), kBlockSize, 0, ctx.stream()>>>(
      p, in.h0 ? in.h0->as<const T>() : nullptr, in.c0 ? in.c0->as<const T>() : nullptr, buf.h,
      buf.c, buf.hOperand);
  KILN_CUDA_CHECK_LAUNCH("loadStateKernel");

  RnnLayerState& state = layerState(ctx);
  const bool tf32 = type == DataType::kFloat32 && ctx.options().allowTf32;
  if (seq > 0) {
    // X W^T + Wb for every step, one direction at a time (the bias is per direction).
    GemmProblem proj;
    proj.type = type;
    proj.m = seq * batch;
    proj.n = gw;
    proj.k = in.input;
    proj.transB = true;
    proj.bias = in.b != nullptr;
    proj.tf32 = tf32;
    for (int64_t d = 0; d < dirs; ++d) {
      KILN_ASSIGN_OR_RETURN(
          const void* w,
          alignedOperand(ctx, in.w->as<const T>() + d * gw * in.input,
                         static_cast<size_t>(gw * in.input) * sizeof(T), scratch + layout.wStage));
      const void* bias = nullptr;
      if (in.b) {
        KILN_ASSIGN_OR_RETURN(
            bias, alignedOperand(ctx, in.b->as<const T>() + d * 2 * gw,
                                 static_cast<size_t>(gw) * sizeof(T), scratch + layout.bStage));
      }
      KILN_RETURN_IF_ERROR(runGemm(ctx, proj, in.x->data, w, xproj + d * buf.xprojStride, bias,
                                   &state.inputProjection));
    }
  }
  // H_prev R^T (GRU split: the z and r rows of R only), batched over directions.
  GemmProblem rec;
  rec.type = type;
  rec.m = batch;
  rec.n = hzWidth;
  rec.k = hsz;
  rec.transB = true;
  rec.batch = dirs;
  rec.strideA = batch * hsz;
  rec.strideB = gw * hsz;
  rec.strideD = batch * hzWidth;
  rec.tf32 = tf32;
  // GRU split: (r ⊙ H_prev) R_h^T, with R_h of each direction packed in aligned scratch.
  GemmProblem cand = rec;
  cand.n = hsz;
  cand.strideB = hsz * hsz;
  cand.strideD = batch * hsz;
  const T* r = in.r->as<const T>();
  T* rhWeights = reinterpret_cast<T*>(scratch + layout.rhStage);
  if (gruSplit && seq > 0) {
    const size_t block = static_cast<size_t>(hsz * hsz) * sizeof(T);
    KILN_CUDA_CHECK(cudaMemcpy2DAsync(
        rhWeights, block, r + 2 * hsz * hsz, static_cast<size_t>(gw * hsz) * sizeof(T), block,
        static_cast<size_t>(dirs), cudaMemcpyDeviceToDevice, ctx.stream()));
  }
  for (int64_t s = 0; s < seq; ++s) {
    KILN_RETURN_IF_ERROR(runGemm(ctx, rec, buf.hOperand, r, hz, nullptr, &state.recurrent));
    if (gruSplit) {
      KILN_RETURN_IF_ERROR(launchStep(ctx, p, buf, s, /*resetOnly=*/true));
      KILN_RETURN_IF_ERROR(runGemm(ctx, cand, buf.rh, rhWeights, hh, nullptr, &state.gruCandidate));
    }
    KILN_RETURN_IF_ERROR(launchStep(ctx, p, buf, s, /*resetOnly=*/false));
  }
  if (yh || yc) {
    storeStateKernel<T><<<gridFor(states), kBlockSize, 0, ctx.stream()>>>(p, buf.h, buf.c, yh, yc);
    KILN_CUDA_CHECK_LAUNCH("storeStateKernel");
  }
  static const char* kNames[] = {"rnn", "gru", "lstm"};
  ctx.setImplementation(std::string("kiln:") + kNames[static_cast<int>(p.cell)] +
                        " fused cell + cublasLt GEMMs" + (tf32 ? " (tf32)" : ""));
  return Status::ok();
}

template <Cell kCell>
Status recurrentKernel(GpuKernelContext& ctx) {
  RnnInputs in;
  CellParams p;
  KILN_RETURN_IF_ERROR(configure(ctx, kCell, &in, &p));
  return dispatchDeviceType(ctx, in.x->type, device_types::kStorageFloats,
                            [&](auto tag) { return runTyped<decltype(tag)>(ctx, in, p); });
}

}  // namespace

void registerRnnGpuKernels(GpuKernelRegistry& registry) {
  // layout (batch-major) exists from opset 14; earlier versions ignore it.
  registry.add("RNN", 1, 1000, &recurrentKernel<Cell::kRnn>, supportsRecurrent);
  registry.add("GRU", 1, 1000, &recurrentKernel<Cell::kGru>, supportsRecurrent);
  registry.add("LSTM", 1, 1000, &recurrentKernel<Cell::kLstm>, supportsRecurrent);
}

}  // namespace kiln::cuda
