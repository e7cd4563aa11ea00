// One side of a comparison: something that runs a network on given inputs and hands
// back its outputs and, on request, the intermediate tensors it exposes. Sides are an
// ONNX model on the CPU reference (FP32, every node's output exposed), a plan on the
// CPU backend (its tactics and precisions; the outputs of its layers exposed: what
// fusion left), or a model or plan on the CUDA runtime (the outputs of its layers that
// another layer reads).
//
// Exposing an intermediate never changes which kernels run: the CPU executor only keeps
// the value alive; the CUDA side runs a second engine of the same layers, tactics and
// precisions whose graph outputs also name the values asked for (their memory is then
// not shared with other activations, and a view among them gets its bytes copied).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/plan.h"
#include "kiln/reference_backend.h"
#include "kiln/status.h"

namespace kiln::compare {

// A tensor a side can return, with the layer that writes it and the ONNX nodes that
// layer implements (its provenance).
struct ExposedTensor {
  std::string name;
  std::string layer;
  std::vector<std::string> sourceNodes;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // "model.onnx: CPU reference, fp32", "a.kiln: cpu plan (fp16 12, fp32 3)".
  virtual std::string description() const = 0;
  // The network whose graph inputs run() takes.
  virtual const Network& network() const = 0;
  // Intermediate tensors run() can return (graph outputs excluded), in execution order.
  virtual std::vector<ExposedTensor> intermediates() const = 0;
  // ONNX node display name -> the layer that implements it, for every node this side
  // runs (fused nodes map to their fused layer).
  virtual std::map<std::string, std::string> layerOfNode() const = 0;
  // Runs on `inputs`; `outputs` receives the graph outputs in graph order, then the
  // `extra` intermediates in the order asked. Errors name the side and the value.
  virtual Status run(const std::map<std::string, Tensor>& inputs,
                     const std::vector<std::string>& extra, std::vector<NamedTensor>* outputs) = 0;
};

// How each top-level node of a network appears as a layer: the plan record's name and
// ONNX source nodes when the record has one entry per node, else the node's own.
struct LayerName {
  std::string name;
  std::vector<std::string> sourceNodes;
};
std::vector<LayerName> layerNames(const Network& network, const BuildRecord* record);
// ONNX node -> the layer holding it, for ModelRunner::layerOfNode.
std::map<std::string, std::string> layerOfNode(const std::vector<LayerName>& layers);
// `values` (written by top-level nodes of `graph`) with their layers, in the order given.
std::vector<ExposedTensor> exposedValues(const std::vector<std::string>& values, const Graph& graph,
                                         const std::vector<LayerName>& layers);

// An ONNX model (or a plan's network without its choices) on the CPU reference, fp32.
std::unique_ptr<ModelRunner> referenceRunner(std::shared_ptr<const Network> network,
                                             std::string label);
// A plan on the CPU backend, with its per-layer tactics and precisions.
Result<std::unique_ptr<ModelRunner>> cpuPlanRunner(std::shared_ptr<const Plan> plan,
                                                   std::string label);

// A model or plan on the CUDA runtime. With a plan, its precision and TF32 setting
// replace `precision`/`allowTf32`. kUnsupported (with the reason) without a device.
struct CudaSideOptions {
  int device = 0;
  DataType precision = DataType::kFloat32;  // kFloat16 / kBFloat16 store floats in 16 bits
  bool allowTf32 = true;
};
Result<std::unique_ptr<ModelRunner>> cudaRunner(std::shared_ptr<const Network> network,
                                                const Plan* plan, const CudaSideOptions& options,
                                                std::string label);

// A plan on the backend it was built for (cpuPlanRunner or cudaRunner), checked
// against this machine.
Result<std::unique_ptr<ModelRunner>> planRunner(std::shared_ptr<const Plan> plan,
                                                std::string label);

// Seeded random non-zero inputs (randomInputTensor) for every graph input: its shape
// from `shapes`, else its declared static shape; a dynamic dim without a shape is an
// error naming the input.
Result<std::map<std::string, Tensor>> randomInputSet(const Network& network,
                                                     const std::map<std::string, Shape>& shapes,
                                                     uint64_t seed);
// The opt shapes of the first profile that has any.
std::map<std::string, Shape> optShapesOf(const std::vector<OptimizationProfile>& profiles);

// How a path on the command line becomes a side.
struct SideSpec {
  std::string path;       // model.onnx or plan.kiln
  std::string backend;    // "" : a plan's own backend, cpu for ONNX; "cpu", "cuda"
  std::string precision;  // CUDA runs of ONNX models: "fp32" (default), "fp16", "bf16"
  int device = 0;
};
// Opens the side: imports the model or loads the plan (checked against this
// machine), and picks the runner. Errors name the path.
Result<std::unique_ptr<ModelRunner>> openSide(const SideSpec& spec,
                                              std::shared_ptr<const Plan>* planOut = nullptr);

}  // namespace kiln::compare
