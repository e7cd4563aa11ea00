// The CPU reference backend's kernel interface. A kernel reads the node's
// concrete input tensors, computes output shapes itself, and sets outputs.
// Kernels are plain functions registered in one explicit table per op family
// (see kernel_registry.cpp); none keeps state between calls.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

// Runs `graph` with `inputs` bound positionally to graph.inputs; outputs come back
// positionally in graph.outputs order. Values of enclosing scopes stay visible.
using SubgraphRunner = std::function<Status(const Graph& graph, const std::vector<Tensor>& inputs,
                                            std::vector<Tensor>* outputs)>;

class KernelContext {
 public:
  KernelContext(const Node& node, std::vector<const Tensor*> inputs, SubgraphRunner runner)
      : m_node(node),
        m_inputs(std::move(inputs)),
        m_outputs(node.outputs.size()),
        m_runner(std::move(runner)) {}

  const Node& node() const { return m_node; }
  int opset() const { return m_node.opset; }
  // Number of input slots (omitted optional inputs count as slots).
  size_t inputCount() const { return m_inputs.size(); }
  bool hasInput(size_t i) const { return i < m_inputs.size() && m_inputs[i] != nullptr; }
  // The i-th input; call only when hasInput(i) (the executor guarantees required ones
  // exist only if the kernel checks with requireInputs()).
  const Tensor& input(size_t i) const { return *m_inputs[i]; }
  const Tensor* inputOrNull(size_t i) const { return hasInput(i) ? m_inputs[i] : nullptr; }
  // Error naming the first missing input among [0, count).
  Status requireInputs(size_t count) const;

  size_t outputCount() const { return m_outputs.size(); }
  // True when the node names output i (optional outputs may be omitted).
  bool wantsOutput(size_t i) const {
    return i < m_node.outputs.size() && !m_node.outputs[i].empty();
  }
  // Allocates output i, poisoned (NaN / 0xAB bytes) so unwritten elements show up in tests.
  Tensor& allocateOutput(size_t i, DataType type, const Shape& shape);
  void setOutput(size_t i, Tensor tensor) { m_outputs[i] = std::move(tensor); }
  std::vector<Tensor>& outputs() { return m_outputs; }

  Status runSubgraph(const Graph& graph, const std::vector<Tensor>& inputs,
                     std::vector<Tensor>* outputs) const {
    return m_runner(graph, inputs, outputs);
  }
  // kInvalidArgument / kUnsupported with the node's description prepended.
  Status error(const std::string& message) const;
  Status unsupported(const std::string& message) const;

 private:
  const Node& m_node;
  std::vector<const Tensor*> m_inputs;
  std::vector<Tensor> m_outputs;
  SubgraphRunner m_runner;
};

using KernelFn = Status (*)(KernelContext& context);

struct KernelEntry {
  std::string domain;  // "" = ai.onnx
  std::string opType;
  int sinceVersion = 1;  // opset range of the domain this kernel implements, inclusive
  int untilVersion = 1000;
  KernelFn fn = nullptr;
};

class KernelRegistry {
 public:
  void add(const std::string& opType, int sinceVersion, int untilVersion, KernelFn fn,
           const std::string& domain = "");
  // The kernel for opType at `opset`, or nullptr.
  const KernelEntry* find(const std::string& domain, const std::string& opType, int opset) const;
  const std::vector<KernelEntry>& entries() const { return m_entries; }

 private:
  std::vector<KernelEntry> m_entries;
};

// The registry with every built-in kernel (built once, thread-safe).
const KernelRegistry& builtinKernels();

// One registration function per op family, each in its own file under ops/.
void registerElementwiseBinaryKernels(KernelRegistry& registry);
void registerElementwiseUnaryKernels(KernelRegistry& registry);
void registerCastKernels(KernelRegistry& registry);
void registerReduceKernels(KernelRegistry& registry);
void registerSoftmaxKernels(KernelRegistry& registry);
void registerNormalizationKernels(KernelRegistry& registry);
void registerScanKernels(KernelRegistry& registry);  // CumSum, TopK
void registerConvKernels(KernelRegistry& registry);
void registerPoolKernels(KernelRegistry& registry);
void registerMatMulKernels(KernelRegistry& registry);  // Gemm, MatMul, Einsum, ...
void registerQuantizeKernels(KernelRegistry& registry);
void registerRnnKernels(KernelRegistry& registry);
void registerShapeKernels(KernelRegistry& registry);  // reshape family, concat, slice, pad, ...
void registerGatherScatterKernels(KernelRegistry& registry);
void registerResizeKernels(KernelRegistry& registry);
void registerMiscKernels(KernelRegistry& registry);         // NMS, RoiAlign, GridSample, DFT, ...
void registerControlFlowKernels(KernelRegistry& registry);  // If, Loop, Scan, Constant, Identity
void registerLossKernels(
    KernelRegistry& registry);  // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void registerTensorExtraKernels(
    KernelRegistry& registry);  // ReverseSequence, TensorScatter, BitCast, CumProd
void registerGatedActivationKernels(KernelRegistry& registry);  // Swish, SwiGLU
void registerTextKernels(KernelRegistry& registry);   // StringConcat, StringSplit, RegexFullMatch
void registerTfIdfKernels(KernelRegistry& registry);  // TfIdfVectorizer
void registerAffineGridKernels(KernelRegistry& registry);  // AffineGrid
void registerDeformConvKernels(KernelRegistry& registry);  // DeformConv
void registerMlKernels(
    KernelRegistry& registry);  // ai.onnx.ml Binarizer, ArrayFeatureExtractor, LabelEncoder
void registerTreeEnsembleKernels(KernelRegistry& registry);  // ai.onnx.ml TreeEnsemble
void registerFusedKernels(KernelRegistry& registry);         // ai.kiln nodes the passes create
void registerTransformerKernels(
    KernelRegistry& registry);  // Attention, RMSNormalization, RotaryEmbedding, ...

}  // namespace kiln::cpu
