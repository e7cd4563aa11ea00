// A channels-last ai.kiln QuantizedConv (contract: ir/quantized_layers.h; which nodes:
// passes/channels_last_layout.cpp) as one cuDNN fused graph on NHWC int8 X and a
// KRSC int8 W:
//   conv(X, W; int32 accumulate) -> * m[k] -> + B[k] [-> + Z] [-> ReLU] [-> * o] -> Y
// with m[k] = sx * sw[k] and o = 1/sy, every stage after the convolution a virtual
// float tensor. An int8 Z (z_scale sz) is added as it is, in units of sz: m and B are
// divided by sz and o becomes sz/sy (sz for a float Y), so the graph reads one byte
// per residual value. X and W are zero-padded to a multiple of 4 channels first when
// C is not (ResNet's stem: Conv([X, 0], [W, 0]) = Conv(X, W)), and Y is int8
// (requantized: cuDNN rounds the float to nearest-even and saturates) or the engine's
// float storage. Zero points are 0 (the pass only sends symmetric layers).
// The plan: the one an earlier layer or context chose for the same graph, or the
// plan file's (cudnn_plan_cache.h); else the heuristics' precompiled engines and a
// few that compile at run time are timed at the first run of a shape and the
// fastest kept. Layers with an int8 Y (and an int8 Z or none) then time the plan
// against the tiles of Kiln's own kernel (int8_conv_mma.h) and, for 1x1 ones,
// cuBLASLt's GEMM (int8_pointwise_gemm.h) in int8_conv_race.cpp; the fastest runs.
// A plan file's race that Kiln's kernel or cuBLASLt won is taken without building or
// restoring cuDNN's plan. The layer's state is int8_conv_state.h's. The implementation
// text names the winner with every candidate's time.
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "backends/cuda/compiled_code_stores.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/ops/channel_pad.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/int8_conv_cudnn.h"
#include "backends/cuda/ops/int8_conv_mma.h"
#include "backends/cuda/ops/layer_choice.h"
#include "backends/cuda/ops/int8_conv_state.h"
#include "backends/cuda/ops/int8_pointwise_gemm.h"
#include "ir/channels_last.h"
#include "ir/quantized_layers.h"

namespace kiln::cuda {
namespace {

enum : int64_t { kUidScale = 4, kUidBias = 5, kUidZ = 6, kUidOutScale = 7, kUidStage = 10 };

using int8conv::adoptRecordedWinner;
using int8conv::CudnnInt8State;
using int8conv::int8EpilogueLayer;
using int8conv::raceTheOtherKernels;
using int8conv::uploadFloats;

Result<float> hostScalar(GpuKernelContext& ctx, size_t slot) {
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(slot));
  if (t.type() != DataType::kFloat32 || t.numel() != 1)
    return ctx.error("input " + std::to_string(slot) + " (scale) must be one float32 value");
  return t.data<float>()[0];
}

Status zeroOrAbsent(GpuKernelContext& ctx, size_t slot) {
  if (!ctx.hasInput(slot)) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(slot));
  if (t.numel() != 1 || t.valueAsInt64(0) != 0 || t.type() != DataType::kInt8)
    return ctx.unsupported("cuDNN's INT8 convolution takes int8 zero point 0 only");
  return Status::ok();
}

