// ai.kiln FusedConv on CUDA: Y = act(Conv(X, W) + B + Z) (contract and reference:
// cpu/ops/fused_conv.cpp). Two implementations, both candidates at the first run of
// a shape; the layer state keeps the faster and the implementation text names it
// with every candidate's time:
//   cudnn fused graph: ConvolutionFwd -> pointwise ADD Z -> pointwise ADD B ->
//     pointwise RELU/SIGMOID/TANH, intermediates virtual float tensors, in the order
//     of cuDNN's conv-add-bias-act pattern; engines from the heuristics, filtered
//     like the plain convolution's (TF32 when off, workspace).
// A channels-last node (ir/channels_last.h) runs both on NHWC X, Y, Z and a KRSC W
// (the same graphs with channels-innermost strides; the epilogue sees Y as
// [N * H * W, K, 1]).
//   conv + kiln epilogue: the plain convolution's fastest plan (cudnn_conv.cpp), then
//     one pass that adds B and Z and applies act (conv_epilogue.cu): every
//     activation, and the only way when cuDNN has no engine for the graph.
//   kiln depthwise (depthwise_conv.h): a channels-last depthwise convolution (ConvNeXt's
//     7x7, EfficientNet's and MobileNet's 3x3 and 5x5) in Kiln's own kernel with the
//     epilogue inside, timed against the faster of the two above.
//   dense block-diagonal (grouped_filter.h): a convolution of 2..64 groups run as the
//     ungrouped one with a block-diagonal filter (expanded at every run, in the workspace),
//     conv + kiln epilogue: `groups` times the FLOPs at tensor-core rate, against
//     cuDNN's grouped engines that run RegNetY's 24-channel groups at ~20x their floor.
//     Timed like the others.
// The node attribute `path` ("auto", "cudnn_graph", "kiln_epilogue", "kiln_depthwise",
// "dense_block_diagonal") restricts the candidates, for tests and tactic pinning.
// Channel padding: a channels-last convolution (group 1) whose input channel count is
// not a multiple of 8 (ResNet's 3-channel stem) also times both implementations on X
// and W zero-padded to 4 and 8 channels (channel_pad.h: Conv([X, 0], [W, 0]) =
// Conv(X, W)), the pad pass included in the time: cuDNN's tensor-core kernels want
// C % 8 == 0 (C % 4 for some). The attribute `pad_channels` (-1 auto, 0 never, N
// always to N) restricts it.
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "backends/cuda/ops/choice_offers.h"
#include "backends/cuda/ops/channel_pad.h"
#include "backends/cuda/ops/layer_choice.h"
#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/depthwise_conv.h"
#include "backends/cuda/ops/fused_conv_plans.h"
#include "backends/cuda/ops/grouped_filter.h"
#include "ir/channels_last.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

using namespace fusedconv;

