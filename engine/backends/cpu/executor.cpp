#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "backends/cpu/invoke_kernel.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/tactics/cpu_tactics.h"
#include "ir/channels_last.h"
#include "kiln/reference_backend.h"
#include "plugin/plugin_cpu_hooks.h"

namespace kiln {
namespace {

// Values visible while running one graph: its own, then the enclosing scopes'.
struct Scope {
  std::unordered_map<std::string, Tensor> values;
  const Scope* parent = nullptr;

  const Tensor* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->values.find(name);
      if (it != s->values.end()) return &it->second;
    }
    return nullptr;
  }
};

// Per-graph precomputation: each node's kernel and which values die after it.
struct GraphPlan {
  std::vector<cpu::KernelFn> kernels;
  std::vector<LayerImplementation> implementations;  // empty: reference, own types
  std::vector<std::vector<std::string>> releaseAfter;
};

int opsetFor(const Network& network, const Node& node) {
  if (node.opset > 0) return node.opset;
  auto it = network.opsets.find(node.domain);
  return it == network.opsets.end() ? network.defaultOpset() : it->second;
}

// A Constant's outputs depend only on its attributes and the layer's precision, and a
// Shape's only on its input's dimensions (never on its values), so the executor
// computes them once and every later run with the same dimensions shares the storage.
bool isRunInvariant(const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return false;
  return (node.opType == "Constant" && node.inputs.empty()) ||
         (node.opType == "Shape" && node.inputCount() == 1);
}

// One run-invariant node's outputs, with the precision they were computed at and the
// input dimensions they came from (a later run with another plan or other dimensions
// recomputes them).
struct CachedOutputs {
  DataType precision = DataType::kFloat32;
  DataType outputType = DataType::kFloat32;
  Shape inputShape;
  std::vector<Tensor> outputs;
};

// Appends a status per node of `graph` (subgraphs included) without a CPU kernel;
// `holder` is the main-graph node whose subgraph this is (null for the main graph).
void collectUnsupported(const Graph& graph, const Network& network, const Node* holder,
                        std::vector<Status>* out) {
  for (const Node& node : graph.nodes) {
    int opset = opsetFor(network, node);
    if (!cpu::findNodeKernel(node, opset)) {
      out->push_back(
          Status(StatusCode::kUnsupported, node.describe() + " domain '" +
                                               (node.domain.empty() ? "ai.onnx" : node.domain) +
                                               "' opset " + std::to_string(opset))
              .withNodeOf(holder ? *holder : node));
    }
    for (const auto& [key, attr] : node.attributes) {
      if (attr.g) collectUnsupported(*attr.g, network, holder ? holder : &node, out);
      for (const auto& sub : attr.graphs)
        collectUnsupported(*sub, network, holder ? holder : &node, out);
    }
  }
}

}  // namespace

std::vector<OperatorRange> referenceOperators() {
  std::vector<OperatorRange> out;
  for (const cpu::KernelEntry& e : cpu::builtinKernels().entries()) {
    out.push_back({e.domain, e.opType, e.sinceVersion, e.untilVersion});
  }
  return out;
}

std::vector<Status> findUnsupportedNodeStatuses(const Network& network) {
  std::vector<Status> out;
  collectUnsupported(network.graph, network, nullptr, &out);
  return out;
}

std::vector<std::string> findUnsupportedNodes(const Network& network) {
  std::vector<std::string> out;
  for (const Status& status : findUnsupportedNodeStatuses(network)) out.push_back(status.message());
  return out;
}

struct ReferenceBackend::Impl {
  const Network& network;
  std::unordered_map<const Graph*, GraphPlan> plans;
  std::unordered_map<const Node*, CachedOutputs> invariantOutputs;
  const ReferenceRunOptions* options = nullptr;

  explicit Impl(const Network& n) : network(n) {}

