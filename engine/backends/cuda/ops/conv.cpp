// Conv and ConvTranspose through cuDNN 9's backend (graph) API. Each layer builds
// a one-operation graph (convolution forward, or backward-data for ConvTranspose)
// for its exact shapes, asks the heuristics for engine configurations, drops those
// that break the precision contract (TF32 / down-converted inputs when TF32 is off),
// times the first few that finalize, and keeps the fastest plan in the layer state.
// Bias is added by a channel-bias kernel after the convolution (fusion is the
// optimizer's job). 1-D convolutions run as 2-D with a unit height.
#include <cudnn.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common_host.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/libraries.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace kiln::cuda {
namespace {

// RAII for a cudnnBackendDescriptor_t.
class Descriptor {
 public:
  Descriptor() = default;
  ~Descriptor() {
    if (m_desc) cudnnBackendDestroyDescriptor(m_desc);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor(Descriptor&& o) noexcept : m_desc(o.m_desc) { o.m_desc = nullptr; }
  Status create(cudnnBackendDescriptorType_t type) {
    KILN_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &m_desc));
    return Status::ok();
  }
  cudnnBackendDescriptor_t get() const { return m_desc; }
  cudnnBackendDescriptor_t* address() { return &m_desc; }

 private:
  cudnnBackendDescriptor_t m_desc = nullptr;
};

#define KILN_SET(desc, attr, type, count, value) \
  KILN_CUDNN_CHECK(cudnnBackendSetAttribute((desc), (attr), (type), (count), (value)))

cudnnDataType_t cudnnTypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return CUDNN_DATA_HALF;
    case DataType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    case DataType::kFloat64:
      return CUDNN_DATA_DOUBLE;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

Status makeTensor(Descriptor* desc, DataType type, const std::vector<int64_t>& dims, int64_t uid) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  KILN_RETURN_IF_ERROR(desc->create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  cudnnDataType_t dtype = cudnnTypeOf(type);
  int64_t alignment = 16;
  KILN_SET(desc->get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype);
  KILN_SET(desc->get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.size(), dims.data());
  KILN_SET(desc->get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.size(),
           strides.data());
  KILN_SET(desc->get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  KILN_SET(desc->get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(desc->get()));
  return Status::ok();
}

// Geometry of one convolution in cuDNN terms (spatial rank >= 2).
struct ConvGeometry {
  DataType type = DataType::kFloat32;
  bool transpose = false;        // backward-data: x is the ConvTranspose output
  std::vector<int64_t> x, w, y;  // x: image side, y: filter-output side (forward)
  std::vector<int64_t> pre, post, strides, dilations;
  bool tf32 = false;
  bool operator==(const ConvGeometry& o) const {
    return type == o.type && transpose == o.transpose && x == o.x && w == o.w && y == o.y &&
           pre == o.pre && post == o.post && strides == o.strides && dilations == o.dilations &&
           tf32 == o.tf32;
  }
};

struct ConvPlan {
  ConvGeometry geometry;
  Descriptor plan;
  int64_t workspace = 0;
  std::string description;
};

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

Status buildOperationGraph(cudnnHandle_t handle, const ConvGeometry& g, Descriptor* graph) {
  Descriptor x, w, y, conv, op;
  KILN_RETURN_IF_ERROR(makeTensor(&x, g.type, g.x, kUidX));
  KILN_RETURN_IF_ERROR(makeTensor(&w, g.type, g.w, kUidW));
  KILN_RETURN_IF_ERROR(makeTensor(&y, g.type, g.y, kUidY));
  KILN_RETURN_IF_ERROR(conv.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  int64_t spatial = static_cast<int64_t>(g.strides.size());
  cudnnDataType_t compute = g.type == DataType::kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  KILN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  KILN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  KILN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  KILN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial,
           g.pre.data());
  KILN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial,
           g.post.data());
  KILN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial,
           g.dilations.data());
  KILN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial,
           g.strides.data());
  KILN_CUDNN_CHECK(cudnnBackendFinalize(conv.get()));

  cudnnBackendDescriptor_t xd = x.get(), wd = w.get(), yd = y.get(), cd = conv.get();
  if (g.type == DataType::kFloat64) {
    double alpha = 1.0, beta = 0.0;
    if (!g.transpose) {
      KILN_RETURN_IF_ERROR(op.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
      KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_DOUBLE, 1,
               &alpha);
      KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_DOUBLE, 1,
               &beta);
    } else {
      KILN_RETURN_IF_ERROR(op.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR));
      KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_DOUBLE, 1,
               &alpha);
      KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_DOUBLE, 1,
               &beta);
    }
  } else {
    float alpha = 1.f, beta = 0.f;
    if (!g.transpose) {
      KILN_RETURN_IF_ERROR(op.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
      KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
               &alpha);
      KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    } else {
      KILN_RETURN_IF_ERROR(op.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR));
      KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1,
               &alpha);
      KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1,
               &beta);
    }
  }
  if (!g.transpose) {
    KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &xd);
    KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &wd);
    KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &yd);
    KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd);
  } else {
    KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_TYPE_BACKEND_DESCRIPTOR,
             1, &xd);
    KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_TYPE_BACKEND_DESCRIPTOR,
             1, &wd);
    KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR,
             1, &yd);
    KILN_SET(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd);
  }
  KILN_CUDNN_CHECK(cudnnBackendFinalize(op.get()));
  KILN_RETURN_IF_ERROR(graph->create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  cudnnBackendDescriptor_t opd = op.get();
  KILN_SET(graph->get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &opd);
  KILN_SET(graph->get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(graph->get()));
  return Status::ok();
}

