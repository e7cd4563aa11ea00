// The CUDA backend's kernel interface. A GPU kernel is a plain function that reads
// its node's device inputs, allocates its outputs through the context (arena slots
// planned from shape inference) and enqueues work on the context's stream. It never
// synchronizes: values it needs on the host (shapes, axes, pads) come from
// hostInput(), which is free for constants and recorded as a host round trip
// otherwise. Registration is explicit, one function per op family (ops/*.cu/.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "kiln/cuda_runtime.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

class Libraries;

// A tensor in device memory: packed row-major, `type` is the storage type.
struct DeviceTensor {
  DataType type = DataType::kUndefined;
  Shape shape;
  void* data = nullptr;

  int64_t numel() const { return shapeNumel(shape); }
  size_t byteSize() const { return static_cast<size_t>(numel()) * dataTypeSize(type); }
  int rank() const { return static_cast<int>(shape.size()); }
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

class GpuKernelContext {
 public:
  virtual ~GpuKernelContext() = default;

  virtual const Node& node() const = 0;
  int opset() const { return node().opset; }

  // Input slots (omitted optional inputs are slots with hasInput() false).
  virtual size_t inputCount() const = 0;
  virtual bool hasInput(size_t i) const = 0;
  virtual const DeviceTensor& input(size_t i) const = 0;
  // The input's values on the host. Free for initializers and values folded at
  // prepare time (returned in the model's type); otherwise a device-to-host copy in
  // the storage type that synchronizes the stream, recorded in the layer's note (and
  // refused during CUDA graph capture). Read values with valueAsDouble/toInt64Vector.
  virtual Result<Tensor> hostInput(size_t i) = 0;

  // Declares that this kernel must read device data on the host (a data-dependent
  // output size, say) before it can go on: recorded in the layer's note so the
  // inspector shows it, and refused (kUnsupported) during CUDA graph capture.
  virtual Status hostRoundTrip(const std::string& why) = 0;

  virtual size_t outputCount() const = 0;
  virtual bool wantsOutput(size_t i) const = 0;
  // The device buffer for output i. The planned arena slot when shape inference
  // predicted this shape, else a stream-ordered allocation freed after its last use.
  virtual Result<DeviceTensor> allocateOutput(size_t i, DataType type, const Shape& shape) = 0;
  // The storage type the context planned for output i (kUndefined where none was planned, as
  // for a step inside another layer). Kernels allocate outputs in their inputs' types; a
  // Transpose reading a 16-bit engine's float32 input in place asks it for its output's type.
  virtual DataType plannedOutputType(size_t) const { return DataType::kUndefined; }
  // Scratch memory valid until the kernel's work on the stream completes. One buffer
  // per context: every call returns the same pointer (grown as needed).
  virtual Result<void*> workspace(size_t bytes) = 0;
  // A second buffer, for library calls (cuBLASLt, cuDNN) made by runGemm and the
  // convolutions, so a kernel's own scratch in workspace() survives them.
  virtual Result<void*> libraryWorkspace(size_t bytes) = 0;

  virtual cudaStream_t stream() const = 0;
  virtual Libraries& libraries() = 0;
  virtual const EngineOptions& options() const = 0;
  // The storage type of ONNX float32 values under the engine's precision.
  virtual DataType floatType() const = 0;
  // Maps a type named by the model (Cast's `to`, ConstantOfShape's value) to storage.
  DataType storageType(DataType modelType) const {
    return modelType == DataType::kFloat32 ? floatType() : modelType;
  }

  // State kept for this node across enqueues of this context (e.g. a cuDNN plan);
  // cleared when input shapes change.
  virtual std::shared_ptr<void>& layerState() = 0;
  // Describes what ran, for the inspector ("cudnn engine 3", "cublasLt algo 21").
  virtual void setImplementation(const std::string& text) = 0;
  // The choice this layer made among its own candidates, in words a later engine takes
  // back (FusedMatMul: "cublaslt", "cublaslt_gelu_tanh", "cudnn_graph"): the builder
  // stores it in the plan (TacticCandidate::choice). A step inside another layer keeps none.
  virtual void setChoice(const std::string&) {}
  // The choice the plan recorded for this layer (EngineOptions::layerChoices); "" without
  // one, and the kernel chooses.
  virtual std::string plannedChoice() const { return ""; }
  // The complete choices the layer's race considers, each in the words plannedChoice()
  // takes back (so an engine given one runs it untimed), offered where the race runs: a
  // builder times them one by one and keeps the fastest (issue 23: tactics as data). A
  // step inside another layer offers none.
  virtual void offerChoices(const std::vector<std::string>&) {}