int64_t alignUp(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

// Rows (all dims but C) of X and W in a channels-last problem.
int64_t rowsOf(const std::vector<int64_t>& dims) {
  int64_t rows = 1;
  for (size_t i = 0; i < dims.size(); ++i)
    if (i != 1) rows *= dims[i];
  return rows;
}

// Pads X and W of `p` to `channels` in the context's workspace; the padded problem.
Result<FusedConvProblem> padInputs(GpuKernelContext& ctx, const FusedConvProblem& p, int channels) {
  const ConvGeometry& g = p.geometry;
  const int64_t element = static_cast<int64_t>(dataTypeSize(g.type));
  const int64_t xBytes = alignUp(rowsOf(g.x) * channels * element, 256);
  const int64_t wBytes = rowsOf(g.w) * channels * element;
  KILN_ASSIGN_OR_RETURN(void* base, ctx.workspace(static_cast<size_t>(xBytes + wBytes)));
  const PaddedBuffers buffers{base, static_cast<char*>(base) + xBytes};
  const int c = static_cast<int>(g.x[1]);
  KILN_RETURN_IF_ERROR(
      padInnermostChannels(p.x, buffers.x, rowsOf(g.x), c, channels, g.type, ctx.stream()));
  KILN_RETURN_IF_ERROR(
      padInnermostChannels(p.w, buffers.w, rowsOf(g.w), c, channels, g.type, ctx.stream()));
  return paddedProblem(p, channels, buffers);
}

CudnnBindings fusedBindings(const FusedConvProblem& p) {
  CudnnBindings tensors = {{kConvUidX, p.x}, {kConvUidW, const_cast<void*>(p.w)}, {kConvUidY, p.y}};
  if (p.bias) tensors.push_back({kUidB, const_cast<void*>(p.bias)});
  if (p.z) tensors.push_back({kUidZ, const_cast<void*>(p.z)});
  return tensors;
}

Status runChosen(GpuKernelContext& ctx, cudnnHandle_t handle, const FusedConvState& state,
                 const FusedConvProblem& problem) {
  if (state.kilnDepthwise)
    return runDepthwiseConv(
        depthwiseConvProblem(problem.geometry, problem.x, problem.w, problem.bias, problem.z,
                             problem.y, problem.epilogue),
        ctx.stream());
  if (state.denseGroups > 1) {
    KILN_ASSIGN_OR_RETURN(void* dense,
                          denseFilter(ctx, problem.geometry, problem.w, state.denseGroups));
    KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, state.plan->workspace));
    KILN_RETURN_IF_ERROR(executeCudnnPlan(
        handle, *state.plan, {{kConvUidX, problem.x}, {kConvUidW, dense}, {kConvUidY, problem.y}},
        workspace));
    return applyConvEpilogue(problem.y, problem.geometry.type, problem.bias, problem.z,
                             problem.outer, problem.channels, problem.inner, problem.epilogue,
                             ctx.stream());
  }
  FusedConvProblem p = problem;
  if (state.paddedChannels > 0) {
    KILN_ASSIGN_OR_RETURN(p, padInputs(ctx, problem, state.paddedChannels));
  }
  KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, state.plan->workspace));
  if (state.fusedGraph) return executeCudnnPlan(handle, *state.plan, fusedBindings(p), workspace);
  KILN_RETURN_IF_ERROR(executeCudnnPlan(
      handle, *state.plan,
      {{kConvUidX, p.x}, {kConvUidW, const_cast<void*>(p.w)}, {kConvUidY, p.y}}, workspace));
  return applyConvEpilogue(p.y, p.geometry.type, p.bias, p.z, p.outer, p.channels, p.inner,
                           p.epilogue, ctx.stream());
}