// m[k] = sx * sw[k] and B[k] (0 without B) on the device, both divided by sz for an
// int8 Z; o = (sz or 1) / (sy or 1) when the graph scales its output.
Status prepareScales(GpuKernelContext& ctx, int64_t channels, CudnnInt8State* s) {
  KILN_RETURN_IF_ERROR(zeroOrAbsent(ctx, kQuantXZeroPoint));
  KILN_RETURN_IF_ERROR(zeroOrAbsent(ctx, kQuantYZeroPoint));
  KILN_ASSIGN_OR_RETURN(const float xScale, hostScalar(ctx, kQuantXScale));
  KILN_ASSIGN_OR_RETURN(Tensor wScale, ctx.hostInput(kQuantWScale));
  if (wScale.type() != DataType::kFloat32 || (wScale.numel() != 1 && wScale.numel() != channels))
    return ctx.error("input 6 (w_scale) must be float32, one value or one per output channel");
  float zScale = 1.f;
  if (s->zType == DataType::kInt8) {
    KILN_ASSIGN_OR_RETURN(zScale, hostScalar(ctx, kQuantZScale));
    if (!(zScale > 0)) return ctx.error("input 9 (z_scale) must be positive");
  }
  std::vector<float> scale(static_cast<size_t>(channels)), bias(scale.size(), 0.f);
  for (int64_t c = 0; c < channels; ++c)
    scale[c] = xScale * wScale.data<float>()[wScale.numel() == 1 ? 0 : c] / zScale;
  if (ctx.hasInput(kQuantBias)) {
    KILN_ASSIGN_OR_RETURN(Tensor b, ctx.hostInput(kQuantBias));
    if (b.type() != DataType::kFloat32 || b.numel() != channels)
      return ctx.error("input 2 (bias) must be float32 with one value per output channel");
    for (int64_t c = 0; c < channels; ++c) bias[c] = b.data<float>()[c] / zScale;
  }
  KILN_RETURN_IF_ERROR(uploadFloats(&s->scale, scale, "int8 conv scales"));
  KILN_RETURN_IF_ERROR(uploadFloats(&s->bias, bias, "int8 conv bias"));
  s->hostScale = scale;
  s->hostBias = bias;
  s->quantizedOutput = ctx.hasInput(kQuantYScale);
  float yScale = 1.f;
  if (s->quantizedOutput) {
    KILN_ASSIGN_OR_RETURN(yScale, hostScalar(ctx, kQuantYScale));
  }
  s->scaledOutput = s->quantizedOutput || s->zType == DataType::kInt8;
  s->hostOutScale = zScale / yScale;
  if (s->scaledOutput)
    KILN_RETURN_IF_ERROR(uploadFloats(&s->outScale, {s->hostOutScale}, "int8 output scale"));
  return Status::ok();
}

// The fused graph of `s` (see the header comment).
Status buildGraph(cudnnHandle_t handle, const CudnnInt8State& s, CudnnDescriptor* graph) {
  const ConvGeometry& g = s.geometry;
  const std::vector<int64_t> perChannel = {1, g.y[1], 1, 1}, scalar = {1, 1, 1, 1};
  CudnnDescriptor x, w, y, scale, bias, z, outScale;
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&x, CUDNN_DATA_INT8, g.x, kConvUidX, false, true));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&w, CUDNN_DATA_INT8, g.w, kConvUidW, false, true));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&y, cudnnTypeOf(s.yType), g.y, kConvUidY, false, true));
  KILN_RETURN_IF_ERROR(
      makeCudnnTensor(&scale, CUDNN_DATA_FLOAT, perChannel, kUidScale, false, true));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&bias, CUDNN_DATA_FLOAT, perChannel, kUidBias, false, true));
  if (s.residual)
    KILN_RETURN_IF_ERROR(makeCudnnTensor(&z, cudnnTypeOf(s.zType), g.y, kUidZ, false, true));
  if (s.scaledOutput)
    KILN_RETURN_IF_ERROR(
        makeCudnnTensor(&outScale, CUDNN_DATA_FLOAT, scalar, kUidOutScale, false, true));
  // Stages after the convolution: scale, bias, [Z], [ReLU], [o].
  struct Stage {
    cudnnPointwiseMode_t mode;
    cudnnBackendDescriptor_t operand;
  };
  std::vector<Stage> stages = {{CUDNN_POINTWISE_MUL, scale.get()},
                               {CUDNN_POINTWISE_ADD, bias.get()}};
  if (s.residual) stages.push_back({CUDNN_POINTWISE_ADD, z.get()});
  if (s.relu) stages.push_back({CUDNN_POINTWISE_RELU_FWD, nullptr});
  if (s.scaledOutput) stages.push_back({CUDNN_POINTWISE_MUL, outScale.get()});
  std::vector<CudnnDescriptor> virtuals(stages.size());
  for (size_t i = 0; i < stages.size(); ++i)
    KILN_RETURN_IF_ERROR(makeCudnnTensor(&virtuals[i], CUDNN_DATA_FLOAT, g.y,
                                         kUidStage + static_cast<int64_t>(i), true, true));
  std::vector<CudnnDescriptor> ops(stages.size() + 1);
  KILN_RETURN_IF_ERROR(makeConvolutionOp(g, x.get(), w.get(), virtuals[0].get(), &ops[0]));
  for (size_t i = 0; i < stages.size(); ++i) {
    cudnnBackendDescriptor_t out = i + 1 == stages.size() ? y.get() : virtuals[i + 1].get();
    KILN_RETURN_IF_ERROR(
        makePointwiseOp(stages[i].mode, virtuals[i].get(), stages[i].operand, out, &ops[i + 1]));
  }
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const CudnnDescriptor& op : ops) raw.push_back(op.get());
  return makeOperationGraph(handle, raw, graph);
}