// True when the engine config's numerical notes say it computes float32 data
// with reduced-precision inputs (TF32 tensor cores or down-conversion).
bool reducesFloat32Precision(cudnnBackendDescriptor_t config) {
  Descriptor engine;
  if (!engine.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR).isOk()) return true;
  int64_t count = 0;
  cudnnBackendDescriptor_t engineDesc = engine.get();
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               1, &count, &engineDesc) != CUDNN_STATUS_SUCCESS) {
    return true;
  }
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t noteCount = 0;
  if (cudnnBackendGetAttribute(engineDesc, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
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

int64_t engineIndex(cudnnBackendDescriptor_t config) {
  Descriptor engine;
  if (!engine.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR).isOk()) return -1;
  int64_t count = 0, index = -1;
  cudnnBackendDescriptor_t engineDesc = engine.get();
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               1, &count, &engineDesc) != CUDNN_STATUS_SUCCESS)
    return -1;
  cudnnBackendGetAttribute(engineDesc, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count,
                           &index);
  return index;
}

Status execute(cudnnHandle_t handle, const ConvPlan& plan, void* x, const void* w, void* y,
               void* workspace) {
  Descriptor pack;
  KILN_RETURN_IF_ERROR(pack.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  int64_t uids[3] = {kUidX, kUidW, kUidY};
  void* pointers[3] = {x, const_cast<void*>(w), y};
  KILN_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  KILN_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  KILN_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(pack.get()));
  KILN_CUDNN_CHECK(cudnnBackendExecute(handle, plan.plan.get(), pack.get()));
  return Status::ok();
}

