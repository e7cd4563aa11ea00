// LSTM, GRU and RNN on the GPU, the host half (kernels: rnn_impl.cu, contract:
// rnn_impl.h): attributes, shapes and activations read and checked as the CPU kernel
// does, the outputs, the scratch, the cuBLASLt GEMMs and the step loop, the registration
// and the support predicate.
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
//  - LSTM in 16 bits with the default activations and hidden sizes of 16k up to 128, no
//    sequence_lens, clip, input_forget or peepholes: every step in one persistent kernel
//    (lstm_persistent.h) after the input projection. Otherwise:
//  - Each step: one GEMM, strided-batched over the directions, H_prev R^T into a gates
//    scratch, then one fused pointwise kernel that adds Rb (and peepholes), applies the
//    activations in float, updates H (and C) and writes Y[t]. GRU without
//    linear_before_reset needs r before its candidate GEMM: a small kernel forms
//    r ⊙ H_prev, a second GEMM multiplies it by R_h^T, then the pointwise kernel runs.
//    Each distinct GEMM keeps its own cuBLASLt plan slot in the layer state.
//  - sequence_lens (int32 or int64) are read per batch entry on the device, no host
//    round trip (rnn_impl.cu: lengths outside [0, seq] are clamped there).
//  - States stay in float between steps (H also in the storage type, as the GEMM
//    operand); 16-bit storage rounds the input projection, that operand and the outputs.
//  - cuBLASLt's heuristic assumes 256-byte aligned base pointers, so a GEMM operand this
//    kernel offsets into is staged in aligned scratch: each direction's W and Wb slice
//    when unaligned, GRU's R_h rows always (packed [dirs, H, H]); scratch sub-buffers
//    are 256-aligned.
//  - Scratch: one ctx.workspace() call carved into the step buffers; runGemm's cuBLASLt
//    workspace is the separate ctx.libraryWorkspace(), so the two never overlap.
// Host fallback (support predicate): float64 data (no cuBLASLt path), sequence_lens of
// other than int32/int64, unknown activation names (the CPU reports those).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/gemm.h"
#include "backends/cuda/ops/lstm_persistent.h"
#include "backends/cuda/ops/op_common.h"
#include "backends/cuda/ops/rnn_impl.h"
#include "ops/rnn_params.h"

