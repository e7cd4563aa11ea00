// The seam between the builder and a backend: which tactics a layer has, and how
// long one takes. The builder owns the decisions (precision, timing, cache,
// replay, constraints); a backend only answers these questions. The CPU backend
// (cpuBuildBackend()) lives in kiln_engine; the CUDA one in kiln_cuda.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/data_type.h"
#include "kiln/generated_kernels.h"
#include "kiln/graph.h"
#include "kiln/plan_identity.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// One implementation a backend offers for a node, in the backend's preference
// order (the first is what it would pick without timing).
struct TacticDescriptor {
  std::string name;                  // unique within the backend: "cpu.conv.im2col_blas"
  uint32_t source = 0;               // a TacticSource bit
  std::vector<DataType> precisions;  // compute precisions this tactic may run in
};

// Inputs of one timing: the node's input tensors at the profile's opt shapes
// (nullptr for omitted optional inputs) and the outer-scope values its subgraphs read.
struct LayerInputs {
  std::vector<const Tensor*> inputs;
  // Per input: true for weights and values fixed at build time (folded shape
  // values), which a backend may treat as constants.
  std::vector<bool> constant;
  std::map<std::string, Tensor> outerValues;
};

// One layer of a finished build, for generatedKernels(): its node, the compute
// precision the plan gives it, and its inputs' model types and shapes at the first
// profile's opt shapes (where the builder tunes).
struct BuiltLayer {
  const Node* node = nullptr;
  DataType precision = DataType::kFloat32;
  std::vector<DataType> inputTypes;  // kUndefined for an omitted input
  std::vector<Shape> inputShapes;
  bool shapesKnown = true;  // false when an input's shape depends on data
};

class BuildBackend {
 public:
  virtual ~BuildBackend() = default;
  // The device and library versions a plan built here is for.
  virtual PlanIdentity identity() const = 0;
  // True when every layer of one engine must share one compute precision (the
  // builder then chooses it for the whole network).
  virtual bool uniformPrecision() const = 0;
  // True when the backend's convolutions want channels-last (NHWC) storage in a build
  // that allows tensor-core math (`tensorCoreMath`: fp16, bf16 or TF32): the builder
  // then runs the channels_last_layout pass.
  // Implicit INT8 leaves an ungrouped convolution float when its input has fewer channels than
  // this (0: no limit), for backends whose INT8 convolutions are much slower than
  // their float ones on so few channels; the layer records why.
  virtual int minInt8ConvInputChannels() const { return 0; }
  virtual bool prefersChannelsLast(bool tensorCoreMath) const {
    (void)tensorCoreMath;
    return false;
  }
  // "" when the backend runs the Kiln-domain node `fused` that a pass proposes, with
  // inputs of these model types and shapes (kiln/passes.h, FusionTarget); otherwise why
  // not, and the match stays unfused (its parts run as they are). Default: "" (the CPU
  // reference runs every fused node).
  virtual std::string fusedNodeSupport(const Node& fused, const std::vector<DataType>& inputTypes,
                                       const std::vector<Shape>& inputShapes) const {
    (void)fused;
    (void)inputTypes;
    (void)inputShapes;
    return "";
  }
  // The tactics for `node`, in preference order (the first is the heuristic's
  // pick); never empty for a node the backend can run at all.
  virtual std::vector<TacticDescriptor> tactics(const Node& node) const = 0;
  // Runs the tactic once to warm up, then `iterations` times, and returns the
  // median milliseconds. kUnsupported (with the reason) when this tactic cannot
  // run this node at this precision and these shapes.
  virtual Result<double> timeTactic(const Node& node, const std::string& tactic, DataType precision,
                                    const LayerInputs& inputs, int iterations) = 0;
  // What the backend says about the last successful timeTactic() (the library
  // algorithm it picked inside, a host fallback, ...); "" when nothing.
  virtual std::string lastTimingDetail() const { return ""; }
  // The choice the layer made inside the tactic in the last successful timeTactic(), in
  // words the backend's runtime takes back (TacticCandidate::choice); "" when none.
  virtual std::string lastTimingChoice() const { return ""; }
  // Every complete choice the tactic considered inside in the last successful
  // timeTactic() (CUDA: the cuBLASLt algorithms, Kiln's kernel against cuDNN's engines,
  // the generated kernel against the unfused one), each in words timeChoice() takes; the
  // builder times them one by one and keeps the fastest. Empty when the tactic makes no
  // choice of its own (or only one).
  virtual std::vector<std::string> lastTimingChoices() const { return {}; }
  // timeTactic() with the layer held to `choice` (one lastTimingChoices() named): the
  // backend runs that choice without choosing again. kUnsupported with the reason when the
  // layer cannot take it here (the tactic then stays a candidate with its other choices).
  virtual Result<double> timeChoice(const Node& node, const std::string& tactic, DataType precision,
                                    const LayerInputs& inputs, int iterations,
                                    const std::string& choice) {
    (void)node;
    (void)tactic;
    (void)precision;
    (void)inputs;
    (void)iterations;
    return unsupported("this backend takes no choice '" + choice + "' inside a tactic");
  }
  // The kernels the backend generates for the finished build's layers, for the plan
  // to store so that the runtime loads them instead of compiling (CUDA: the NVRTC
  // cubins of PointwiseChain layers for this device, at these shapes and the plan's
  // precision). Called once, after every layer's precision is final, whether or not
  // any layer was timed (a warm timing cache times none). A kernel that cannot be
  // made is no build error: `warnings` says why, and the runtime compiles it at its
  // first run as without a plan. Default: none.
  virtual std::vector<GeneratedKernelBinary> generatedKernels(const std::vector<BuiltLayer>& layers,
                                                              std::vector<std::string>* warnings) {
    (void)layers;
    (void)warnings;
    return {};
  }
};

// The CPU reference backend's tactics (reference kernels, BLAS and Kiln loop
// kernels; float16/bfloat16 run with inputs and outputs rounded to that type).
std::unique_ptr<BuildBackend> cpuBuildBackend();

}  // namespace kiln
