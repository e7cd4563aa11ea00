// The CUDA runtime: an Engine holds a network's weights on one GPU; an
// ExecutionContext holds one set of input shapes, its activation arena and its
// bindings, and runs the network on a CUDA stream. Several contexts of one engine
// may run at once on different streams (each owns its arena and scratch).
//
// This header has no CUDA types: streams are passed as `void*` (a cudaStream_t).
// In a build without the CUDA toolkit every entry point reports kUnsupported and
// probeCudaDevice() says why; nothing here needs a driver to link or start.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/plan_identity.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

// What the process can use. `available` is false with a one-line `reason` when the
// build has no CUDA, no driver is installed, or no device is visible.
struct DeviceInfo {
  bool available = false;
  std::string reason;
  int ordinal = 0;
  std::string name;
  int computeMajor = 0;
  int computeMinor = 0;
  int multiprocessors = 0;
  int64_t totalMemoryBytes = 0;
  int64_t l2CacheBytes = 0;
  int driverVersion = 0;   // 13000 = 13.0
  int runtimeVersion = 0;  // cudart this build runs with
  int cudnnVersion = 0;    // e.g. 91000
  int cublasVersion = 0;   // cuBLASLt, e.g. 130000
};
bool builtWithCuda();
DeviceInfo probeCudaDevice(int ordinal = 0);
// The identity a plan built on `device` records: backend "cuda", the device's name
// and compute capability, and the CUDA runtime, cuDNN and cuBLASLt versions.
PlanIdentity cudaPlanIdentity(const DeviceInfo& device);

// Operators with a GPU kernel (domain "" = ai.onnx, inclusive opset range). Others,
// and dtypes a kernel does not take, run through the host fallback. Empty without CUDA.
struct GpuOperator {
  std::string domain;
  std::string opType;
  int sinceVersion = 1;
  int untilVersion = 1000;
};
std::vector<GpuOperator> gpuOperators();

// How float tensors are stored and computed. kFloat16/kBFloat16 convert float32
// weights once at upload and float32 inputs/outputs at the binding boundary;
// reductions, norms and softmax accumulate in float32 whatever the storage type.
enum class Precision { kFloat32, kFloat16, kBFloat16 };
class CompiledCode;  // kiln/cuda_generated_kernels.h
const char* precisionName(Precision precision);

struct EngineOptions {
  int device = 0;
  Precision precision = Precision::kFloat32;
  bool allowTf32 = true;                    // float32 GEMM/conv may use TF32 tensor cores
  int64_t workspaceLimitBytes = 1LL << 30;  // per-layer library workspace ceiling
  // Number of heuristic candidates each cuDNN convolution times before picking the
  // fastest (1: take the heuristic's first choice untimed).
  int convolutionCandidates = 6;
  // A float32 graph input of a 16-bit engine that only Transposes read (directly or through
  // Reshape-like views; every vision model's first layer) is read in place, the Transposes
  // rounding it to the engine's type as they move it, instead of a conversion pass first.
  // Bit for bit the same result; false converts every such input first (the op tests use
  // it to reach the 16-bit kernels with graph inputs).
  bool narrowInputsInTransposes = true;
  // Choices a plan recorded, by node display name (TacticCandidate::choice): such a
  // layer takes its choice back instead of timing its candidates again; one it cannot
  // take (a choice this build does not know, or one that no longer applies) chooses as
  // without a plan and says so in its implementation text.
  std::map<std::string, std::string> layerChoices;
  // Where the engine keeps the code it compiles or loads (NVRTC cubins, cuDNN execution
  // plans; kiln/cuda_generated_kernels.h). nullptr: the engine makes its own. Engines
  // given the same object share it (a build's timing engines; engineOptionsForPlan fills
  // a new one with the plan's entries).
  std::shared_ptr<CompiledCode> compiledCode;
};

// How one node of the network runs on this engine.
enum class LayerPlacement {
  kGpu,           // a Kiln kernel or library call on the device
  kFolded,        // computed once at prepare time from constants and shapes
  kAlias,         // a view of its input (Reshape, Squeeze, ...): no kernel runs
  kHostFallback,  // no GPU kernel for this op/dtype: inputs go to the host and back
};
const char* layerPlacementName(LayerPlacement placement);

struct LayerInfo {
  std::string name;  // the ONNX node's display name
  std::string opType;
  LayerPlacement placement = LayerPlacement::kGpu;
  std::string implementation;  // "cudnn engine 12 (timed 0.041 ms)", "kiln:elementwise", ...
  std::string note;            // why a fallback or host round trip happens
  int64_t workspaceBytes = 0;
  std::string choice;  // the kernel's choice inside its tactic, for a plan to replay ("" none)
  // Every complete choice the kernel's race considered (GpuKernelContext::offerChoices), for
  // a builder to time one by one; empty when the layer has no race.
  std::vector<std::string> offeredChoices;
};