  Status planFor(const Graph& graph, const std::unordered_set<std::string>& keep,
                 const GraphPlan** out, bool topLevel = false) {
    auto it = plans.find(&graph);
    if (it != plans.end()) {
      *out = &it->second;
      return Status::ok();
    }
    GraphPlan plan;
    std::unordered_map<std::string, size_t> lastUse;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node& node = graph.nodes[i];
      const cpu::KernelEntry* entry = cpu::findNodeKernel(node, opsetFor(network, node));
      if (!entry) {
        return nodeStatus(StatusCode::kUnsupported, node,
                          "no CPU kernel for opset " + std::to_string(opsetFor(network, node)));
      }
      plan.kernels.push_back(entry->fn);
      if (topLevel && !options->layerImplementations.empty()) {
        KILN_RETURN_IF_ERROR_NODE(choosePlannedKernel(node, i, &plan), node);
      }
      for (const std::string& in : node.inputs)
        if (!in.empty()) lastUse[in] = i;
      for (const std::string& in : node.implicitInputs()) lastUse[in] = i;
      for (const std::string& o : node.outputs)
        if (!o.empty() && !lastUse.count(o)) lastUse[o] = i;
    }
    plan.releaseAfter.resize(graph.nodes.size());
    std::unordered_set<std::string> outputs(keep);
    for (const ValueInfo& v : graph.outputs) outputs.insert(v.name);
    for (const auto& [name, index] : lastUse) {
      if (!outputs.count(name) && !graph.initializers.count(name))
        plan.releaseAfter[index].push_back(name);
    }
    *out = &plans.emplace(&graph, std::move(plan)).first->second;
    return Status::ok();
  }

  // Replaces the reference kernel of top-level node `index` with the plan's tactic.
  Status choosePlannedKernel(const Node& node, size_t index, GraphPlan* plan) {
    const auto& implementations = options->layerImplementations;
    if (implementations.size() != network.graph.nodes.size()) {
      return invalidArgument("the plan has " + std::to_string(implementations.size()) +
                             " layer implementations for " +
                             std::to_string(network.graph.nodes.size()) + " nodes");
    }
    const LayerImplementation& chosen = implementations[index];
    cpu::KernelFn fn = cpu::findCpuTactic(node, opsetFor(network, node), chosen.tactic);
    if (!fn) {
      return unsupported(node.describe() + ": tactic '" + chosen.tactic +
                         "' is not available for this node in this build");
    }
    plan->kernels.back() = fn;
    plan->implementations.push_back(chosen);
    return Status::ok();
  }

  Status runNode(const Node& node, cpu::KernelFn kernel, Scope& scope,
                 const LayerImplementation* implementation = nullptr) {
    std::vector<const Tensor*> inputs;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      const Tensor* t = scope.find(name);
      if (!t)
        return invalidArgument(node.describe() + ": input '" + name + "' has no value")
            .withTensor(name);
      inputs.push_back(t);
    }
    // Channels-last layers run the channels-first kernel between two permutations.
    const bool channelsLast = isChannelsLast(node);
    std::vector<Tensor> permuted;
    ChannelsLastRoles roles;
    if (channelsLast) {
      roles = channelsLastRoles(node);
      std::vector<size_t> slots = roles.activationInputs;
      if (roles.filterInput >= 0) slots.push_back(static_cast<size_t>(roles.filterInput));
      permuted.reserve(slots.size());
      for (size_t slot : slots) {
        if (slot >= inputs.size() || !inputs[slot]) continue;
        if (inputs[slot]->rank() != 4)
          return invalidArgument(node.describe() + ": channels-last input '" + node.inputs[slot] +
                                 "' must be 4-D");
        permuted.push_back(permute4d(*inputs[slot], kToChannelsFirst));
        inputs[slot] = &permuted.back();
      }
    }
    cpu::SubgraphRunner runner = [this, &scope](const Graph& g, const std::vector<Tensor>& in,
                                                std::vector<Tensor>* out) {
      return runGraph(g, scope, in, out);
    };
    std::vector<Tensor> results;
    CachedOutputs* cached =
        isRunInvariant(node) ? cachedFor(node, implementation, inputs) : nullptr;
    if (cached && !cached->outputs.empty()) {
      results = cached->outputs;
    } else if (implementation) {
      KILN_RETURN_IF_ERROR(cpu::runKernelAtPrecision(node, kernel, inputs, runner,
                                                     implementation->precision,
                                                     implementation->outputType, &results));
    } else {
      cpu::KernelContext context(node, std::move(inputs), runner);
      KILN_RETURN_IF_ERROR(cpu::invokeKernel(kernel, context));
      results = std::move(context.outputs());
    }
    if (cached) cached->outputs = results;
    if (channelsLast) {
      for (size_t slot : roles.activationOutputs)
        if (slot < results.size() && results[slot].rank() == 4)
          results[slot] = permute4d(results[slot], kToChannelsLast);
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      if (i >= results.size() || !results[i].defined()) {
        return internalError(node.describe() + ": kernel did not produce output '" +
                             node.outputs[i] + "'")
            .withTensor(node.outputs[i]);
      }
      scope.values[node.outputs[i]] = std::move(results[i]);
    }
    return Status::ok();
  }

  // The cache slot of a run-invariant node, emptied when the layer's precision or its
  // input's dimensions changed.
  CachedOutputs* cachedFor(const Node& node, const LayerImplementation* implementation,
                           const std::vector<const Tensor*>& inputs) {
    CachedOutputs& slot = invariantOutputs[&node];
    const DataType precision = implementation ? implementation->precision : DataType::kFloat32;
    const DataType outputType = implementation ? implementation->outputType : DataType::kFloat32;
    const Shape inputShape = !inputs.empty() && inputs[0] ? inputs[0]->shape() : Shape{};
    if (slot.precision != precision || slot.outputType != outputType ||
        slot.inputShape != inputShape) {
      slot = {precision, outputType, inputShape, {}};
    }
    return &slot;
  }

  // Runs a subgraph (If/Loop/Scan body) with positional inputs.
  Status runGraph(const Graph& graph, const Scope& parent, const std::vector<Tensor>& inputs,
                  std::vector<Tensor>* outputs) {
    if (inputs.size() != graph.inputs.size()) {
      return invalidArgument("subgraph '" + graph.name + "' expects " +
                             std::to_string(graph.inputs.size()) + " inputs, got " +
                             std::to_string(inputs.size()));
    }
    Scope scope;
    scope.parent = &parent;
    for (const auto& [name, t] : graph.initializers) scope.values[name] = t;
    for (size_t i = 0; i < inputs.size(); ++i) scope.values[graph.inputs[i].name] = inputs[i];
    if (Status s = execute(graph, scope, {}, false); !s.isOk()) {
      // Reported about the control-flow node that runs this body (its caller attaches
      // it): node fields name a node of the main graph, the one the studio shows and
      // the index counts in; the message still names the inner node.
      return Status(s.code(), s.message()).withTensor(s.tensor());
    }
    outputs->clear();
    for (const ValueInfo& v : graph.outputs) {
      const Tensor* t = scope.find(v.name);
      if (!t)
        return invalidArgument("subgraph '" + graph.name + "' output '" + v.name +
                               "' has no value");
      outputs->push_back(*t);
    }
    return Status::ok();
  }

  Status execute(const Graph& graph, Scope& scope, const std::unordered_set<std::string>& keep,
                 bool topLevel) {
    const GraphPlan* plan = nullptr;
    KILN_RETURN_IF_ERROR(planFor(graph, keep, &plan, topLevel));
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (topLevel && options->cancel && options->cancel->load()) {
        return Status(StatusCode::kCancelled, "run cancelled");
      }
      auto start = std::chrono::steady_clock::now();
      const LayerImplementation* implementation =
          plan->implementations.empty() ? nullptr : &plan->implementations[i];
      KILN_RETURN_IF_ERROR_NODE(runNode(graph.nodes[i], plan->kernels[i], scope, implementation),
                                graph.nodes[i]);
      if (topLevel && options->onNodeTimed) {
        std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
        options->onNodeTimed(graph.nodes[i], ms.count());
      }
      for (const std::string& name : plan->releaseAfter[i]) scope.values.erase(name);
    }
    return Status::ok();
  }
};