// Times both implementations on `p` and keeps the faster in `state`; `summary` says
// what won and every candidate's time; `offers` gets every complete choice that ran (for a
// builder to time one by one).
Status chooseImplementation(GpuKernelContext& ctx, cudnnHandle_t handle, const FusedConvProblem& p,
                            const std::string& path, FusedConvState* state, std::string* summary,
                            std::vector<std::pair<LayerChoice, float>>* offers) {
  auto offer = [&](const char* form, const CudnnEngineChoice* engine, int64_t groups, float ms) {
    LayerChoice c;
    c.form = form;
    if (groups > 1) c.groups = groups;
    if (engine) {
      c.hasEngine = true;
      c.engine = *engine;
    }
    offers->push_back({c, ms});
  };
  state->geometry = p.geometry;
  const std::string depthwiseWhyNot = depthwiseConvUnsupported(p.geometry, p.x, p.z, p.y);
  if (path == "kiln_depthwise") {
    if (!depthwiseWhyNot.empty())
      return ctx.unsupported("Kiln's depthwise kernel does not apply: " + depthwiseWhyNot);
    state->kilnDepthwise = true;
    *summary = "kiln depthwise NHWC " + std::to_string(p.geometry.w[2]) + "x" +
               std::to_string(p.geometry.w[3]) + " (path kiln_depthwise)";
    return Status::ok();
  }
  if (path == "dense_block_diagonal") {
    const int64_t groups = denseCandidateGroups(p.geometry);
    if (groups < 2) return ctx.unsupported("not a convolution of 2..64 groups");
    ConvGeometry dense = p.geometry;
    dense.w[1] = p.geometry.x[1];
    KILN_ASSIGN_OR_RETURN(void* denseW, denseFilter(ctx, p.geometry, p.w, groups));
    ChosenConvPlan densePlan;
    KILN_RETURN_IF_ERROR(chooseConvPlan(ctx, handle, dense, p.x, denseW, p.y, &densePlan));
    state->plan = densePlan.plan;
    state->denseGroups = groups;
    *summary = "dense block-diagonal (" + std::to_string(groups) +
               " groups as 1): " + densePlan.summary +
               " + kiln epilogue (path dense_block_diagonal)";
    return Status::ok();
  }
  std::string why = "not tried (path " + path + ")";
  std::vector<std::unique_ptr<CudnnPlan>> fused;
  if (path != "kiln_epilogue") fused = fusedGraphPlans(ctx, handle, p, &why);
  if (path == "cudnn_graph" && fused.empty())
    return ctx.unsupported("cuDNN has no fused graph engine: " + why);
  ChosenConvPlan conv;
  if (path != "cudnn_graph") {
    KILN_RETURN_IF_ERROR(chooseConvPlan(ctx, handle, p.geometry, p.x, p.w, p.y, &conv));
    state->plan = conv.plan;
    state->fusedGraph = false;
    for (const auto& [engine, ms] : conv.ran) offer("conv_epilogue", &engine, 0, ms);
  }
  std::ostringstream timings;
  float bestMs = 1e30f;
  if (conv.plan && !fused.empty()) {
    KILN_ASSIGN_OR_RETURN(
        bestMs, timeOnStream(ctx.stream(), [&] { return runChosen(ctx, handle, *state, p); }));
    timings << "conv + epilogue=" << bestMs << "ms";
  }
  for (auto& plan : fused) {
    FusedConvState candidate{p.geometry, true, std::shared_ptr<CudnnPlan>(std::move(plan))};
    Result<float> ms =
        fused.size() == 1 && !conv.plan
            ? Result<float>(0.f)
            : timeOnStream(ctx.stream(), [&] { return runChosen(ctx, handle, candidate, p); });
    if (!ms.isOk()) continue;  // fails on these shapes: not a candidate
    offer("fused_graph", &candidate.plan->choice, 0, ms.value());
    timings << (timings.tellp() > 0 ? ", " : "") << "fused "
            << candidate.plan->description.substr(6) << "=" << ms.value() << "ms";
    if (ms.value() < bestMs) {
      bestMs = ms.value();
      *state = candidate;
    }
  }
  if (!state->plan) return ctx.unsupported("no fused graph engine ran on these shapes");
  // Kiln's depthwise kernel (epilogue inside) and a narrow-grouped convolution's dense
  // form, each against the best so far.
  auto timeBestOnce = [&]() -> Status {
    if (bestMs < 1e30f) return Status::ok();  // one cuDNN candidate, untimed so far
    KILN_ASSIGN_OR_RETURN(
        bestMs, timeOnStream(ctx.stream(), [&] { return runChosen(ctx, handle, *state, p); }));
    timings << (timings.tellp() > 0 ? ", " : "")
            << (state->fusedGraph ? "fused graph=" : "conv + epilogue=") << bestMs << "ms";
    return Status::ok();
  };
  std::vector<std::pair<CudnnEngineChoice, float>> denseRan;  // the dense form's engines
  auto race = [&](const FusedConvState& candidate, const std::string& name) -> Status {
    KILN_RETURN_IF_ERROR(timeBestOnce());
    Result<float> ms =
        timeOnStream(ctx.stream(), [&] { return runChosen(ctx, handle, candidate, p); });
    if (!ms.isOk()) {  // fails on these shapes: not a candidate
      timings << ", " << name << " failed: " << ms.status().message();
      return Status::ok();
    }
    timings << ", " << name << "=" << ms.value() << "ms";
    if (candidate.kilnDepthwise) offer("kiln_depthwise", nullptr, 0, ms.value());
    if (candidate.denseGroups > 1)
      for (const auto& [engine, denseMs] : denseRan)
        offer("dense_block_diagonal", &engine, candidate.denseGroups, denseMs);
    if (ms.value() < bestMs) {
      bestMs = ms.value();
      *state = candidate;
    }
    return Status::ok();
  };
  if (path == "auto" && depthwiseWhyNot.empty()) {
    FusedConvState candidate;
    candidate.geometry = p.geometry;
    candidate.kilnDepthwise = true;
    KILN_RETURN_IF_ERROR(race(candidate, "kiln depthwise"));
  }
  std::string denseSummary;
  if (const int64_t groups = denseCandidateGroups(p.geometry); path == "auto" && groups > 1) {
    ConvGeometry dense = p.geometry;
    dense.w[1] = p.geometry.x[1];
    // Not a candidate when its filter does not fit the workspace limit or no engine runs it.
    Result<void*> denseW = denseFilter(ctx, p.geometry, p.w, groups);
    ChosenConvPlan densePlan;
    if (!denseW.isOk()) {
      timings << ", dense block-diagonal not tried: " << denseW.status().message();
    } else if (chooseConvPlan(ctx, handle, dense, p.x, denseW.value(), p.y, &densePlan).isOk()) {
      FusedConvState candidate;
      candidate.geometry = p.geometry;
      candidate.plan = densePlan.plan;
      candidate.denseGroups = groups;
      denseRan = densePlan.ran;
      KILN_RETURN_IF_ERROR(race(candidate, "dense block-diagonal"));
      denseSummary = "dense block-diagonal (" + std::to_string(groups) +
                     " groups as 1): " + densePlan.summary + " + kiln epilogue";
    }
  }
  const std::string variant =
      convEpilogueVariant(p.geometry.type, p.outer * p.channels * p.inner, p.y, p.z);
  *summary = state->kilnDepthwise ? "kiln depthwise NHWC " + std::to_string(p.geometry.w[2]) + "x" +
                                        std::to_string(p.geometry.w[3]) + " (epilogue inside)"
             : state->denseGroups > 1 ? denseSummary
             : state->fusedGraph      ? "cudnn fused graph " + state->plan->description.substr(6)
                                      : conv.summary + " + kiln epilogue (" + variant + ")";
  if (timings.tellp() > 0) *summary += "; timed {" + timings.str() + "}";
  if (fused.empty()) *summary += "; cudnn fused graph: " + why;
  return Status::ok();
}