CudnnBindings bindingsOf(const CudnnInt8State& s, const DeviceTensor& x, const DeviceTensor& w,
                         void* y, const void* z) {
  CudnnBindings b = {{kConvUidX, x.data},
                     {kConvUidW, w.data},
                     {kConvUidY, y},
                     {kUidScale, s.scale.data()},
                     {kUidBias, s.bias.data()}};
  if (s.residual) b.push_back({kUidZ, const_cast<void*>(z)});
  if (s.scaledOutput) b.push_back({kUidOutScale, s.outScale.data()});
  return b;
}

// The text that identifies the graph of `s` (its cache key: no pointers, no values).
std::string graphText(const CudnnInt8State& s) {
  const ConvGeometry& g = s.geometry;
  std::ostringstream out;
  out << "int8 conv nhwc;" << convGeometryDimsText(g) << "y " << dataTypeName(s.yType) << "; z "
      << (s.residual ? dataTypeName(s.zType) : "none") << "; relu " << s.relu << "; scaled "
      << s.scaledOutput;
  return out.str();
}

// How many engines that compile at run time a layer times (each compiles once per
// graph and process; a plan file stores the winner compiled): KILN_CUDNN_RTC_CANDIDATES,
// 8 by default. ResNet-50 INT8 b256 on an H100: 3 -> 6.09 ms (build 50 s), 8 -> 5.93 ms
// (build 93 s), measured in one device call (docs/benchmarks.md).
int runtimeCompiledCandidates() {
  const char* text = std::getenv("KILN_CUDNN_RTC_CANDIDATES");
  return text ? std::max(0, std::atoi(text)) : 8;
}

// The heuristics' engines for the graph (precompiled ones and up to
// runtimeCompiledCandidates() that compile at run time), each timed on the layer's
// buffers; the fastest goes to `s` and is remembered for `key`.
Status timePlans(GpuKernelContext& ctx, cudnnHandle_t handle, cudnnBackendDescriptor_t graph,
                 const CudnnBindings& bindings, const std::string& key, CudnnInt8State* s,
                 std::string* timingText) {
  PlanFilter filter;
  // Eight precompiled: engine 4's configurations for one shape span 0.17-0.63 ms
  // (ResNet-50's 56x56 3x3 at batch 256, H100, bench/probes/cudnn_int8_probe).
  const int rtc = runtimeCompiledCandidates();
  filter.wanted = std::max(ctx.options().convolutionCandidates, 8) + rtc;
  filter.workspaceLimit = ctx.options().workspaceLimitBytes;
  filter.runtimeCompilation = rtc > 0;
  filter.runtimeCompiledLimit = rtc;
  std::vector<std::unique_ptr<CudnnPlan>> plans;
  std::vector<std::string> rejected;
  KILN_RETURN_IF_ERROR(heuristicPlans(handle, graph, filter, &plans, &rejected));
  if (plans.empty() && rtc == 0) {  // only runtime-compiled engines take this graph
    filter.runtimeCompilation = true;
    filter.runtimeCompiledLimit = 2;
    KILN_RETURN_IF_ERROR(heuristicPlans(handle, graph, filter, &plans, &rejected));
  }
  if (plans.empty())
    return ctx.unsupported("cuDNN has no INT8 NHWC engine for this convolution" +
                           (rejected.empty() ? std::string() : " (" + rejected.front() + ")"));
  std::ostringstream timings;
  float bestMs = 1e30f;
  for (auto& plan : plans) {
    KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, plan->workspace));
    Result<float> ms = timeOnStream(
        ctx.stream(), [&] { return executeCudnnPlan(handle, *plan, bindings, workspace); });
    if (!ms.isOk()) continue;  // fails on these shapes: not a candidate
    timings << (timings.tellp() > 0 ? ", " : "") << plan->description.substr(6) << "=" << ms.value()
            << "ms";
    if (ms.value() < bestMs) {
      bestMs = ms.value();
      s->plan = std::shared_ptr<CudnnPlan>(std::move(plan));
    }
  }
  if (!s->plan) return ctx.unsupported("no cuDNN INT8 engine ran on these shapes");
  rememberCudnnPlan(cudnnPlanStoreOf(ctx), key, *s->plan, ctx.node().displayName(), timings.str());
  *timingText = "timed {" + timings.str() + "}";
  s->planMs = bestMs;
  return Status::ok();
}

