#include "backends/cuda/ops/fused_conv_plans.h"

#include <cstdlib>
#include <sstream>

#include "backends/cuda/compiled_code_stores.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/depthwise_conv.h"
#include "backends/cuda/ops/grouped_filter.h"

namespace kiln::cuda::fusedconv {

FusedConvProblem paddedProblem(const FusedConvProblem& p, int channels,
                               const PaddedBuffers& buffers) {
  FusedConvProblem padded = p;
  padded.geometry.x[1] = channels;
  padded.geometry.w[1] = channels;
  padded.x = buffers.x;
  padded.w = buffers.w;
  return padded;
}

Status buildFusedGraph(cudnnHandle_t handle, const FusedConvProblem& p, CudnnDescriptor* graph) {
  const ConvGeometry& g = p.geometry;
  const cudnnDataType_t io = cudnnTypeOf(g.type);
  std::vector<int64_t> biasDims(g.y.size(), 1);
  biasDims[1] = g.y[1];
  CudnnDescriptor x, w, y, b, z;
  const bool nhwc = g.channelsLast;
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&x, io, g.x, kConvUidX, false, nhwc));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&w, io, g.w, kConvUidW, false, nhwc));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&y, io, g.y, kConvUidY, false, nhwc));
  if (p.bias) KILN_RETURN_IF_ERROR(makeCudnnTensor(&b, io, biasDims, kUidB, false, nhwc));
  if (p.z) KILN_RETURN_IF_ERROR(makeCudnnTensor(&z, io, g.y, kUidZ, false, nhwc));
  cudnnPointwiseMode_t actMode = CUDNN_POINTWISE_ADD;
  const bool act = p.epilogue.activation != EpilogueActivation::kNone;
  if (act && !cudnnActivationMode(p.epilogue.activation, &actMode))
    return unsupported("the activation has no cuDNN pointwise mode");
  const int stages = 1 + (p.z ? 1 : 0) + (p.bias ? 1 : 0) + (act ? 1 : 0);
  std::vector<CudnnDescriptor> outs(static_cast<size_t>(stages - 1));
  for (int s = 0; s + 1 < stages; ++s)
    KILN_RETURN_IF_ERROR(makeCudnnTensor(&outs[s], CUDNN_DATA_FLOAT, g.y, kUidStage + s,
                                         /*isVirtual=*/true, nhwc));
  auto output = [&](int s) { return s + 1 == stages ? y.get() : outs[s].get(); };
  std::vector<CudnnDescriptor> ops(static_cast<size_t>(stages));
  KILN_RETURN_IF_ERROR(makeConvolutionOp(g, x.get(), w.get(), output(0), &ops[0]));
  int s = 1;
  if (p.z) {
    KILN_RETURN_IF_ERROR(
        makePointwiseOp(CUDNN_POINTWISE_ADD, output(s - 1), z.get(), output(s), &ops[s]));
    ++s;
  }
  if (p.bias) {
    KILN_RETURN_IF_ERROR(
        makePointwiseOp(CUDNN_POINTWISE_ADD, output(s - 1), b.get(), output(s), &ops[s]));
    ++s;
  }
  if (act)
    KILN_RETURN_IF_ERROR(makePointwiseOp(actMode, output(s - 1), nullptr, output(s), &ops[s]));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const CudnnDescriptor& op : ops) raw.push_back(op.get());
  return makeOperationGraph(handle, raw, graph);
}

std::string fusedGraphText(const FusedConvProblem& p) {
  const ConvGeometry& g = p.geometry;
  std::ostringstream out;
  out << "fused conv graph " << dataTypeName(g.type) << (g.channelsLast ? " nhwc" : " nchw")
      << (g.transpose ? " transpose" : "") << (g.tf32 ? " tf32;" : ";") << convGeometryDimsText(g)
      << "bias " << (p.bias != nullptr) << "; z " << (p.z != nullptr) << "; act "
      << static_cast<int>(p.epilogue.activation);
  return out.str();
}

