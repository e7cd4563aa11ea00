#include "backends/cuda/ops/cudnn_conv.h"

#include <algorithm>
#include <sstream>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/cudnn_graph_ops.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace kiln::cuda {

CudnnDescriptor::~CudnnDescriptor() {
  if (m_desc) cudnnBackendDestroyDescriptor(m_desc);
}

Status CudnnDescriptor::create(cudnnBackendDescriptorType_t type) {
  KILN_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &m_desc));
  return Status::ok();
}

cudnnDataType_t cudnnTypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return CUDNN_DATA_HALF;
    case DataType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    case DataType::kFloat64:
      return CUDNN_DATA_DOUBLE;
    case DataType::kInt8:
      return CUDNN_DATA_INT8;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

Status makeCudnnTensor(CudnnDescriptor* desc, cudnnDataType_t type,
                       const std::vector<int64_t>& dims, int64_t uid, bool isVirtual,
                       bool channelsLast) {
  CudnnTensorSpec spec{type, dims, rowMajorStrides(dims), uid, isVirtual};
  if (channelsLast && dims.size() == 4)  // [N, C, H, W] stored [N, H, W, C]
    spec.strides = {dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1]};
  return makeCudnnStridedTensor(desc, spec);
}

ConvAttributes readConvAttributes(const Node& node, size_t spatial, const Shape& w) {
  ConvAttributes a;
  a.kernel = node.attrInts("kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  a.strides = node.attrInts("strides", std::vector<int64_t>(spatial, 1));
  a.dilations = node.attrInts("dilations", std::vector<int64_t>(spatial, 1));
  a.pads = node.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  a.outputPadding = node.attrInts("output_padding", std::vector<int64_t>(spatial, 0));
  a.outputShape = node.attrInts("output_shape");
  a.autoPad = node.attrString("auto_pad", "NOTSET");
  a.group = node.attrInt("group", 1);
  return a;
}

Status forwardConvGeometry(const GpuKernelContext& ctx, const DeviceTensor& x,
                           const DeviceTensor& w, ConvGeometry* g) {
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank())
    return ctx.unsupported(ctx.node().opType + " of rank " + std::to_string(x.rank()));
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  ConvAttributes a = readConvAttributes(ctx.node(), spatial, w.shape);
  if (a.group < 1 || x.shape[1] != w.shape[1] * a.group || w.shape[0] % a.group != 0) {
    return ctx.error("channels do not match: X " + shapeToString(x.shape) + ", W " +
                     shapeToString(w.shape) + ", group " + std::to_string(a.group));
  }
  if (a.kernel.size() != spatial || a.strides.size() != spatial || a.dilations.size() != spatial ||
      a.pads.size() != 2 * spatial)
    return ctx.error("kernel_shape, strides, dilations or pads do not match the rank of X");
  g->type = x.type;
  g->tf32 = x.type == DataType::kFloat32 && ctx.options().allowTf32;
  g->x = x.shape;
  g->w = w.shape;
  g->strides = a.strides;
  g->dilations = a.dilations;
  g->y = {x.shape[0], w.shape[0]};
  for (size_t d = 0; d < spatial; ++d) {
    int64_t in = x.shape[2 + d], k = (a.kernel[d] - 1) * a.dilations[d] + 1, s = a.strides[d];
    int64_t begin = a.pads[d], end = a.pads[d + spatial];
    if (a.autoPad == "SAME_UPPER" || a.autoPad == "SAME_LOWER") {
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
      begin = a.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    } else if (a.autoPad == "VALID") {
      begin = end = 0;
    }
    int64_t out = (in + begin + end - k) / s + 1;
    if (out <= 0) return ctx.error("output would be empty along spatial dim " + std::to_string(d));
    g->pre.push_back(begin);
    g->post.push_back(end);
    g->y.push_back(out);
  }
  return Status::ok();
}

std::vector<int64_t> promoteDims(std::vector<int64_t> dims, size_t rank) {
  if (rank == 3 && dims.size() == 3) dims.insert(dims.begin() + 2, 1);
  return dims;
}

ConvGeometry promoteTo2d(ConvGeometry g) {
  if (g.strides.size() != 1) return g;
  g.x = promoteDims(g.x, 3);
  g.w = promoteDims(g.w, 3);
  g.y = promoteDims(g.y, 3);
  g.pre.insert(g.pre.begin(), 0);
  g.post.insert(g.post.begin(), 0);
  g.strides.insert(g.strides.begin(), 1);
  g.dilations.insert(g.dilations.begin(), 1);
  return g;
}

namespace {

Status makeConvolutionDescriptor(const ConvGeometry& g, CudnnDescriptor* conv) {
  KILN_RETURN_IF_ERROR(conv->create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  int64_t spatial = static_cast<int64_t>(g.strides.size());
  // int8 convolutions accumulate in int32 (cuDNN's INT8 engines), the rest in float
  // (double for float64).
  const cudnnDataType_t compute = g.type == DataType::kFloat64 ? CUDNN_DATA_DOUBLE
                                  : g.type == DataType::kInt8  ? CUDNN_DATA_INT32
                                                               : CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
                 &mode);
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial,
                 g.pre.data());
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial,
                 g.post.data());
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial,
                 g.dilations.data());
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial,
                 g.strides.data());
  KILN_CUDNN_CHECK(cudnnBackendFinalize(conv->get()));
  return Status::ok();
}