  // Errors with the node's description prepended.
  Status error(const std::string& message) const;
  Status unsupported(const std::string& message) const;
};

using GpuKernelFn = Status (*)(GpuKernelContext& context);
// "" when the kernel handles this node with these input storage types; otherwise
// the reason, and the node runs through the host fallback.
using GpuSupportFn = std::string (*)(const Node& node, const std::vector<DataType>& inputTypes);
// "" when the kernel runs this node at these input shapes as the build knows them (a
// dim below 0 is a symbol, an empty shape an unknown one: accept what may run);
// otherwise the reason. Asked before a pass makes such a node (fusedNodeSupport).
using GpuShapeSupportFn = std::string (*)(const Node& node, const std::vector<Shape>& inputShapes);
// At these concrete input shapes, is output 0 one contiguous run of input 0's bytes (a slice
// keeping whole trailing rows, ...)? Returns the run's first byte in input 0, or -1 when the
// output must be written by the kernel. Asked when a context is planned (every input shape
// known); a step answered with an offset runs no kernel: its output is a view (offset bytes
// into input 0's buffer), or, where the output is a graph output, a copy of those bytes.
using GpuViewOffsetFn = int64_t (*)(const Node& node, const std::vector<Shape>& inputShapes,
                                    size_t elementBytes);

struct GpuKernelEntry {
  std::string domain;  // "" = ai.onnx
  std::string opType;
  int sinceVersion = 1;
  int untilVersion = 1000;
  GpuKernelFn fn = nullptr;
  GpuSupportFn supports =
      nullptr;  // nullptr: float32/float16/bfloat16 data inputs only. A kernel may still return
  // kUnsupported at run time for a variant it lacks: the node then moves to the host
  // fallback for good, with the message as its note (never during graph capture).
  // Output 0 is input 0's bytes under a new shape (Reshape, Squeeze, ...): no kernel
  // runs; `fn` is still called to validate and compute the shape via allocateOutput.
  bool aliasesInput0 = false;
  GpuShapeSupportFn supportsShapes = nullptr;  // nullptr: any shape
  GpuViewOffsetFn viewOffset = nullptr;        // nullptr: never a view (unless aliasesInput0)
};

class GpuKernelRegistry {
 public:
  void add(GpuKernelEntry entry);
  // Convenience for the common case.
  void add(const std::string& opType, int sinceVersion, int untilVersion, GpuKernelFn fn,
           GpuSupportFn supports = nullptr);
  const GpuKernelEntry* find(const std::string& domain, const std::string& opType, int opset) const;
  const std::vector<GpuKernelEntry>& entries() const { return m_entries; }

 private:
  std::vector<GpuKernelEntry> m_entries;
};

const GpuKernelRegistry& builtinGpuKernels();

// "" when a built-in GPU kernel runs `node` with inputs of these types and shapes (the
// entry's supports and supportsShapes); otherwise the reason ("no GPU kernel for ...").
std::string builtinGpuKernelSupport(const Node& node, const std::vector<DataType>& inputTypes,
                                    const std::vector<Shape>& inputShapes);

// Support predicates shared by families.
std::string supportsFloatTypes(const Node& node, const std::vector<DataType>& types);
// float32/16/bf16/64 and every integer type and bool.
std::string supportsNumericTypes(const Node& node, const std::vector<DataType>& types);
// Any type that is not a string (data movement ops copy bytes).
std::string supportsAnyFixedSizeType(const Node& node, const std::vector<DataType>& types);

// One registration function per op family.
void registerElementwiseGpuKernels(GpuKernelRegistry& registry);
void registerReduceGpuKernels(GpuKernelRegistry& registry);
void registerNormalizationGpuKernels(GpuKernelRegistry& registry);
void registerDataMovementGpuKernels(GpuKernelRegistry& registry);
void registerPoolGpuKernels(GpuKernelRegistry& registry);
void registerResizeGpuKernels(GpuKernelRegistry& registry);          // Resize, Upsample
void registerBlockRearrangeGpuKernels(GpuKernelRegistry& registry);  // DepthToSpace, SpaceToDepth
// Trilu, Range, ConstantOfShape, EyeLike, OneHot.
void registerGeneratorGpuKernels(GpuKernelRegistry& registry);
void registerConvGpuKernels(GpuKernelRegistry& registry);
void registerMatMulGpuKernels(GpuKernelRegistry& registry);
void registerShapeGpuKernels(GpuKernelRegistry& registry);
void registerQuantizeGpuKernels(GpuKernelRegistry& registry);        // Q/DQ, integer GEMM/conv
void registerSelectionGpuKernels(GpuKernelRegistry& registry);       // TopK, CumProd, NonZero, ...
void registerAttentionGpuKernels(GpuKernelRegistry& registry);       // Attention
void registerRotaryEmbeddingGpuKernel(GpuKernelRegistry& registry);  // RotaryEmbedding
void registerSpatialMiscGpuKernels(GpuKernelRegistry& registry);     // GridSample, RoiAlign, ...
void registerRnnGpuKernels(GpuKernelRegistry& registry);             // LSTM, GRU, RNN
// ai.kiln ScaledMaskedSoftmax and AddLayerNorm (the fusion passes' row kernels).
void registerFusedNormalizationGpuKernels(GpuKernelRegistry& registry);
void registerFusedConvGpuKernels(GpuKernelRegistry& registry);    // ai.kiln FusedConv
void registerConvMaxPoolGpuKernels(GpuKernelRegistry& registry);  // ai.kiln FusedConvMaxPool

}  // namespace kiln::cuda