namespace kiln::cuda {
namespace {

using namespace rnn;

// ------------------------------------------------------------------ attributes, shapes

// The node's inputs (nullptr where omitted) and X's feature width.
struct RnnInputs {
  const DeviceTensor *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *lens = nullptr,
                     *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  int64_t input = 0;
};

// The activations (ops/rnn_params.h, the CPU's list), at most kMaxActivations.
Status parseActivations(const GpuKernelContext& ctx, Cell cell, CellParams* p) {
  auto acts = ops::rnnActivations(ctx.node(), cell, p->dirs);
  if (!acts.isOk())
    return acts.status().code() == StatusCode::kUnsupported
               ? ctx.unsupported(acts.status().message())
               : ctx.error(acts.status().message());
  if (acts->size() > static_cast<size_t>(kMaxActivations))
    return ctx.error("more activations than two directions take");
  std::copy(acts->begin(), acts->end(), p->acts);
  p->actsPerDirection = ops::rnnActivationsPerDirection(cell);
  return Status::ok();
}

const DeviceTensor* optionalInput(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.inputCount() && ctx.hasInput(i) ? &ctx.input(i) : nullptr;
}

Status expectShape(const GpuKernelContext& ctx, const DeviceTensor* t, const Shape& shape,
                   const char* what) {
  if (t && t->shape != shape) {
    return ctx.error(std::string("input ") + what + " has shape " + shapeToString(t->shape) +
                     ", expected " + shapeToString(shape));
  }
  return Status::ok();
}

// Reads the attributes and checks the shapes in the CPU kernel's order, with its messages;
// kUnsupported for what the device kernels lack (sequence_lens types, activation names).
Status configure(const GpuKernelContext& ctx, Cell cell, RnnInputs* in, CellParams* p) {
  for (size_t i = 0; i < 3; ++i) {
    if (!optionalInput(ctx, i))
      return ctx.error("required input " + std::to_string(i) + " is missing");
  }
  const bool lstm = cell == Cell::kLstm;
  in->x = &ctx.input(0);
  in->w = &ctx.input(1);
  in->r = &ctx.input(2);
  in->b = optionalInput(ctx, 3);
  in->lens = optionalInput(ctx, 4);
  in->h0 = optionalInput(ctx, 5);
  in->c0 = lstm ? optionalInput(ctx, 6) : nullptr;
  in->p = lstm ? optionalInput(ctx, 7) : nullptr;
  p->cell = cell;
  const int64_t gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  const int64_t layout = ctx.opset() >= 14 ? ctx.node().attrInt("layout", 0) : 0;
  p->batchFirst = layout != 0;
  const std::string direction = ctx.node().attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.error("attribute 'direction' has unknown value '" + direction + "'");
  }
  p->dirs = direction == "bidirectional" ? 2 : 1;
  p->reverseOnly = direction == "reverse";
  if (in->x->rank() != 3 || in->w->rank() != 3 || in->r->rank() != 3) {
    return ctx.error("inputs X, W and R must be 3-D");
  }
  p->seq = in->x->shape[p->batchFirst ? 1 : 0];
  p->batch = in->x->shape[p->batchFirst ? 0 : 1];
  in->input = in->x->shape[2];
  p->hidden = in->r->shape[2];
  if (ctx.node().hasAttr("hidden_size") && ctx.node().attrInt("hidden_size", 0) != p->hidden) {
    return ctx.error("attribute 'hidden_size' does not match R");
  }
  p->gateWidth = gates * p->hidden;
  const Shape stateShape =
      p->batchFirst ? Shape{p->batch, p->dirs, p->hidden} : Shape{p->dirs, p->batch, p->hidden};
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->w, {p->dirs, p->gateWidth, in->input}, "W"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->r, {p->dirs, p->gateWidth, p->hidden}, "R"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->b, {p->dirs, 2 * p->gateWidth}, "B"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->h0, stateShape, "initial_h"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->c0, stateShape, "initial_c"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->p, {p->dirs, 3 * p->hidden}, "P"));
  for (const DeviceTensor* t : {in->w, in->r, in->b, in->h0, in->c0, in->p}) {
    if (t && t->type != in->x->type) return ctx.error("inputs must share X's type");
  }
  if (in->lens) {
    KILN_RETURN_IF_ERROR(expectShape(ctx, in->lens, {p->batch}, "sequence_lens"));
    if (in->lens->type != DataType::kInt32 && in->lens->type != DataType::kInt64) {
      return ctx.unsupported(std::string("sequence_lens of type ") + dataTypeName(in->lens->type));
    }
    p->lens = in->lens->data;
    p->lensInt64 = in->lens->type == DataType::kInt64;
  }
  KILN_RETURN_IF_ERROR(parseActivations(ctx, cell, p));
  p->clip = ctx.node().attrFloat("clip", 0.f);
  p->linearBeforeReset = ctx.node().attrInt("linear_before_reset", 0) != 0;
  p->inputForget = ctx.node().attrInt("input_forget", 0) != 0;
  return Status::ok();
}

// Float storage data (not float64: no cuBLASLt path), int32/int64 sequence_lens and
// activations the device switch knows.
std::string supportsRecurrent(const Node& node, const std::vector<DataType>& types) {
  for (size_t i = 0; i < types.size(); ++i) {
    const DataType t = types[i];
    if (t == DataType::kUndefined) continue;
    if (i == 4) {
      if (t != DataType::kInt32 && t != DataType::kInt64)
        return std::string("sequence_lens of type ") + dataTypeName(t) + " stays on the host";
      continue;
    }
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return std::string("no GPU kernel for ") + dataTypeName(t) + " inputs";
  }
  for (const std::string& name : node.attrStrings("activations")) {
    if (!ops::isRnnActivationName(name)) return "activation '" + name + "' has no GPU kernel";
  }
  return "";
}

// ------------------------------------------------------------------ scratch