// "gpu: cudnn engine 12 ...", "host-fallback (why)": placement, implementation and note in
// one line, as the BuildRecord's candidate detail, the profiler and `kiln run
// --export-profile` write what a layer ran (so they compare as text).
std::string layerDescription(const LayerInfo& layer);

// Per-layer timing of one profiled run (milliseconds of GPU time between events).
struct LayerTiming {
  std::string name;
  std::vector<float> milliseconds;  // one entry per profiled iteration
};

class ExecutionContext;

class Engine {
 public:
  // Uploads the network's weights and checks every node has a GPU kernel or a
  // host fallback. `network` is shared so contexts may outlive the caller's copy.
  static Result<std::shared_ptr<Engine>> create(std::shared_ptr<const Network> network,
                                                const EngineOptions& options = {});
  virtual ~Engine() = default;

  virtual const Network& network() const = 0;
  virtual const EngineOptions& options() const = 0;
  virtual const DeviceInfo& device() const = 0;
  virtual int64_t weightBytes() const = 0;  // device bytes of uploaded weights
  // A new context (its own arena and scratch); the engine must outlive it.
  virtual Result<std::unique_ptr<ExecutionContext>> createContext() = 0;
};

class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;

  // Binds a graph input's shape. Rank and fixed dims must match the model and
  // named dims must agree across inputs; the error names the input and both shapes.
  virtual Status setInputShape(const std::string& name, const Shape& shape) = 0;
  // After every input shape is set: the output's shape, or an error naming the
  // output when it depends on data (then it is known after a run).
  virtual Result<Shape> outputShape(const std::string& name) = 0;
  // Data type of a graph input or output as the caller binds it (float32 stays
  // float32 at the boundary whatever the engine's precision).
  virtual Result<DataType> bindingType(const std::string& name) const = 0;

  // Binds a caller-owned device buffer to a graph input or output (nullptr unbinds:
  // the context then uses its own buffer). Buffers hold the binding type, packed
  // row-major; an output buffer must hold outputShape() elements.
  virtual Status setTensorAddress(const std::string& name, void* devicePointer) = 0;
  // Copies a host tensor into the input's device buffer (on the stream of the next
  // enqueue, or synchronously when stream is null).
  virtual Status setInput(const std::string& name, const Tensor& host, void* stream = nullptr) = 0;
  // The device pointer of an input or output (the bound one, or the context's own).
  virtual Result<void*> tensorAddress(const std::string& name) = 0;
  // Copies an output to the host (synchronizes `stream`, or the device when null).
  virtual Result<Tensor> getOutput(const std::string& name, void* stream = nullptr) = 0;

  // Runs the network on `stream` asynchronously. Plans memory on the first call
  // after the shapes change. Fails, naming the node, when a kernel cannot run.
  virtual Status enqueue(void* stream) = 0;
  // enqueue() on the context's own stream, then waits for it.
  virtual Status execute() = 0;

  // Captures one enqueue into a CUDA graph and replays it from then on (until the
  // shapes or bindings change). Fails with the node's name when the network has a
  // host round trip (a fallback or data-dependent shape) that a graph cannot hold.
  virtual Status setUseCudaGraph(bool enabled) = 0;

  // When on, each later enqueue records CUDA events around every layer; the
  // timings accumulate per layer until takeLayerTimings() returns and clears them.
  virtual void setProfiling(bool enabled) = 0;
  virtual std::vector<LayerTiming> takeLayerTimings() = 0;
  // With a head start > 0, each profiled enqueue first makes the GPU wait that long
  // on the stream, so the host has queued the layers (and their events) before the
  // GPU reaches them: a layer's time is then its GPU work alone, without the host's
  // launch and setup gaps between its events (which at batch 1 outweigh the work).
  // The builder's one-layer timing uses it; `kiln run --profile` does not (its times
  // show what the host costs too). 0 (the default) turns it off.
  virtual void setProfilingHeadStart(double milliseconds) { (void)milliseconds; }

  // How each node runs under the current shapes (valid after the first enqueue).
  virtual std::vector<LayerInfo> layers() const = 0;
  // Bytes of the activation arena (peak of the packed lifetimes), and what the
  // activations would take with no reuse.
  virtual int64_t activationBytes() const = 0;
  virtual int64_t activationBytesWithoutReuse() const = 0;
  // Names of graph inputs and outputs in graph order.
  virtual std::vector<std::string> inputNames() const = 0;
  virtual std::vector<std::string> outputNames() const = 0;
};

}  // namespace kiln::cuda