Status runReferenceNode(const Node& node, const std::map<std::string, Tensor>& values,
                        std::vector<Tensor>* outputs) {
  Network network;  // only consulted for opsets, which the node carries
  if (node.opset > 0) network.opsets[node.domain] = node.opset;
  ReferenceBackend::Impl impl(network);
  ReferenceRunOptions options;
  impl.options = &options;
  const cpu::KernelEntry* entry = cpu::findNodeKernel(node, opsetFor(network, node));
  if (!entry) {
    return nodeStatus(StatusCode::kUnsupported, node,
                      "no CPU kernel for opset " + std::to_string(opsetFor(network, node)));
  }
  Scope scope;
  for (const auto& [name, t] : values) scope.values[name] = t;
  KILN_RETURN_IF_ERROR_NODE(impl.runNode(node, entry->fn, scope), node);
  outputs->clear();
  for (const std::string& name : node.outputs) {
    outputs->push_back(name.empty() ? Tensor() : scope.values[name]);
  }
  return Status::ok();
}

ReferenceBackend::ReferenceBackend(const Network& network)
    : m_impl(std::make_unique<Impl>(network)) {}
ReferenceBackend::~ReferenceBackend() = default;

Status ReferenceBackend::validateInputs(const std::map<std::string, Tensor>& inputs) const {
  const Graph& graph = m_impl->network.graph;
  std::map<std::string, int64_t> symbols;
  for (const ValueInfo& info : graph.inputs) {
    auto it = inputs.find(info.name);
    if (it == inputs.end()) {
      if (graph.initializers.count(info.name)) continue;
      return invalidArgument("input '" + info.name + "' is required but was not given");
    }
    const Tensor& t = it->second;
    if (info.type != DataType::kUndefined && t.type() != info.type) {
      return invalidArgument("input '" + info.name + "': expected " + dataTypeName(info.type) +
                             ", got " + dataTypeName(t.type()));
    }
    if (!info.hasShape) continue;
    const std::string expected = symbolicShapeToString(info.shape);
    if (static_cast<size_t>(t.rank()) != info.shape.size()) {
      return invalidArgument("input '" + info.name + "': expected shape " + expected + " (rank " +
                             std::to_string(info.shape.size()) + "), got " +
                             shapeToString(t.shape()));
    }
    for (int d = 0; d < t.rank(); ++d) {
      const DimExpr& dim = info.shape[d];
      if (dim.isConst() && dim.constValue() != t.dim(d)) {
        return invalidArgument("input '" + info.name + "': expected shape " + expected + ", got " +
                               shapeToString(t.shape()) + " (dim " + std::to_string(d) + ")");
      }
      if (dim.isSymbol() && dim.symbolName().rfind("unk__", 0) != 0) {
        auto [pos, inserted] = symbols.emplace(dim.symbolName(), t.dim(d));
        if (!inserted && pos->second != t.dim(d)) {
          return invalidArgument("input '" + info.name + "': dim '" + dim.symbolName() + "' is " +
                                 std::to_string(t.dim(d)) + " here but " +
                                 std::to_string(pos->second) + " in another input");
        }
      }
    }
  }
  for (const auto& [name, t] : inputs) {
    bool known = graph.initializers.count(name) > 0;
    for (const ValueInfo& info : graph.inputs) known = known || info.name == name;
    if (!known) return invalidArgument("'" + name + "' is not an input of the model");
  }
  return Status::ok();
}