// The layer's implementation as the inspector shows it: the kernel that runs, its output
// and residual, `note` (channel padding) and `how` it was chosen.
std::string implementationText(const CudnnInt8State& s, const std::string& note,
                               const std::string& how) {
  const std::string what =
      s.kilnTile >= 0 ? "kiln int8 MMA kernel " + int8ConvMmaTileName(s.kilnTile) + " ("
      : s.gemm        ? "cublasLt int8 GEMM, int8 epilogue (1x1 conv, "
                      : "cudnn int8 NHWC fused graph " + s.plan->description.substr(6) + " (";
  return what + (s.quantizedOutput ? "int8 output" : "float output") +
         (s.zType == DataType::kInt8 && s.residual ? ", int8 residual)" : ")") + note + "; " + how;
}

// The layer's choice as a plan records it (layer_choice.h): the race's winner, with
// cuDNN's engine configuration when the plan won.
std::string choiceText(const CudnnInt8State& s) {
  LayerChoice c;
  c.form = s.kilnTile >= 0 ? "mma:" + int8ConvMmaTileName(s.kilnTile) : s.gemm ? "gemm" : "cudnn";
  if (c.form == "cudnn" && s.plan) {
    c.hasEngine = true;
    c.engine = s.plan->choice;
  }
  return encodeLayerChoice(c);
}

// `s` set up as a plan's recorded choice says, without timing: cuBLASLt's GEMM or a tile
// of Kiln's kernel without cuDNN's plan, or cuDNN's engine configuration (its serialized
// plan when this process or the plan file holds the record of `key` for that engine).
// kUnsupported with the reason when the choice does not apply to this layer here.
Status adoptPlannedChoice(GpuKernelContext& ctx, cudnnHandle_t handle, const std::string& key,
                          const std::string& planned, CudnnInt8State* s) {
  LayerChoice c;
  if (!parseLayerChoice(planned, &c) || c.paddedChannels > 0 || c.groups > 0)
    return unsupported("not an INT8 convolution choice");
  if (c.form != "cudnn") {
    if (c.hasEngine) return unsupported("not an INT8 convolution choice");
    KILN_ASSIGN_OR_RETURN(const bool adopted, adoptPlannedWinner(ctx, c.form, s));
    return adopted ? Status::ok() : unsupported(c.form + " does not run this layer");
  }
  if (!c.hasEngine) return unsupported("no cuDNN engine recorded");
  CudnnDescriptor graph;
  KILN_RETURN_IF_ERROR(buildGraph(handle, *s, &graph));
  KILN_ASSIGN_OR_RETURN(
      s->plan, planOfRecordedChoice(cudnnPlanStoreOf(ctx), handle, graph.get(), key, c.engine,
                                    ctx.options().workspaceLimitBytes, ctx.node().displayName()));
  return Status::ok();
}

