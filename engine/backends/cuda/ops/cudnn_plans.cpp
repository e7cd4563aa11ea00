// cuDNN engine configurations and plans for the convolution layers (declared in
// cudnn_conv.h): the heuristics' configurations and their knobs, finalized plans, the choice
// text, execution, timing on a stream and the per-layer plan race (chooseConvPlan). The
// descriptors, geometry and operation graphs they run are cudnn_conv.cpp's.
#include <algorithm>
#include <sstream>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "backends/cuda/ops/cudnn_graph_ops.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace kiln::cuda {

namespace {

// The engine behind an engine config (nullptr descriptor on failure).
bool configEngine(cudnnBackendDescriptor_t config, CudnnDescriptor* engine) {
  if (!engine->create(CUDNN_BACKEND_ENGINE_DESCRIPTOR).isOk()) return false;
  int64_t count = 0;
  cudnnBackendDescriptor_t engineDesc = engine->get();
  return cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                  &engineDesc) == CUDNN_STATUS_SUCCESS;
}

// True when the engine config's numerical notes say it computes float32 data
// with reduced-precision inputs (TF32 tensor cores or down-conversion).
bool reducesFloat32Precision(cudnnBackendDescriptor_t config) {
  CudnnDescriptor engine;
  if (!configEngine(config, &engine)) return true;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t noteCount = 0;
  if (cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                               CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                               &noteCount, notes) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  for (int64_t i = 0; i < noteCount; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
        notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
      return true;
  }
  return false;
}

// True when the engine compiles its kernel at finalize (runtime fusion engines).
bool compilesAtRuntime(cudnnBackendDescriptor_t config) {
  CudnnDescriptor engine;
  if (!configEngine(config, &engine)) return false;
  cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                               CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count,
                               notes) != CUDNN_STATUS_SUCCESS)
    return false;
  return std::find(notes, notes + count, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) != notes + count;
}

int64_t engineIndex(cudnnBackendDescriptor_t config) {
  CudnnDescriptor engine;
  if (!configEngine(config, &engine)) return -1;
  int64_t count = 0, index = -1;
  if (cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                               &count, &index) != CUDNN_STATUS_SUCCESS)
    return -1;
  return index;
}

// The engine configs the heuristics of `mode` propose (empty when they refuse the graph).
Status heuristicConfigs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
                        std::vector<CudnnDescriptor>* configs) {
  CudnnDescriptor heuristics;
  KILN_RETURN_IF_ERROR(heuristics.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  KILN_CUDNN_SET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  KILN_CUDNN_SET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heuristics.get()) != CUDNN_STATUS_SUCCESS) return Status::ok();
  int64_t available = 0;
  KILN_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr));
  if (available <= 0) return Status::ok();
  configs->resize(static_cast<size_t>(available));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (CudnnDescriptor& c : *configs) {
    KILN_RETURN_IF_ERROR(c.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(c.get());
  }
  int64_t returned = 0;
  KILN_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &returned,
                                            raw.data()));
  configs->resize(static_cast<size_t>(std::clamp<int64_t>(returned, 0, available)));
  return Status::ok();
}

}  // namespace

std::unique_ptr<CudnnPlan> finalizedPlan(cudnnHandle_t handle, cudnnBackendAttributeName_t source,
                                         cudnnBackendAttributeType_t type, int64_t count,
                                         const void* value) {
  auto plan = std::make_unique<CudnnPlan>();
  if (!plan->plan.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR).isOk()) return nullptr;
  if (cudnnBackendSetAttribute(plan->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                               CUDNN_TYPE_HANDLE, 1, &handle) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(plan->plan.get(), source, type, count, value) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendFinalize(plan->plan.get()) != CUDNN_STATUS_SUCCESS)
    return nullptr;
  int64_t returned = 0;
  if (cudnnBackendGetAttribute(plan->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                               CUDNN_TYPE_INT64, 1, &returned,
                               &plan->workspace) != CUDNN_STATUS_SUCCESS)
    return nullptr;
  return plan;
}