// Heuristic candidates, each finalized into a plan; the fastest of the timed ones wins.
Status choosePlan(GpuKernelContext& ctx, cudnnHandle_t handle, const ConvGeometry& g, void* x,
                  const void* w, void* y, std::shared_ptr<ConvPlan>* chosen) {
  Descriptor graph;
  KILN_RETURN_IF_ERROR(buildOperationGraph(handle, g, &graph));
  std::vector<std::unique_ptr<ConvPlan>> plans;
  std::vector<std::string> rejected;
  const int wanted = std::max(1, ctx.options().convolutionCandidates);
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Descriptor heuristics;
    KILN_RETURN_IF_ERROR(heuristics.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
    cudnnBackendDescriptor_t gd = graph.get();
    KILN_SET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR,
             1, &gd);
    KILN_SET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (cudnnBackendFinalize(heuristics.get()) != CUDNN_STATUS_SUCCESS) continue;
    int64_t available = 0;
    KILN_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available,
                                              nullptr));
    std::vector<Descriptor> configs(static_cast<size_t>(available));
    std::vector<cudnnBackendDescriptor_t> raw;
    for (Descriptor& c : configs) {
      KILN_RETURN_IF_ERROR(c.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(c.get());
    }
    int64_t returned = 0;
    if (available > 0) {
      KILN_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &returned,
                                                raw.data()));
    }
    for (int64_t i = 0; i < returned && static_cast<int>(plans.size()) < wanted; ++i) {
      if (g.type == DataType::kFloat32 && !g.tf32 && reducesFloat32Precision(raw[i])) {
        rejected.push_back("engine " + std::to_string(engineIndex(raw[i])) + ": uses TF32");
        continue;
      }
      auto plan = std::make_unique<ConvPlan>();
      plan->geometry = g;
      if (!plan->plan.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR).isOk()) continue;
      cudnnBackendDescriptor_t cfg = raw[i];
      if (cudnnBackendSetAttribute(plan->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                   &cfg) != CUDNN_STATUS_SUCCESS ||
          cudnnBackendSetAttribute(plan->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                   CUDNN_TYPE_HANDLE, 1, &handle) != CUDNN_STATUS_SUCCESS ||
          cudnnBackendFinalize(plan->plan.get()) != CUDNN_STATUS_SUCCESS) {
        rejected.push_back("engine " + std::to_string(engineIndex(raw[i])) + ": did not finalize");
        continue;
      }
      int64_t count = 0;
      cudnnBackendGetAttribute(plan->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                               CUDNN_TYPE_INT64, 1, &count, &plan->workspace);
      if (plan->workspace > ctx.options().workspaceLimitBytes) {
        rejected.push_back("engine " + std::to_string(engineIndex(raw[i])) +
                           ": workspace over limit");
        continue;
      }
      plan->description = "cudnn engine " + std::to_string(engineIndex(raw[i])) +
                          (mode == CUDNN_HEUR_MODE_FALLBACK ? " (fallback)" : "");
      plans.push_back(std::move(plan));
    }
    if (!plans.empty()) break;
  }
  if (plans.empty()) {
    std::string why = rejected.empty() ? "no engine" : rejected.front();
    return ctx.unsupported("cuDNN has no usable engine for this convolution (" + why + ")");
  }
  int64_t maxWorkspace = 0;
  for (const auto& p : plans) maxWorkspace = std::max(maxWorkspace, p->workspace);
  void* workspace = nullptr;
  if (maxWorkspace > 0) {
    auto ws = ctx.libraryWorkspace(static_cast<size_t>(maxWorkspace));
    if (!ws.isOk()) return ws.status();
    workspace = ws.value();
  }
  size_t best = 0;
  std::ostringstream timings;
  if (plans.size() > 1) {
    cudaEvent_t start, end;
    KILN_CUDA_CHECK(cudaEventCreate(&start));
    KILN_CUDA_CHECK(cudaEventCreate(&end));
    float bestMs = 1e30f;
    for (size_t i = 0; i < plans.size(); ++i) {
      // Warm-up, then the best of three (cuDNN's own find uses a similar count).
      if (!execute(handle, *plans[i], x, w, y, workspace).isOk()) continue;
      float fastest = 1e30f;
      for (int r = 0; r < 3; ++r) {
        KILN_CUDA_CHECK(cudaEventRecord(start, ctx.stream()));
        KILN_RETURN_IF_ERROR(execute(handle, *plans[i], x, w, y, workspace));
        KILN_CUDA_CHECK(cudaEventRecord(end, ctx.stream()));
        KILN_CUDA_CHECK(cudaEventSynchronize(end));
        float ms = 0;
        KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
        fastest = std::min(fastest, ms);
      }
      timings << (i ? ", " : "") << plans[i]->description.substr(13) << "=" << fastest << "ms";
      if (fastest < bestMs) {
        bestMs = fastest;
        best = i;
      }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(end);
  }
  std::string summary = plans[best]->description;
  if (plans.size() > 1) summary += " fastest of {" + timings.str() + "}";
  ctx.setImplementation(summary);
  *chosen = std::shared_ptr<ConvPlan>(std::move(plans[best]));
  return Status::ok();
}

// Pads, strides, dilations and kernel dims of a Conv/ConvTranspose node.
struct ConvAttributes {
  std::vector<int64_t> kernel, strides, dilations, pads, outputPadding, outputShape;
  std::string autoPad;
  int64_t group = 1;
};