// The plan of the graph of `s`: an earlier choice for the same graph (this process's,
// or the plan file's) built again, else timePlans(). When that earlier choice holds a
// race another kernel won, the winner is taken and cuDNN's plan is neither built nor
// restored (a plan file's INT8 layers load without finalizing cuDNN plans).
Status choosePlan(GpuKernelContext& ctx, cudnnHandle_t handle, const CudnnBindings& bindings,
                  const DeviceTensor& x, const DeviceTensor& w, const void* z, void* y,
                  const std::string& note, CudnnInt8State* s) {
  KILN_ASSIGN_OR_RETURN(const std::string key, cudnnPlanKey(graphText(*s)));
  // KILN_INT8_CONV=cudnn keeps layers on cuDNN, =gemm takes cuBLASLt whenever it
  // has an algorithm, =mma Kiln's kernel whenever it fits and =mma:<tile> that tile
  // of it (tests, A/B runs); unset, the fastest wins.
  const char* force = std::getenv("KILN_INT8_CONV");
  const std::string forced = force ? force : "";
  std::string replayNote;
  if (const std::string planned = forced.empty() ? ctx.plannedChoice() : ""; !planned.empty()) {
    Status adopted = adoptPlannedChoice(ctx, handle, key, planned, s);
    if (adopted.isOk()) {
      ctx.setImplementation(implementationText(*s, note, "the plan's choice: " + planned));
      ctx.setChoice(planned);
      return Status::ok();
    }
    replayNote = "; the plan's choice '" + planned + "' does not apply here: " + adopted.message() +
                 ": timed again";
    s->plan.reset();
    s->gemm.reset();
    s->kilnTile = -1;
  }
  CudnnPlanRecord record;
  const bool recorded = findCudnnPlanRecord(cudnnPlanStoreOf(ctx), key, &record);
  const std::string origin = record.fromPlanFile ? "from the plan file" : "chosen earlier";
  if (recorded && forced.empty() && int8EpilogueLayer(*s)) {
    // Another kernel won this graph's recorded race: cuDNN's plan is not needed.
    std::string taken =
        origin + ", cuDNN's plan not restored (timed then {" + record.timings + "})";
    KILN_ASSIGN_OR_RETURN(const bool adopted, adoptRecordedWinner(ctx, record, s, &taken));
    if (adopted) {
      rememberCudnnPlanRecord(cudnnPlanStoreOf(ctx), key, record, ctx.node().displayName());
      ctx.setImplementation(implementationText(*s, note, taken + replayNote));
      ctx.setChoice(choiceText(*s));
      return Status::ok();
    }
  }
  std::string how;
  CudnnDescriptor graph;
  KILN_RETURN_IF_ERROR(buildGraph(handle, *s, &graph));
  bool reused = false;  // `record` is this graph's, and its plan is s->plan
  if (recorded) {
    Result<std::unique_ptr<CudnnPlan>> plan = planFromRecord(handle, graph.get(), record);
    if (plan.isOk()) {
      s->plan = std::shared_ptr<CudnnPlan>(std::move(plan.value()));
      reused = true;
      rememberCudnnPlanRecord(cudnnPlanStoreOf(ctx), key, record, ctx.node().displayName());
      how = origin + (record.json.empty() ? "" : ", serialized") + " (timed then {" +
            record.timings + "})";
    }
  }
  if (!s->plan) KILN_RETURN_IF_ERROR(timePlans(ctx, handle, graph.get(), bindings, key, s, &how));
  if (int8EpilogueLayer(*s) && forced != "cudnn")
    KILN_RETURN_IF_ERROR(
        raceTheOtherKernels(ctx, handle, bindings, x, w, z, y,
                            forced == "gemm" || forced.rfind("mma", 0) == 0 ? forced : "", key,
                            reused ? &record : nullptr, s, &how));
  ctx.setImplementation(implementationText(*s, note, how + replayNote));
  ctx.setChoice(choiceText(*s));
  return Status::ok();
}

// X and W with their channels zero-padded to a multiple of 4 (cuDNN's INT8 engines
// take no other), in the context's workspace; as they are when C % 4 == 0.
Status padChannels(GpuKernelContext& ctx, DeviceTensor* x, DeviceTensor* w) {
  const int64_t c = x->shape[3], padded = (c + 3) / 4 * 4;
  if (c == padded) return Status::ok();
  const int64_t xRows = x->numel() / c, wRows = w->numel() / c;
  const int64_t xBytes = (xRows * padded + 255) / 256 * 256;
  KILN_ASSIGN_OR_RETURN(void* base, ctx.workspace(static_cast<size_t>(xBytes + wRows * padded)));
  void* wPadded = static_cast<char*>(base) + xBytes;
  KILN_RETURN_IF_ERROR(padInnermostChannels(x->data, base, xRows, static_cast<int>(c),
                                            static_cast<int>(padded), DataType::kInt8,
                                            ctx.stream()));
  KILN_RETURN_IF_ERROR(padInnermostChannels(w->data, wPadded, wRows, static_cast<int>(c),
                                            static_cast<int>(padded), DataType::kInt8,
                                            ctx.stream()));
  x->data = base;
  x->shape[3] = padded;
  w->data = wPadded;
  w->shape[3] = padded;
  return Status::ok();
}

}  // namespace

