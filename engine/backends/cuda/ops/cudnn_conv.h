// cuDNN 9 backend-graph machinery the convolution kernels share (conv.cpp,
// fused_conv.cpp): RAII descriptors, tensors, the convolution's geometry and
// operation, execution plans from the engine heuristics, variant packs, timing.
// Host code only; every cuDNN and CUDA call returns a Status.
#pragma once

#include <cudnn.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/libraries.h"
#include "backends/cuda/ops/conv_epilogue.h"

namespace kiln::cuda {

// RAII for a cudnnBackendDescriptor_t.
class CudnnDescriptor {
 public:
  CudnnDescriptor() = default;
  ~CudnnDescriptor();
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  CudnnDescriptor(CudnnDescriptor&& o) noexcept : m_desc(o.m_desc) { o.m_desc = nullptr; }
  Status create(cudnnBackendDescriptorType_t type);
  cudnnBackendDescriptor_t get() const { return m_desc; }

 private:
  cudnnBackendDescriptor_t m_desc = nullptr;
};

// cudnnBackendSetAttribute, returning a Status on failure.
#define KILN_CUDNN_SET(desc, attr, type, count, value) \
  KILN_CUDNN_CHECK(cudnnBackendSetAttribute((desc), (attr), (type), (count), (value)))

cudnnDataType_t cudnnTypeOf(DataType type);

// A packed row-major tensor of `dims`, or with `channelsLast` a 4-D [N, C, H, W] (or
// filter [K, C, R, S]) stored channels innermost. Virtual tensors exist only inside a
// fused graph.
Status makeCudnnTensor(CudnnDescriptor* desc, cudnnDataType_t type,
                       const std::vector<int64_t>& dims, int64_t uid, bool isVirtual = false,
                       bool channelsLast = false);

// One convolution in cuDNN terms (spatial rank >= 2 once promoted).
struct ConvGeometry {
  DataType type = DataType::kFloat32;
  bool transpose = false;        // backward-data: x is the ConvTranspose output
  std::vector<int64_t> x, w, y;  // x: image side, y: filter-output side (forward)
  std::vector<int64_t> pre, post, strides, dilations;
  bool tf32 = false;
  bool channelsLast = false;  // x, w, y (dims still N, C, H, W) stored NHWC / KRSC
  bool operator==(const ConvGeometry& o) const {
    return type == o.type && transpose == o.transpose && x == o.x && w == o.w && y == o.y &&
           pre == o.pre && post == o.post && strides == o.strides && dilations == o.dilations &&
           tf32 == o.tf32 && channelsLast == o.channelsLast;
  }
};

// Pads, strides, dilations and kernel dims of a Conv/ConvTranspose node.
struct ConvAttributes {
  std::vector<int64_t> kernel, strides, dilations, pads, outputPadding, outputShape;
  std::string autoPad;
  int64_t group = 1;
};
ConvAttributes readConvAttributes(const Node& node, size_t spatial, const Shape& w);

// The forward convolution of the context's node (Conv or FusedConv) on X and W:
// ranks 3..5, channels against group, pads resolved (auto_pad too); g->y is the
// output shape. Errors name the node.
Status forwardConvGeometry(const GpuKernelContext& ctx, const DeviceTensor& x,
                           const DeviceTensor& w, ConvGeometry* g);

// cuDNN wants at least 2 spatial dims: a 1-D convolution becomes one of height 1.
ConvGeometry promoteTo2d(ConvGeometry g);
// `dims` ([N, C, L]) with the unit height inserted when `g` was promoted from 1-D.
std::vector<int64_t> promoteDims(std::vector<int64_t> dims, size_t rank);

// The convolution operation of `g` (forward, or backward-data when g.transpose)
// from tensor descriptors x, w to y (y may be virtual).
Status makeConvolutionOp(const ConvGeometry& g, cudnnBackendDescriptor_t x,
                         cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y,
                         CudnnDescriptor* op);

// The pointwise operation y = mode(x[, b]) with float math (b may be null), for the
// epilogues of fused graphs (SWISH_FWD with beta 1: x * sigmoid(x)).
Status makePointwiseOp(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                       cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y, CudnnDescriptor* op);

// An epilogue activation as a cuDNN pointwise mode: ReLU, sigmoid, tanh, SiLU (SWISH_FWD,
// beta 1), GELU (GELU_FWD is the erf form, GELU_APPROX_TANH_FWD the tanh form); false
// for the activations cuDNN's graphs do not have (the clamps, leaky ReLU, hard swish).
bool cudnnActivationMode(EpilogueActivation activation, cudnnPointwiseMode_t* mode);
// Whether a layer with `activation` also tries one of cuDNN's runtime-compiled (NVRTC)
// engines for its fused graph: every mode above but ReLU. Measured on an H200 with cuDNN
// 9.19: no precompiled engine takes a SiLU or GELU epilogue (EfficientNet-B0's convolutions
// with SiLU won 36 of 81 races that way); sigmoid and tanh try one as well (EfficientNet's
// squeeze-excitation expansions), which was part of that measured configuration.
bool activationNeedsRuntimeFusion(EpilogueActivation activation);

// A finalized operation graph of `ops` on `handle`.
Status makeOperationGraph(cudnnHandle_t handle, const std::vector<cudnnBackendDescriptor_t>& ops,
                          CudnnDescriptor* graph);

// How to build an engine configuration again: the engine's global index and its
// knob choices (cudnnBackendKnobType_t, value), as the heuristics proposed them.
struct CudnnEngineChoice {
  int64_t engine = -1;
  std::vector<std::pair<int64_t, int64_t>> knobs;
  bool runtimeCompiled = false;  // the engine compiles its kernel (NVRTC) at finalize
};

// "x 128 56 56 96;w ...;y ...;pre ...;post ...;strides ...;dilations ...;": the dims of `g`
// as the texts that key cuDNN plan records (cudnn_plan_cache.h) write them.
std::string convGeometryDimsText(const ConvGeometry& g);

// "cudnn engine 12", "cudnn engine 4 rtc" (runtime-compiled): how a plan of `choice`
// names itself.
std::string describeCudnnChoice(const CudnnEngineChoice& choice);

struct CudnnPlan {
  CudnnDescriptor plan;
  int64_t workspace = 0;
  std::string description;  // describeCudnnChoice, "+ (fallback)" from the fallback list
  CudnnEngineChoice choice;
};

// An execution plan on `handle` finalized from `source` (the engine config, or a
// serialized plan: CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION), with its workspace
// size; nullptr when cuDNN refuses it.
std::unique_ptr<CudnnPlan> finalizedPlan(cudnnHandle_t handle, cudnnBackendAttributeName_t source,
                                         cudnnBackendAttributeType_t type, int64_t count,
                                         const void* value);

// Which engine configurations a layer accepts.
struct PlanFilter {
  bool strictFloat32 = false;  // no TF32 or down-converted inputs
  int wanted = 1;              // at most this many plans
  int64_t workspaceLimit = 0;
  bool runtimeCompilation = true;  // engines that compile a kernel (NVRTC) at finalize
  int runtimeCompiledLimit = -1;   // at most this many of those (-1: no own limit)
  bool fallbackList = true;        // ask the fallback heuristics when mode A yields none
};

// Up to `filter.wanted` finalized execution plans of `graph` from the heuristics
// (mode A, then the fallback list when A yields none) that pass `filter`; each
// skipped engine's reason goes to `rejected`.
Status heuristicPlans(cudnnHandle_t handle, cudnnBackendDescriptor_t graph,
                      const PlanFilter& filter, std::vector<std::unique_ptr<CudnnPlan>>* plans,
                      std::vector<std::string>* rejected);

// The execution plan of an engine configuration built again from `choice` for
// `graph` on `handle` (finalized; compiles when the engine is runtime-compiled).
Result<std::unique_ptr<CudnnPlan>> planFromChoice(cudnnHandle_t handle,
                                                  cudnnBackendDescriptor_t graph,
                                                  const CudnnEngineChoice& choice);

// The engine options' filter for a convolution of `g` (TF32 rule, candidate count,
// workspace limit).
PlanFilter convPlanFilter(const GpuKernelContext& ctx, const ConvGeometry& g);

// (unique id, device pointer) of each non-virtual tensor of a graph.
using CudnnBindings = std::vector<std::pair<int64_t, void*>>;

// Enqueues `plan` on the handle's stream.
Status executeCudnnPlan(cudnnHandle_t handle, const CudnnPlan& plan, const CudnnBindings& tensors,
                        void* workspace);

// Runs `run` once (warm-up), then three times between CUDA events on `stream`; the
// fastest in milliseconds. An error of `run` comes back as it is.
Result<float> timeOnStream(cudaStream_t stream, const std::function<Status()>& run);

// The library workspace of `bytes` (nullptr for 0).
Result<void*> convWorkspace(GpuKernelContext& ctx, int64_t bytes);

// A plain convolution's plan: the fastest of the heuristics' candidates, timed on x,
// w and y when there are several (y is overwritten); `summary` says which won and
// the timings.
struct ChosenConvPlan {
  std::shared_ptr<CudnnPlan> plan;
  std::string summary;
  // Every engine configuration that ran in the race, with its time (the one plan, untimed:
  // 0, when the heuristics gave one): the choices a layer offers a builder.
  std::vector<std::pair<CudnnEngineChoice, float>> ran;
};
Status chooseConvPlan(GpuKernelContext& ctx, cudnnHandle_t handle, const ConvGeometry& g, void* x,
                      const void* w, void* y, ChosenConvPlan* chosen);

// The plain convolution graph of `g` (X, W, Y bound by kConvUidX/W/Y).
Status buildConvGraph(cudnnHandle_t handle, const ConvGeometry& g, CudnnDescriptor* graph);

// Whether a convolution of `g` records its choice for a plan to replay: every one but
// float32 without TF32, whose recorded engine's math planOfRecordedChoice does not check (such
// layers time their engines at each engine's first run, as before plans carried choices).
bool recordsConvChoice(const GpuKernelContext& ctx, const ConvGeometry& g);

// Tensor uids of the convolution graphs.
constexpr int64_t kConvUidX = 1, kConvUidW = 2, kConvUidY = 3;

}  // namespace kiln::cuda