// The padded channel counts worth timing for `p`: a channels-last, ungrouped
// convolution whose C is not a multiple of 8 tries C rounded up to 4 and to 8.
std::vector<int> paddingCandidates(const FusedConvProblem& p, int64_t requested) {
  const ConvGeometry& g = p.geometry;
  const int64_t c = g.x[1];
  // Group 1 only: the padded problem's workspace holds X and W, and no depthwise or dense
  // candidate (which would use the same workspace) is raced on it.
  if (requested == 0 || !g.channelsLast || g.transpose || g.w[1] != c || c % 8 == 0) return {};
  if (requested > 0) return {static_cast<int>(requested)};
  std::vector<int> widths;
  if (c % 4) widths.push_back(static_cast<int>(alignUp(c, 4)));
  widths.push_back(static_cast<int>(alignUp(c, 8)));
  return widths;
}

// Chooses among the implementations on X as it is and on X padded per
// paddingCandidates(), each timed whole (pad pass included); names every time.
Status choose(GpuKernelContext& ctx, cudnnHandle_t handle, const FusedConvProblem& p,
              const std::string& path, int64_t padChannels, const std::string& replayNote,
              FusedConvState* state) {
  const std::vector<int> widths = paddingCandidates(p, padChannels);
  std::string summary;
  // Every complete choice that ran, offered for a builder to time (a path or pad_channels
  // attribute restricts the candidates: then none).
  std::vector<std::pair<LayerChoice, float>> offers;
  auto offerAll = [&] {
    if (path != "auto" || padChannels >= 0 || !recordsConvChoice(ctx, p.geometry)) return;
    std::vector<TimedChoice> timed;
    for (const auto& [c, ms] : offers) timed.push_back({encodeLayerChoice(c), ms});
    ctx.offerChoices(choicesWorthTiming(timed));
  };
  if (padChannels <= 0) {
    KILN_RETURN_IF_ERROR(chooseImplementation(ctx, handle, p, path, state, &summary, &offers));
    if (widths.empty()) {
      ctx.setImplementation(summary + replayNote);
      if (recordsConvChoice(ctx, p.geometry))
        ctx.setChoice(encodeLayerChoice(choiceOfState(*state)));
      offerAll();
      return Status::ok();
    }
  } else if (widths.empty() || widths[0] <= p.geometry.x[1] || widths[0] > 4096) {
    return ctx.error("pad_channels " + std::to_string(padChannels) +
                     " does not apply (channels-last, group 1, C " +
                     std::to_string(p.geometry.x[1]) + " < pad_channels <= 4096)");
  }
  std::ostringstream timings;
  float bestMs = 1e30f;
  if (state->plan) {
    KILN_ASSIGN_OR_RETURN(
        bestMs, timeOnStream(ctx.stream(), [&] { return runChosen(ctx, handle, *state, p); }));
    timings << "C=" << p.geometry.x[1] << "=" << bestMs << "ms";
  }
  for (int width : widths) {
    KILN_ASSIGN_OR_RETURN(FusedConvProblem padded, padInputs(ctx, p, width));
    FusedConvState candidate;
    std::string candidateSummary;
    std::vector<std::pair<LayerChoice, float>> paddedOffers;
    if (!chooseImplementation(ctx, handle, padded, path, &candidate, &candidateSummary,
                              &paddedOffers)
             .isOk())
      continue;  // no engine for the padded shapes: not a candidate
    for (auto& [c, ms] : paddedOffers) {
      c.paddedChannels = width;
      offers.push_back({c, ms});
    }
    candidate.geometry = p.geometry;
    candidate.paddedChannels = width;
    KILN_ASSIGN_OR_RETURN(
        float ms, timeOnStream(ctx.stream(), [&] { return runChosen(ctx, handle, candidate, p); }));
    timings << (timings.tellp() > 0 ? ", " : "") << "C padded to " << width << "=" << ms << "ms";
    if (ms < bestMs) {
      bestMs = ms;
      *state = candidate;
      summary = "channels padded " + std::to_string(p.geometry.x[1]) + " -> " +
                std::to_string(width) + ": " + candidateSummary;
    }
  }
  if (!state->plan) return ctx.unsupported("no convolution engine ran on the padded shapes");
  ctx.setImplementation(summary + "; channel padding timed {" + timings.str() + "}" + replayNote);
  if (recordsConvChoice(ctx, p.geometry)) ctx.setChoice(encodeLayerChoice(choiceOfState(*state)));
  offerAll();
  return Status::ok();
}