namespace {

// The knob choices of an engine config (empty when cuDNN does not say).
std::vector<std::pair<int64_t, int64_t>> knobChoices(cudnnBackendDescriptor_t config) {
  constexpr int64_t kMaxKnobs = 32;
  std::vector<CudnnDescriptor> choices(kMaxKnobs);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (CudnnDescriptor& c : choices) {
    if (!c.create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR).isOk()) return {};
    raw.push_back(c.get());
  }
  int64_t count = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxKnobs, &count,
                               raw.data()) != CUDNN_STATUS_SUCCESS)
    return {};
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < std::min(count, kMaxKnobs); ++i) {
    cudnnBackendKnobType_t type;
    int64_t value = 0, n = 0;
    if (cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                 &n, &type) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n,
                                 &value) != CUDNN_STATUS_SUCCESS)
      continue;
    out.push_back({static_cast<int64_t>(type), value});
  }
  return out;
}

// An execution plan of `config`, or nullptr when it does not finalize.
std::unique_ptr<CudnnPlan> finalizePlan(cudnnHandle_t handle, cudnnBackendDescriptor_t config) {
  return finalizedPlan(handle, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
}

}  // namespace

Status heuristicPlans(cudnnHandle_t handle, cudnnBackendDescriptor_t graph,
                      const PlanFilter& filter, std::vector<std::unique_ptr<CudnnPlan>>* plans,
                      std::vector<std::string>* rejected) {
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (mode == CUDNN_HEUR_MODE_FALLBACK && !filter.fallbackList) break;
    std::vector<CudnnDescriptor> configs;
    KILN_RETURN_IF_ERROR(heuristicConfigs(graph, mode, &configs));
    if (configs.empty()) {
      const std::string detail = cudnnLastError();
      rejected->push_back(
          std::string(mode == CUDNN_HEUR_MODE_A ? "heuristics A" : "fallback list") +
          ": no engine for the graph" + (detail.empty() ? "" : " (cuDNN: " + detail + ")"));
    }
    int runtimeCompiled = 0;
    for (size_t i = 0; i < configs.size() && static_cast<int>(plans->size()) < filter.wanted; ++i) {
      const std::string engine = "engine " + std::to_string(engineIndex(configs[i].get()));
      if (filter.strictFloat32 && reducesFloat32Precision(configs[i].get())) {
        rejected->push_back(engine + ": uses TF32");
        continue;
      }
      const bool compiles = compilesAtRuntime(configs[i].get());
      if (compiles &&
          (!filter.runtimeCompilation ||
           (filter.runtimeCompiledLimit >= 0 && runtimeCompiled >= filter.runtimeCompiledLimit))) {
        rejected->push_back(engine + ": compiles at run time");
        continue;
      }
      std::unique_ptr<CudnnPlan> plan = finalizePlan(handle, configs[i].get());
      if (!plan) {
        const std::string detail = cudnnLastError();
        rejected->push_back(engine + ": did not finalize" +
                            (detail.empty() ? "" : " (cuDNN: " + detail + ")"));
        continue;
      }
      if (plan->workspace > filter.workspaceLimit) {
        rejected->push_back(engine + ": workspace over limit");
        continue;
      }
      runtimeCompiled += compiles ? 1 : 0;
      plan->choice = {engineIndex(configs[i].get()), knobChoices(configs[i].get()), compiles};
      plan->description = describeCudnnChoice(plan->choice) +
                          (mode == CUDNN_HEUR_MODE_FALLBACK ? " (fallback)" : "");
      plans->push_back(std::move(plan));
    }
    if (!plans->empty()) break;
  }
  return Status::ok();
}