Status ReferenceBackend::run(const std::map<std::string, Tensor>& inputs,
                             std::vector<NamedTensor>* outputs,
                             const ReferenceRunOptions& options) {
  KILN_RETURN_IF_ERROR(validateInputs(inputs));
  const Graph& graph = m_impl->network.graph;
  m_impl->options = &options;
  Scope scope;
  for (const auto& [name, t] : graph.initializers) scope.values[name] = t;
  for (const auto& [name, t] : inputs) scope.values[name] = t;
  std::unordered_set<std::string> keep(options.extraOutputs.begin(), options.extraOutputs.end());
  // Release points depend on what is kept, and kernels on the plan's choices.
  const bool replan = !keep.empty() || !options.layerImplementations.empty();
  if (replan) m_impl->plans.erase(&graph);
  Status status = m_impl->execute(graph, scope, keep, true);
  if (replan) m_impl->plans.erase(&graph);
  KILN_RETURN_IF_ERROR(status);
  outputs->clear();
  for (const ValueInfo& v : graph.outputs) {
    const Tensor* t = scope.find(v.name);
    if (!t) return invalidArgument("output '" + v.name + "' was not produced");
    outputs->push_back({v.name, *t});
  }
  for (const std::string& name : options.extraOutputs) {
    const Tensor* t = scope.find(name);
    if (!t) return notFound("value '" + name + "' does not exist in the graph");
    outputs->push_back({name, *t});
  }
  return Status::ok();
}

}  // namespace kiln