// B [M] and Z (Y's shape) when present: X's storage type.
Status checkOptionalInputs(const GpuKernelContext& ctx, const ConvGeometry& g, const Shape& yShape,
                           const DeviceTensor* bias, const DeviceTensor* z) {
  if (bias && (bias->type != g.type || bias->numel() != g.y[1]))
    return ctx.error("input B " + shapeToString(bias->shape) + " must hold " +
                     std::to_string(g.y[1]) + " values of X's type");
  if (z && (z->type != g.type || z->shape != yShape))
    return ctx.error("input Z " + shapeToString(z->shape) + " must have the output's shape " +
                     shapeToString(yShape) + " and X's type");
  return Status::ok();
}

// X and W as the channels-first geometry sees them: a channels-last layer's X [N, H, W, C]
// and W [K, R, S, C/g] are described as [N, C, H, W] and [K, C/g, R, S] with NHWC strides.
DeviceTensor channelsFirstView(DeviceTensor t) {
  t.shape = toChannelsFirstShape(t.shape);
  return t;
}

Status fusedConvKernel(GpuKernelContext& ctx) {
  if (ctx.inputCount() < 2 || !ctx.hasInput(0) || !ctx.hasInput(1))
    return ctx.error("FusedConv needs inputs X and W");
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& w = ctx.input(1);
  if (w.type != x.type) return ctx.error("W must have the type of X");
  const DeviceTensor* bias = ctx.inputCount() > 2 && ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  const DeviceTensor* z = ctx.inputCount() > 3 && ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  const bool nhwc = isChannelsLast(ctx.node());
  if (nhwc && (x.rank() != 4 || w.rank() != 4))
    return ctx.error("a channels-last FusedConv needs 4-D X and W");
  ConvGeometry g;
  KILN_RETURN_IF_ERROR(
      nhwc ? forwardConvGeometry(ctx, channelsFirstView(x), channelsFirstView(w), &g)
           : forwardConvGeometry(ctx, x, w, &g));
  g.channelsLast = nhwc;
  const Shape yShape = nhwc ? toChannelsLastShape(g.y) : g.y;
  KILN_RETURN_IF_ERROR(checkOptionalInputs(ctx, g, yShape, bias, z));
  const std::string path = ctx.node().attrString("path", "auto");
  if (path != "auto" && path != "cudnn_graph" && path != "kiln_epilogue" &&
      path != "kiln_depthwise" && path != "dense_block_diagonal")
    return ctx.error("unknown path '" + path +
                     "' (auto, cudnn_graph, kiln_epilogue, kiln_depthwise, dense_block_diagonal)");
  FusedConvProblem p;
  KILN_RETURN_IF_ERROR(parseConvEpilogue(ctx, &p.epilogue));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, yShape));
  if (y.numel() == 0) return Status::ok();
  p.channels = g.y[1];  // the epilogue sees Y as [outer, channels, inner]
  p.outer = nhwc ? y.numel() / p.channels : g.y[0];
  p.inner = y.numel() / (p.outer * p.channels);
  p.geometry = promoteTo2d(g);
  p.x = x.data;
  p.w = w.data;
  p.bias = bias ? bias->data : nullptr;
  p.z = z ? z->data : nullptr;
  p.y = y.data;
  KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, ctx.libraries().cudnn(ctx.stream()));
  auto& slot = ctx.layerState();
  auto state = std::static_pointer_cast<FusedConvState>(slot);
  const int64_t padChannels = ctx.node().attrInt("pad_channels", -1);
  if (!state || !(state->geometry == p.geometry)) {
    state = std::make_shared<FusedConvState>();
    // The plan's recorded choice (an engine made from a plan) runs without timing; the
    // path and pad_channels attributes, which restrict the candidates, keep their timing.
    const std::string planned =
        path == "auto" && padChannels < 0 && recordsConvChoice(ctx, p.geometry)
            ? ctx.plannedChoice()
            : "";
    LayerChoice choice;
    std::string summary, replayNote;
    Status adopted = unsupported("not a convolution choice");
    if (!planned.empty() && parseLayerChoice(planned, &choice))
      adopted = adoptPlannedChoice(ctx, handle, p, choice, state.get(), &summary);
    if (adopted.isOk()) {
      ctx.setImplementation(summary + " (the plan's choice: " + planned + ")");
      ctx.setChoice(planned);
    } else {
      if (!planned.empty())
        replayNote = "; the plan's choice '" + planned +
                     "' does not apply here: " + adopted.message() + ": timed again";
      *state = FusedConvState();
      KILN_RETURN_IF_ERROR(choose(ctx, handle, p, path, padChannels, replayNote, state.get()));
    }
    slot = state;
  }
  return runChosen(ctx, handle, *state, p);
}