ConvAttributes readAttributes(const Node& node, size_t spatial, const Shape& w) {
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

// cuDNN wants at least 2 spatial dims: 1-D becomes H=1.
void promote1d(std::vector<int64_t>* dims, int64_t value) {
  if (dims->size() == 3) dims->insert(dims->begin() + 2, value);
}

Status runConvolution(GpuKernelContext& ctx, ConvGeometry g, void* x, const void* w, void* y) {
  if (g.strides.size() == 1) {
    promote1d(&g.x, 1);
    promote1d(&g.w, 1);
    promote1d(&g.y, 1);
    g.pre.insert(g.pre.begin(), 0);
    g.post.insert(g.post.begin(), 0);
    g.strides.insert(g.strides.begin(), 1);
    g.dilations.insert(g.dilations.begin(), 1);
  }
  auto handle = ctx.libraries().cudnn(ctx.stream());
  if (!handle.isOk()) return handle.status();
  auto& state = ctx.layerState();
  auto plan = std::static_pointer_cast<ConvPlan>(state);
  if (!plan || !(plan->geometry == g)) {
    KILN_RETURN_IF_ERROR(choosePlan(ctx, handle.value(), g, x, w, y, &plan));
    state = plan;
  }
  void* workspace = nullptr;
  if (plan->workspace > 0) {
    auto ws = ctx.libraryWorkspace(static_cast<size_t>(plan->workspace));
    if (!ws.isOk()) return ws.status();
    workspace = ws.value();
  }
  return execute(handle.value(), *plan, x, w, y, workspace);
}

Status addBias(GpuKernelContext& ctx, const DeviceTensor& out) {
  if (!ctx.hasInput(2)) return Status::ok();
  const DeviceTensor& bias = ctx.input(2);
  int64_t channels = out.shape[1];
  if (bias.numel() != channels)
    return ctx.error("bias has " + std::to_string(bias.numel()) + " values for " +
                     std::to_string(channels) + " channels");
  int64_t inner = 1;
  for (int d = 2; d < out.rank(); ++d) inner *= out.shape[d];
  return addChannelBias(out.data, out.type, bias.data, out.shape[0], channels, inner, ctx.stream());
}

Status convKernel(GpuKernelContext& ctx) {
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& w = ctx.input(1);
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) {
    return ctx.unsupported("Conv of rank " + std::to_string(x.rank()));
  }
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  ConvAttributes a = readAttributes(ctx.node(), spatial, w.shape);
  if (a.group < 1 || x.shape[1] != w.shape[1] * a.group || w.shape[0] % a.group != 0) {
    return ctx.error("channels do not match: X " + shapeToString(x.shape) + ", W " +
                     shapeToString(w.shape) + ", group " + std::to_string(a.group));
  }
  ConvGeometry g;
  g.type = x.type;
  g.tf32 = x.type == DataType::kFloat32 && ctx.options().allowTf32;
  g.x = x.shape;
  g.w = w.shape;
  g.strides = a.strides;
  g.dilations = a.dilations;
  Shape outShape = {x.shape[0], w.shape[0]};
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
    g.pre.push_back(begin);
    g.post.push_back(end);
    outShape.push_back(out);
  }
  g.y = outShape;
  auto out = ctx.allocateOutput(0, x.type, outShape);
  if (!out.isOk()) return out.status();
  if (out.value().numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(runConvolution(ctx, g, x.data, w.data, out.value().data));
  return addBias(ctx, out.value());
}

Status convTransposeKernel(GpuKernelContext& ctx) {
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& w = ctx.input(1);
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) {
    return ctx.unsupported("ConvTranspose of rank " + std::to_string(x.rank()));
  }
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  ConvAttributes a = readAttributes(ctx.node(), spatial, w.shape);
  if (a.group != 1) return ctx.unsupported("grouped ConvTranspose");
  if (!a.outputShape.empty() || a.autoPad != "NOTSET") {
    return ctx.unsupported("ConvTranspose with output_shape or auto_pad");
  }
  if (x.shape[1] != w.shape[0]) return ctx.error("channels do not match");
  Shape outShape = {x.shape[0], w.shape[1]};
  ConvGeometry g;
  g.type = x.type;
  g.transpose = true;
  g.tf32 = x.type == DataType::kFloat32 && ctx.options().allowTf32;
  g.strides = a.strides;
  g.dilations = a.dilations;
  for (size_t d = 0; d < spatial; ++d) {
    int64_t k = (a.kernel[d] - 1) * a.dilations[d] + 1;
    int64_t out = a.strides[d] * (x.shape[2 + d] - 1) + a.outputPadding[d] + k - a.pads[d] -
                  a.pads[d + spatial];
    if (out <= 0) return ctx.error("output would be empty");
    outShape.push_back(out);
    g.pre.push_back(a.pads[d]);
    // The forward convolution of the output must give back x's size: output padding
    // goes to the end padding (possibly negative, which cuDNN rejects -> host).
    g.post.push_back(a.pads[d + spatial] - a.outputPadding[d]);
    if (g.post.back() < 0) return ctx.unsupported("ConvTranspose output_padding beyond the pads");
  }
  g.x = outShape;  // dx: the image side
  g.w = w.shape;   // [C_in(=forward K), C_out, k...]
  g.y = x.shape;   // dy: the forward output side
  auto out = ctx.allocateOutput(0, x.type, outShape);
  if (!out.isOk()) return out.status();
  if (out.value().numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(runConvolution(ctx, g, out.value().data, w.data, x.data));
  return addBias(ctx, out.value());
}

std::string convSupport(const Node& node, const std::vector<DataType>& types) {
  for (size_t i = 0; i < std::min<size_t>(types.size(), 3); ++i) {
    DataType t = types[i];
    if (t != DataType::kUndefined && t != DataType::kFloat32 && t != DataType::kFloat16 &&
        t != DataType::kBFloat16)
      return std::string("no cuDNN convolution for ") + dataTypeName(t);
  }
  return "";
}

}  // namespace

void registerConvGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Conv", 1, 1000, convKernel, convSupport);
  registry.add("ConvTranspose", 1, 1000, convTransposeKernel, convSupport);
}

}  // namespace kiln::cuda