std::vector<std::unique_ptr<CudnnPlan>> fusedGraphPlans(GpuKernelContext& ctx, cudnnHandle_t handle,
                                                        const FusedConvProblem& p,
                                                        std::string* why) {
  std::vector<std::unique_ptr<CudnnPlan>> plans;
  CudnnDescriptor graph;
  Status built = buildFusedGraph(handle, p, &graph);
  if (!built.isOk()) {
    *why = built.message();
    return plans;
  }
  Result<std::string> key = cudnnPlanKey(fusedGraphText(p));
  CudnnPlanRecord record;
  if (key.isOk() && findCudnnPlanRecord(cudnnPlanStoreOf(ctx), key.value(), &record)) {
    Result<std::unique_ptr<CudnnPlan>> plan = planFromRecord(handle, graph.get(), record);
    if (plan.isOk()) {
      rememberCudnnPlanRecord(cudnnPlanStoreOf(ctx), key.value(), record, ctx.node().displayName());
      plans.push_back(std::move(plan.value()));
      return plans;
    }
  }
  std::vector<std::string> rejected;
  PlanFilter filter = convPlanFilter(ctx, p.geometry);
  // Runtime fusion engines compile a kernel per shape at finalize (NVRTC, often a
  // second each): every layer of every timing engine would pay it at build and at
  // load. Precompiled fused engines only, the heuristics' first three: the fallback
  // list's generic engines lose to conv + epilogue and would only lengthen timing.
  // Exception: an ungrouped channels-last convolution whose activation only runtime
  // fusion takes (SiLU, GELU: activationNeedsRuntimeFusion) tries one such engine, as
  // the conv + epilogue form pays a whole extra pass over Y for it (EfficientNet-B0 b256 on
  // an H200: 8.26 -> 6.67 ms, 36 of its convolutions won by such an engine; cold build
  // 16 -> 58 s). KILN_CUDNN_RUNTIME_FUSION is an experiment knob: "0" never, "1" for every
  // channels-last layer (depthwise too: no layer got faster, EfficientNet's build 90 s;
  // docs/benchmarks.md, 2026-11-29 evening).
  const char* knob = std::getenv("KILN_CUDNN_RUNTIME_FUSION");
  const ConvGeometry& g = p.geometry;
  const bool ungrouped = !g.transpose && g.w.size() > 1 && g.w[1] == g.x[1];
  filter.runtimeCompilation =
      g.channelsLast && (knob ? std::string(knob) == "1"
                              : ungrouped && activationNeedsRuntimeFusion(p.epilogue.activation));
  if (filter.runtimeCompilation && !knob) filter.runtimeCompiledLimit = 1;
  filter.fallbackList = false;
  filter.wanted = std::min(filter.wanted, 3);
  Status found = heuristicPlans(handle, graph.get(), filter, &plans, &rejected);
  if (!found.isOk())
    *why = found.message();
  else if (plans.empty())
    *why = rejected.empty() ? "no engine for the graph" : rejected.front();
  for (const auto& plan : plans) {
    if (!key.isOk() || !plan->choice.runtimeCompiled) continue;
    rememberCudnnPlan(cudnnPlanStoreOf(ctx), key.value(), *plan, ctx.node().displayName());
    break;  // one runtime-compiled candidate per layer (fusedGraphPlans' filter)
  }
  return plans;
}

LayerChoice choiceOfState(const FusedConvState& state) {
  LayerChoice c;
  c.form = state.kilnDepthwise     ? "kiln_depthwise"
           : state.denseGroups > 1 ? "dense_block_diagonal"
           : state.fusedGraph      ? "fused_graph"
                                   : "conv_epilogue";
  c.paddedChannels = state.paddedChannels;
  if (state.denseGroups > 1) c.groups = state.denseGroups;
  if (state.plan && !state.kilnDepthwise) {
    c.hasEngine = true;
    c.engine = state.plan->choice;
  }
  return c;
}