std::string fusedConvSupport(const Node& node, const std::vector<DataType>& types) {
  DataType first = DataType::kUndefined;
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return std::string("no cuDNN convolution for ") + dataTypeName(t);
    if (first != DataType::kUndefined && t != first) return "inputs of mixed float types";
    first = t;
  }
  return "";
}

}  // namespace

Status parseConvEpilogue(const GpuKernelContext& ctx, ConvEpilogue* out) {
  static const std::pair<const char*, EpilogueActivation> kNames[] = {
      {"none", EpilogueActivation::kNone},
      {"relu", EpilogueActivation::kRelu},
      {"leaky_relu", EpilogueActivation::kLeakyRelu},
      {"clip", EpilogueActivation::kClip},
      {"sigmoid", EpilogueActivation::kSigmoid},
      {"tanh", EpilogueActivation::kTanh},
      {"hard_sigmoid", EpilogueActivation::kHardSigmoid},
      {"hard_swish", EpilogueActivation::kHardSwish},
      {"silu", EpilogueActivation::kSilu},
      {"gelu_erf", EpilogueActivation::kGeluErf},
      {"gelu_tanh", EpilogueActivation::kGeluTanh}};
  const std::string name = ctx.node().attrString("activation", "none");
  auto it = std::find_if(std::begin(kNames), std::end(kNames),
                         [&](const auto& entry) { return name == entry.first; });
  if (it == std::end(kNames)) return ctx.error("unknown activation '" + name + "'");
  out->activation = it->second;
  out->alpha = ctx.node().attrFloat("activation_alpha", 0.f);
  out->beta = ctx.node().attrFloat("activation_beta", 0.f);
  return Status::ok();
}

void registerFusedConvGpuKernels(GpuKernelRegistry& registry) {
  GpuKernelEntry entry;
  entry.domain = kKilnDomain;
  entry.opType = "FusedConv";
  entry.fn = fusedConvKernel;
  entry.supports = &fusedConvSupport;
  registry.add(entry);
}

}  // namespace kiln::cuda