Status quantizedConvChannelsLast(GpuKernelContext& ctx) {
  DeviceTensor x = ctx.input(kQuantX);
  DeviceTensor w = ctx.input(kQuantW);
  if (x.type != DataType::kInt8 || w.type != DataType::kInt8 || x.rank() != 4 || w.rank() != 4)
    return ctx.unsupported("cuDNN's INT8 NHWC convolution needs 4-D int8 X and W");
  DeviceTensor xFirst = x, wFirst = w;  // [N, C, H, W] and [K, C, R, S] over NHWC storage
  xFirst.shape = toChannelsFirstShape(x.shape);
  wFirst.shape = toChannelsFirstShape(w.shape);
  ConvGeometry g;
  KILN_RETURN_IF_ERROR(forwardConvGeometry(ctx, xFirst, wFirst, &g));
  g.channelsLast = true;
  const DeviceTensor* z = ctx.hasInput(kQuantResidual) ? &ctx.input(kQuantResidual) : nullptr;
  const int64_t channels = x.shape[3];
  KILN_RETURN_IF_ERROR(padChannels(ctx, &x, &w));  // after the geometry check of the real C
  g.x[1] = g.w[1] = x.shape[3];
  const std::string note =
      channels == x.shape[3]
          ? ""
          : ", channels padded " + std::to_string(channels) + " -> " + std::to_string(x.shape[3]);
  auto state = std::static_pointer_cast<CudnnInt8State>(ctx.layerState());
  const bool fresh = !state || !(state->geometry == g);
  if (fresh) {
    state = std::make_shared<CudnnInt8State>();
    state->geometry = g;
    state->residual = z != nullptr;
    state->zType = z && z->type == DataType::kInt8 ? DataType::kInt8 : ctx.floatType();
    if (z && z->type == DataType::kInt8 && !ctx.hasInput(kQuantZScale))
      return ctx.error("input 3 (Z) is int8 but input 9 (z_scale) is absent");
    state->relu = ctx.node().attrString("activation", "none") == "relu";
    if (!state->relu && ctx.node().attrString("activation", "none") != "none")
      return ctx.unsupported("cuDNN's INT8 path takes no activation but ReLU");
    KILN_RETURN_IF_ERROR(prepareScales(ctx, g.y[1], state.get()));
    state->yType = state->quantizedOutput ? DataType::kInt8 : int8FloatOutputType(ctx);
  }
  const Shape yShape = toChannelsLastShape(g.y);
  if (z && (z->shape != yShape || z->type != state->zType))
    return ctx.error("input 3 (Z) must be a " + std::string(dataTypeName(state->zType)) +
                     " tensor of the output's shape " + shapeToString(yShape));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, state->yType, yShape));
  if (y.numel() == 0) return Status::ok();
  KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, ctx.libraries().cudnn(ctx.stream()));
  const CudnnBindings bindings = bindingsOf(*state, x, w, y.data, z ? z->data : nullptr);
  const void* zData = z ? z->data : nullptr;
  if (fresh) {
    KILN_RETURN_IF_ERROR(choosePlan(ctx, handle, bindings, x, w, zData, y.data, note, state.get()));
    state->hostScale.clear();
    state->hostBias.clear();
    ctx.layerState() = state;
  }
  if (state->kilnTile >= 0)
    return runInt8ConvMma(state->kilnTile, state->mmaShape, x.data, w.data,
                          static_cast<const float*>(state->gemmAlpha.data()),
                          static_cast<const float*>(state->gemmBias.data()), state->gemmBeta, zData,
                          y.data, state->relu, ctx.stream());
  if (state->gemm)
    return runInt8PointwiseGemm(ctx, *state->gemm, x.data, w.data,
                                static_cast<const float*>(state->gemmAlpha.data()), state->gemmBeta,
                                zData, y.data);
  KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, state->plan->workspace));
  return executeCudnnPlan(handle, *state->plan, bindings, workspace);
}

}  // namespace kiln::cuda