std::string convGeometryDimsText(const ConvGeometry& g) {
  std::ostringstream out;
  auto dims = [&](const char* name, const std::vector<int64_t>& v) {
    out << name;
    for (int64_t d : v) out << ' ' << d;
    out << ';';
  };
  dims("x", g.x);
  dims("w", g.w);
  dims("y", g.y);
  dims("pre", g.pre);
  dims("post", g.post);
  dims("strides", g.strides);
  dims("dilations", g.dilations);
  return out.str();
}

std::string describeCudnnChoice(const CudnnEngineChoice& choice) {
  return "cudnn engine " + std::to_string(choice.engine) + (choice.runtimeCompiled ? " rtc" : "");
}

Result<std::unique_ptr<CudnnPlan>> planFromChoice(cudnnHandle_t handle,
                                                  cudnnBackendDescriptor_t graph,
                                                  const CudnnEngineChoice& choice) {
  CudnnDescriptor engine, config;
  KILN_RETURN_IF_ERROR(engine.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
  KILN_CUDNN_SET(engine.get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &graph);
  KILN_CUDNN_SET(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &choice.engine);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(engine.get()));
  std::vector<CudnnDescriptor> knobs(choice.knobs.size());
  std::vector<cudnnBackendDescriptor_t> raw;
  for (size_t i = 0; i < knobs.size(); ++i) {
    KILN_RETURN_IF_ERROR(knobs[i].create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    auto type = static_cast<cudnnBackendKnobType_t>(choice.knobs[i].first);
    int64_t value = choice.knobs[i].second;
    KILN_CUDNN_SET(knobs[i].get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                   &type);
    KILN_CUDNN_SET(knobs[i].get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value);
    KILN_CUDNN_CHECK(cudnnBackendFinalize(knobs[i].get()));
    raw.push_back(knobs[i].get());
  }
  KILN_RETURN_IF_ERROR(config.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
  cudnnBackendDescriptor_t engineDesc = engine.get();
  KILN_CUDNN_SET(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &engineDesc);
  if (!raw.empty())
    KILN_CUDNN_SET(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   raw.size(), raw.data());
  KILN_CUDNN_CHECK(cudnnBackendFinalize(config.get()));
  std::unique_ptr<CudnnPlan> plan = finalizePlan(handle, config.get());
  if (!plan)
    return Status(StatusCode::kUnsupported, "cuDNN engine " + std::to_string(choice.engine) +
                                                " with the recorded knobs does not finalize");
  plan->choice = choice;
  plan->description = describeCudnnChoice(choice);
  return plan;
}

Status executeCudnnPlan(cudnnHandle_t handle, const CudnnPlan& plan, const CudnnBindings& tensors,
                        void* workspace) {
  CudnnDescriptor pack;
  KILN_RETURN_IF_ERROR(pack.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  std::vector<int64_t> uids;
  std::vector<void*> pointers;
  for (const auto& [uid, pointer] : tensors) {
    uids.push_back(uid);
    pointers.push_back(pointer);
  }
  KILN_CUDNN_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.size(),
                 uids.data());
  KILN_CUDNN_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                 pointers.size(), pointers.data());
  KILN_CUDNN_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(pack.get()));
  KILN_CUDNN_CHECK(cudnnBackendExecute(handle, plan.plan.get(), pack.get()));
  return Status::ok();
}

namespace {

// Two CUDA events, destroyed with the object.
struct EventPair {
  cudaEvent_t start = nullptr, end = nullptr;
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (end) cudaEventDestroy(end);
  }
};

}  // namespace

Result<float> timeOnStream(cudaStream_t stream, const std::function<Status()>& run) {
  KILN_RETURN_IF_ERROR(run());  // warm-up
  EventPair events;
  KILN_CUDA_CHECK(cudaEventCreate(&events.start));
  KILN_CUDA_CHECK(cudaEventCreate(&events.end));
  float fastest = 1e30f;
  // The best of three, as cuDNN's own find does.
  for (int r = 0; r < 3; ++r) {
    KILN_CUDA_CHECK(cudaEventRecord(events.start, stream));
    KILN_RETURN_IF_ERROR(run());
    KILN_CUDA_CHECK(cudaEventRecord(events.end, stream));
    KILN_CUDA_CHECK(cudaEventSynchronize(events.end));
    float ms = 0;
    KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.end));
    fastest = std::min(fastest, ms);
  }
  return fastest;
}