Status adoptPlannedChoice(GpuKernelContext& ctx, cudnnHandle_t handle, const FusedConvProblem& p,
                          const LayerChoice& c, FusedConvState* state, std::string* summary) {
  const ConvGeometry& g = p.geometry;
  FusedConvState s;
  s.geometry = g;
  if (c.form == "kiln_depthwise") {
    const std::string whyNot = depthwiseConvUnsupported(g, p.x, p.z, p.y);
    if (!whyNot.empty()) return unsupported("Kiln's depthwise kernel does not apply: " + whyNot);
    if (c.paddedChannels > 0 || c.hasEngine) return unsupported("not a depthwise choice");
    s.kilnDepthwise = true;
    *summary = "kiln depthwise NHWC " + std::to_string(g.w[2]) + "x" + std::to_string(g.w[3]) +
               " (epilogue inside)";
    *state = s;
    return Status::ok();
  }
  if (!c.hasEngine) return unsupported("no cuDNN engine recorded");
  if (c.form == "dense_block_diagonal") {
    const int64_t groups = denseCandidateGroups(g);
    if (groups < 2 || c.groups != groups || c.paddedChannels > 0)
      return unsupported("not a convolution of the recorded groups");
    ConvGeometry dense = g;
    dense.w[1] = g.x[1];
    CudnnDescriptor graph;
    KILN_RETURN_IF_ERROR(buildConvGraph(handle, dense, &graph));
    KILN_ASSIGN_OR_RETURN(
        s.plan, planOfRecordedChoice(cudnnPlanStoreOf(ctx), handle, graph.get(), "", c.engine,
                                     ctx.options().workspaceLimitBytes, ctx.node().displayName()));
    s.denseGroups = groups;
    *summary = "dense block-diagonal (" + std::to_string(groups) +
               " groups as 1): " + s.plan->description + " + kiln epilogue";
    *state = s;
    return Status::ok();
  }
  FusedConvProblem q = p;
  if (c.paddedChannels > 0) {
    if (!g.channelsLast || g.transpose || g.w[1] != g.x[1] || c.paddedChannels <= g.x[1])
      return unsupported("channel padding to " + std::to_string(c.paddedChannels) +
                         " does not apply (channels-last, group 1, more channels than C)");
    q = paddedProblem(p, c.paddedChannels, PaddedBuffers{});
    s.paddedChannels = c.paddedChannels;
  }
  if (c.form == "fused_graph") {
    CudnnDescriptor graph;
    KILN_RETURN_IF_ERROR(buildFusedGraph(handle, q, &graph));
    KILN_ASSIGN_OR_RETURN(const std::string key, cudnnPlanKey(fusedGraphText(q)));
    KILN_ASSIGN_OR_RETURN(
        s.plan, planOfRecordedChoice(cudnnPlanStoreOf(ctx), handle, graph.get(), key, c.engine,
                                     ctx.options().workspaceLimitBytes, ctx.node().displayName()));
    s.fusedGraph = true;
    *summary = "cudnn fused graph " + s.plan->description.substr(6);
  } else if (c.form == "conv_epilogue") {
    CudnnDescriptor graph;
    KILN_RETURN_IF_ERROR(buildConvGraph(handle, q.geometry, &graph));
    KILN_ASSIGN_OR_RETURN(
        s.plan, planOfRecordedChoice(cudnnPlanStoreOf(ctx), handle, graph.get(), "", c.engine,
                                     ctx.options().workspaceLimitBytes, ctx.node().displayName()));
    *summary = s.plan->description + " + kiln epilogue (" +
               convEpilogueVariant(g.type, p.outer * p.channels * p.inner, p.y, p.z) + ")";
  } else {
    return unsupported("unknown form '" + c.form + "'");
  }
  if (s.paddedChannels > 0)
    *summary = "channels padded " + std::to_string(g.x[1]) + " -> " +
               std::to_string(s.paddedChannels) + ": " + *summary;
  *state = s;
  return Status::ok();
}

}  // namespace kiln::cuda::fusedconv