// runGemm's cap on the cuBLASLt workspace it requests (its heuristic preference in
// matmul.cpp is min(workspaceLimitBytes, 64 MiB)); our scratch starts after it.
constexpr size_t kAlign = 256;

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

// `base` advanced by `count` elements of `elem` bytes.
const char* elementsAfter(const void* base, int64_t count, size_t elem) {
  return static_cast<const char*>(base) + static_cast<size_t>(count) * elem;
}

// ------------------------------------------------------------------ the run

// The outputs, the scratch, the input projection, then per step the recurrent GEMM(s)
// and the cell kernel. `in.x->type` is in kRnnTypes (checked by the caller).
Status runRecurrent(GpuKernelContext& ctx, const RnnInputs& in, const CellParams& p) {
  const DataType type = in.x->type;
  const size_t elem = dataTypeSize(type);
  const int64_t seq = p.seq, batch = p.batch, hsz = p.hidden, dirs = p.dirs, gw = p.gateWidth;
  const Shape yShape = p.batchFirst ? Shape{batch, seq, dirs, hsz} : Shape{seq, dirs, batch, hsz};
  const Shape stateShape = p.batchFirst ? Shape{batch, dirs, hsz} : Shape{dirs, batch, hsz};
  void *y = nullptr, *yh = nullptr, *yc = nullptr;
  if (ctx.wantsOutput(0)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, type, yShape));
    y = out.data;
  }
  if (ctx.wantsOutput(1)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(1, type, stateShape));
    yh = out.data;
  }
  if (p.cell == Cell::kLstm && ctx.wantsOutput(2)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(2, type, stateShape));
    yc = out.data;
  }
  const int64_t states = dirs * batch * hsz;
  if (states == 0) return Status::ok();  // Y, Y_h and Y_c are all empty
  if (seq > 0 && in.input == 0) return ctx.unsupported("RNN with an empty input dim");

  const bool gruSplit = p.cell == Cell::kGru && !p.linearBeforeReset;
  const int64_t hzWidth = gruSplit ? 2 * hsz : gw;
  const ScratchLayout layout = scratchLayout(p, in.input, hzWidth, gruSplit, elem);
  const int64_t limit = ctx.options().workspaceLimitBytes;
  if (static_cast<int64_t>(layout.total) > limit * 4) {
    return ctx.unsupported("RNN scratch of " + std::to_string(layout.total >> 20) +
                           " MiB exceeds the workspace limit");
  }
  KILN_ASSIGN_OR_RETURN(void* workspace, ctx.workspace(layout.total));
  char* scratch = static_cast<char*>(workspace);

  StepBuffers buf;
  char* xproj = scratch + layout.xproj;
  void* hz = scratch + layout.hz;
  void* hh = gruSplit ? scratch + layout.hh : nullptr;
  buf.xproj = xproj;
  buf.xprojStride = static_cast<int64_t>(layout.xprojDirBytes / elem);
  buf.hz = hz;
  buf.hzWidth = hzWidth;
  buf.hh = hh;
  buf.bias = in.b ? in.b->data : nullptr;
  buf.peep = in.p ? in.p->data : nullptr;
  buf.h = reinterpret_cast<float*>(scratch + layout.h);
  buf.c = p.cell == Cell::kLstm ? reinterpret_cast<float*>(scratch + layout.c) : nullptr;
  buf.hOperand = scratch + layout.hOperand;
  buf.rh = gruSplit ? scratch + layout.rh : nullptr;
  buf.y = y;

  KILN_RETURN_IF_ERROR(launchLoadState(type, p, in.h0 ? in.h0->data : nullptr,
                                       in.c0 ? in.c0->data : nullptr, buf.h, buf.c, buf.hOperand,
                                       ctx.stream()));

  RnnLayerState& state = layerState(ctx);
  const bool tf32 = type == DataType::kFloat32 && ctx.options().allowTf32;
  // LSTM in 16 bits: every step in one persistent kernel (lstm_persistent.h) when it takes
  // this one; its projection's bias is Wb + Rb.
  const bool persistent = seq > 0 && persistentLstmRefusal(type, p, in.p != nullptr).empty();
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
          alignedOperand(ctx, elementsAfter(in.w->data, d * gw * in.input, elem),
                         static_cast<size_t>(gw * in.input) * elem, scratch + layout.wStage));
      const void* bias = nullptr;
      if (in.b && persistent) {
        KILN_RETURN_IF_ERROR(launchFoldRecurrentBias(type,
                                                     elementsAfter(in.b->data, d * 2 * gw, elem),
                                                     scratch + layout.bStage, gw, ctx.stream()));
        bias = scratch + layout.bStage;
      } else if (in.b) {
        KILN_ASSIGN_OR_RETURN(
            bias, alignedOperand(ctx, elementsAfter(in.b->data, d * 2 * gw, elem),
                                 static_cast<size_t>(gw) * elem, scratch + layout.bStage));
      }
      KILN_RETURN_IF_ERROR(runGemm(ctx, proj, in.x->data, w,
                                   xproj + static_cast<size_t>(d) * layout.xprojDirBytes, bias,
                                   &state.inputProjection));
    }
  }
  if (persistent) {
    int device = 0, sms = 0;
    KILN_CUDA_CHECK(cudaGetDevice(&device));
    KILN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    PersistentLstmLaunch launch;
    launch.type = type;
    launch.p = p;
    launch.xproj = buf.xproj;
    launch.xprojStride = buf.xprojStride;
    launch.r = in.r->data;
    launch.h = buf.h;
    launch.c = buf.c;
    launch.hOperand = buf.hOperand;
    launch.y = y;
    KILN_RETURN_IF_ERROR(launchPersistentLstm(launch, sms, ctx.stream()));
    if (yh || yc) {
      KILN_RETURN_IF_ERROR(launchStoreState(type, p, buf.h, buf.c, yh, yc, ctx.stream()));
    }
    const PersistentLstmShape shape = persistentLstmShape(p, sms);
    ctx.setImplementation("kiln:lstm persistent, " + std::to_string(seq) +
                          " steps in one kernel (R in shared memory, mma.sync, " +
                          std::to_string(shape.rowsPerBlock) +
                          " entries a block) + cublasLt input projection");
    return Status::ok();
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
  const void* r = in.r->data;
  void* rhWeights = scratch + layout.rhStage;
  if (gruSplit && seq > 0) {
    const size_t block = static_cast<size_t>(hsz * hsz) * elem;
    KILN_CUDA_CHECK(cudaMemcpy2DAsync(rhWeights, block, elementsAfter(r, 2 * hsz * hsz, elem),
                                      static_cast<size_t>(gw * hsz) * elem, block,
                                      static_cast<size_t>(dirs), cudaMemcpyDeviceToDevice,
                                      ctx.stream()));
  }
  for (int64_t s = 0; s < seq; ++s) {
    KILN_RETURN_IF_ERROR(runGemm(ctx, rec, buf.hOperand, r, hz, nullptr, &state.recurrent));
    if (gruSplit) {
      KILN_RETURN_IF_ERROR(launchGruReset(type, p, buf, s, ctx.stream()));
      KILN_RETURN_IF_ERROR(runGemm(ctx, cand, buf.rh, rhWeights, hh, nullptr, &state.gruCandidate));
    }
    KILN_RETURN_IF_ERROR(launchCellStep(type, p, buf, s, ctx.stream()));
  }
  if (yh || yc) {
    KILN_RETURN_IF_ERROR(launchStoreState(type, p, buf.h, buf.c, yh, yc, ctx.stream()));
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
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, in.x->type, kRnnTypes));
  return runRecurrent(ctx, in, p);
}

}  // namespace

void registerRnnGpuKernels(GpuKernelRegistry& registry) {
  // layout (batch-major) exists from opset 14; earlier versions ignore it.
  registry.add("RNN", 1, 1000, &recurrentKernel<Cell::kRnn>, supportsRecurrent);
  registry.add("GRU", 1, 1000, &recurrentKernel<Cell::kGru>, supportsRecurrent);
  registry.add("LSTM", 1, 1000, &recurrentKernel<Cell::kLstm>, supportsRecurrent);
}

}  // namespace kiln::cuda