// alpha = 1, beta = 0 in the compute type's scalar type.
template <class S>
Status setScales(const ConvGeometry& g, cudnnBackendDescriptor_t op,
                 cudnnBackendAttributeType_t t) {
  S alpha = 1, beta = 0;
  if (!g.transpose) {
    KILN_CUDNN_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, t, 1, &alpha);
    KILN_CUDNN_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, t, 1, &beta);
  } else {
    KILN_CUDNN_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, t, 1, &alpha);
    KILN_CUDNN_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, t, 1, &beta);
  }
  return Status::ok();
}

}  // namespace

Status makeConvolutionOp(const ConvGeometry& g, cudnnBackendDescriptor_t x,
                         cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y,
                         CudnnDescriptor* op) {
  CudnnDescriptor conv;
  KILN_RETURN_IF_ERROR(makeConvolutionDescriptor(g, &conv));
  cudnnBackendDescriptor_t cd = conv.get();
  constexpr auto kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  if (!g.transpose) {
    KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, kDesc, 1, &x);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, kDesc, 1, &w);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, kDesc, 1, &y);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, kDesc, 1, &cd);
  } else {
    KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR));
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, kDesc, 1, &x);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, kDesc, 1, &w);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, kDesc, 1, &y);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, kDesc, 1, &cd);
  }
  if (g.type == DataType::kFloat64) {
    KILN_RETURN_IF_ERROR(setScales<double>(g, op->get(), CUDNN_TYPE_DOUBLE));
  } else {
    KILN_RETURN_IF_ERROR(setScales<float>(g, op->get(), CUDNN_TYPE_FLOAT));
  }
  KILN_CUDNN_CHECK(cudnnBackendFinalize(op->get()));
  return Status::ok();
}

Status makePointwiseOp(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                       cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y,
                       CudnnDescriptor* op) {
  CudnnDescriptor pw;
  KILN_RETURN_IF_ERROR(pw.create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
  cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  KILN_CUDNN_SET(pw.get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  KILN_CUDNN_SET(pw.get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
  if (mode == CUDNN_POINTWISE_SWISH_FWD) {
    const double beta = 1.0;  // SiLU
    KILN_CUDNN_SET(pw.get(), CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &beta);
  }
  KILN_CUDNN_CHECK(cudnnBackendFinalize(pw.get()));
  cudnnBackendDescriptor_t pwd = pw.get();
  constexpr auto kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, kDesc, 1, &pwd);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, kDesc, 1, &x);
  if (b) KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, kDesc, 1, &b);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, kDesc, 1, &y);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(op->get()));
  return Status::ok();
}

bool cudnnActivationMode(EpilogueActivation activation, cudnnPointwiseMode_t* mode) {
  switch (activation) {
    case EpilogueActivation::kRelu:
      *mode = CUDNN_POINTWISE_RELU_FWD;
      return true;
    case EpilogueActivation::kSigmoid:
      *mode = CUDNN_POINTWISE_SIGMOID_FWD;
      return true;
    case EpilogueActivation::kTanh:
      *mode = CUDNN_POINTWISE_TANH_FWD;
      return true;
    case EpilogueActivation::kSilu:
      *mode = CUDNN_POINTWISE_SWISH_FWD;
      return true;
    case EpilogueActivation::kGeluErf:
      *mode = CUDNN_POINTWISE_GELU_FWD;
      return true;
    case EpilogueActivation::kGeluTanh:
      *mode = CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
      return true;
    default:
      return false;
  }
}

bool activationNeedsRuntimeFusion(EpilogueActivation activation) {
  cudnnPointwiseMode_t mode;
  return activation != EpilogueActivation::kRelu && cudnnActivationMode(activation, &mode);
}

Status makeOperationGraph(cudnnHandle_t handle, const std::vector<cudnnBackendDescriptor_t>& ops,
                          CudnnDescriptor* graph) {
  KILN_RETURN_IF_ERROR(graph->create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  KILN_CUDNN_SET(graph->get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 ops.size(), ops.data());
  KILN_CUDNN_SET(graph->get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(graph->get()));
  return Status::ok();
}

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

Status chooseConvPlan(GpuKernelContext& ctx, cudnnHandle_t handle, const ConvGeometry& g, void* x,
                      const void* w, void* y, ChosenConvPlan* chosen) {
  CudnnDescriptor xd, wd, yd, op, graph;
  const cudnnDataType_t type = cudnnTypeOf(g.type);
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&xd, type, g.x, kConvUidX, false, g.channelsLast));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&wd, type, g.w, kConvUidW, false, g.channelsLast));
  KILN_RETURN_IF_ERROR(makeCudnnTensor(&yd, type, g.y, kConvUidY, false, g.channelsLast));
  KILN_RETURN_IF_ERROR(makeConvolutionOp(g, xd.get(), wd.get(), yd.get(), &op));
  KILN_RETURN_IF_ERROR(makeOperationGraph(handle, {op.get()}, &graph));
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
      timings << (timings.tellp() > 0 ? ", " : "") << plans[i]->description.substr(13) << "="
              << ms.value() << "ms";
      if (ms.value() < bestMs) {
        bestMs = ms.value();
        best = i;
      }
    }
  }
  chosen->summary = plans[best]->description;
  if (plans.size() > 1) chosen->summary += " fastest of {" + timings.str() + "}";
  chosen->plan = std::shared_ptr<CudnnPlan>(std::move(plans[best]));
  return Status::ok();
}

}  // namespace kiln::cuda