Result<void*> convWorkspace(GpuKernelContext& ctx, int64_t bytes) {
  if (bytes <= 0) return static_cast<void*>(nullptr);
  return ctx.libraryWorkspace(static_cast<size_t>(bytes));
}

PlanFilter convPlanFilter(const GpuKernelContext& ctx, const ConvGeometry& g) {
  PlanFilter filter;
  filter.strictFloat32 = g.type == DataType::kFloat32 && !g.tf32;
  filter.wanted = std::max(1, ctx.options().convolutionCandidates);
  filter.workspaceLimit = ctx.options().workspaceLimitBytes;
  return filter;
}

Status buildConvGraph(cudnnHandle_t handle, const ConvGeometry& g, CudnnDescriptor* graph) {
  CudnnDescriptor xd, wd, yd, op;
  const cudnnDataType_t type = cudnnTypeOf(g.type);
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&xd, type, g.x, kConvUidX, false, g.channelsLast));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&wd, type, g.w, kConvUidW, false, g.channelsLast));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&yd, type, g.y, kConvUidY, false, g.channelsLast));
  KILN_RETURN_IF_ERROR(makeConvolutionOp(g, xd.get(), wd.get(), yd.get(), &op));
  return makeOperationGraph(handle, {op.get()}, graph);
}

bool recordsConvChoice(const GpuKernelContext& ctx, const ConvGeometry& g) {
  return !convPlanFilter(ctx, g).strictFloat32;
}

Status chooseConvPlan(GpuKernelContext& ctx, cudnnHandle_t handle, const ConvGeometry& g, void* x,
                      const void* w, void* y, ChosenConvPlan* chosen) {
  CudnnDescriptor graph;
  KILN_RETURN_IF_ERROR(buildConvGraph(handle, g, &graph));
  std::vector<std::unique_ptr<CudnnPlan>> plans;
  std::vector<std::string> rejected;
  KILN_RETURN_IF_ERROR(
      heuristicPlans(handle, graph.get(), convPlanFilter(ctx, g), &plans, &rejected));
  if (plans.empty()) {
    std::string why = rejected.empty() ? "no engine" : rejected.front();
    return ctx.unsupported("cuDNN has no usable engine for this convolution (" + why + ")");
  }
  int64_t maxWorkspace = 0;
  for (const auto& p : plans) maxWorkspace = std::max(maxWorkspace, p->workspace);
  KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, maxWorkspace));
  const CudnnBindings bindings = {
      {kConvUidX, x}, {kConvUidW, const_cast<void*>(w)}, {kConvUidY, y}};
  size_t best = 0;
  std::ostringstream timings;
  if (plans.size() > 1) {
    float bestMs = 1e30f;
    for (size_t i = 0; i < plans.size(); ++i) {
      Result<float> ms = timeOnStream(
          ctx.stream(), [&] { return executeCudnnPlan(handle, *plans[i], bindings, workspace); });
      if (!ms.isOk()) continue;  // this engine fails on these shapes: not a candidate
      chosen->ran.push_back({plans[i]->choice, ms.value()});
      timings << (timings.tellp() > 0 ? ", " : "") << plans[i]->description.substr(13) << "="
              << ms.value() << "ms";
      if (ms.value() < bestMs) {
        bestMs = ms.value();
        best = i;
      }
    }
  }
  if (plans.size() == 1) chosen->ran.push_back({plans[0]->choice, 0.f});
  chosen->summary = plans[best]->description;
  if (plans.size() > 1) chosen->summary += " fastest of {" + timings.str() + "}";
  chosen->plan = std::shared_ptr<CudnnPlan>(std::move(plans[best]));
  return Status::ok();
}

}  // namespace kiln::cuda
