// Shape inference driver. For each node in topological order: fold it when all
// its inputs are known small constants (running the CPU reference kernel), else
// apply the op's symbolic rule, else fall back to the model's declared value_info.
#include <algorithm>
#include <set>

#include "ir/channels_last.h"
#include "kiln/op_table.h"
#include "kiln/plugin_registry.h"
#include "ops/reference_ops.h"
#include "kiln/shape_inference.h"
#include "kiln/tensor_size.h"
#include "plugin/plugin_hooks.h"
#include "shape/shape_rules.h"

namespace kiln {
namespace {

constexpr int64_t kMaxFoldElements = 1 << 16;
// The most elements a fold may write. Inputs within kMaxFoldElements can still broadcast or
// expand into a tensor the size of the batch times everything else (MViTv2's relative-position
// indices: 7.8 GB held at batch 32, every pass folding them again); fold_constants keeps no
// value over 1 MB anyway, and a value this large is a layer's work, not a shape's.
constexpr int64_t kMaxFoldOutputElements = int64_t{1} << 22;

// a * b, held at kMaxFoldOutputElements + 1 once past it (negative or overflowing products too).
int64_t cappedProduct(int64_t a, int64_t b) {
  constexpr int64_t kOver = kMaxFoldOutputElements + 1;
  if (a < 0 || b < 0) return kOver;
  if (a == 0 || b == 0) return 0;
  return a > kOver / b ? kOver : std::min(kOver, a * b);
}

// The elements output 0 of a fold of `node` would have, where its inputs tell before it runs
// (the broadcasting ops, Expand, Tile, ConstantOfShape), else -1.
int64_t predictedFoldElements(const Node& node, const std::vector<const Tensor*>& in) {
  auto isDefaultDomain = [](const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; };
  auto values = [](const Tensor* t, std::vector<int64_t>* v) {
    if (!t || !isInteger(t->type()) || t->rank() > 1) return false;
    for (int64_t i = 0; i < t->numel(); ++i) v->push_back(t->valueAsInt64(i));
    return true;
  };
  auto numel = [](const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n = cappedProduct(n, d);
    return n;
  };
  // numpy broadcasting of the shapes (a 1 takes the other dim; mismatches: the larger, which the
  // kernel then refuses anyway).
  auto broadcast = [](std::vector<int64_t> a, const std::vector<int64_t>& b) {
    if (a.size() < b.size()) a.insert(a.begin(), b.size() - a.size(), 1);
    const size_t off = a.size() - b.size();
    for (size_t i = 0; i < b.size(); ++i) a[off + i] = std::max(a[off + i], b[i]);
    return a;
  };
  const std::string& op = node.opType;
  const ops::OpRow* row = isDefaultDomain(node) ? ops::findOp(op) : nullptr;
  const bool broadcasting = row && (row->shape == ops::OpShapeForm::kBroadcast ||
                                    row->shape == ops::OpShapeForm::kBroadcastToBool);
  if (broadcasting || (isDefaultDomain(node) && op == "Where")) {
    std::vector<int64_t> shape;
    for (const Tensor* t : in)
      if (t) shape = broadcast(shape, t->shape());
    return numel(shape);
  }
  if (!isDefaultDomain(node) || in.empty()) return -1;
  std::vector<int64_t> v;
  if (op == "Expand" && in.size() > 1 && in[0] && values(in[1], &v))
    return numel(broadcast(in[0]->shape(), v));
  if (op == "Tile" && in.size() > 1 && in[0] && values(in[1], &v))
    return cappedProduct(in[0]->numel(), numel(v));
  if (op == "ConstantOfShape" && in[0] && values(in[0], &v)) return numel(v);
  return -1;
}
constexpr int64_t kMaxSymbolicElements = 64;

const std::set<std::string>& nonFoldableOps() {
  static const std::set<std::string> ops = {"RandomUniform",
                                            "RandomNormal",
                                            "RandomUniformLike",
                                            "RandomNormalLike",
                                            "Bernoulli",
                                            "Multinomial",
                                            "If",
                                            "Loop",
                                            "Scan"};
  return ops;
}

InferredValue infoFromTensor(const Tensor& t) {
  InferredValue v;
  v.type = t.type();
  v.hasShape = true;
  for (int64_t d : t.shape()) v.shape.push_back(d);
  v.isConstant = true;
  return v;
}

std::optional<std::vector<DimExpr>> symbolicFromTensor(const Tensor& t) {
  if (!isInteger(t.type()) || t.rank() > 1 || t.numel() > kMaxSymbolicElements) return std::nullopt;
  std::vector<DimExpr> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.valueAsInt64(i));
  return v;
}

// `v` with a 4-D shape permuted (ONNX Transpose semantics); other ranks unchanged.
InferredValue permuteSymbolic(InferredValue v, const int (&perm)[4]) {
  if (!v.hasShape || v.shape.size() != 4) return v;
  const SymbolicShape in = v.shape;
  for (int d = 0; d < 4; ++d) v.shape[d] = in[perm[d]];
  v.isConstant = false;
  return v;
}

struct State {
  const Network& network;
  ShapeInferenceResult result;
  std::map<std::string, std::vector<DimExpr>> symbolic;

  void setTensor(const std::string& name, const Tensor& t) {
    result.values[name] = infoFromTensor(t);
    result.folded[name] = t;
    if (auto s = symbolicFromTensor(t)) symbolic[name] = *s;
  }

  bool tryFold(const Node& node) {
    if (nonFoldableOps().count(node.opType) || isChannelsLast(node)) return false;
    std::vector<const Tensor*> inputs;
    int64_t total = 0;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = result.folded.find(name);
      if (it == result.folded.end()) return false;
      total += it->second.numel();
      inputs.push_back(&it->second);
    }
    if (total > kMaxFoldElements) return false;
    if (predictedFoldElements(node, inputs) > kMaxFoldOutputElements) return false;
    auto outputs = ops::evaluateOnHost(node, inputs);  // an error also when no kernel
    if (!outputs.isOk()) return false;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].empty() && !(*outputs)[i].defined()) return false;
      if ((*outputs)[i].defined() && (*outputs)[i].numel() > kMaxFoldOutputElements) return false;
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].empty()) setTensor(node.outputs[i], (*outputs)[i]);
    }
    return true;
  }

  // The output type of an op whose output 0 has its data input's type, for a node whose
  // shape could not be derived: its readers still learn the type (the strongly typed
  // export needs every float value's type; a Shape/Slice chain over symbolic dims can
  // leave BERT's embeddings' Expand without a shape).
  static DataType typeFollowingData(const Node& node, const std::vector<shape::RuleInput>& in) {
    if (!node.domain.empty() && node.domain != "ai.onnx") return DataType::kUndefined;
    // The op table's generic forms: output 0 in input 0's type, or bool.
    if (const ops::OpRow* row = ops::findOp(node.opType)) {
      if (row->shape == ops::OpShapeForm::kBroadcastToBool) return DataType::kBool;
      if (row->shape == ops::OpShapeForm::kSameAsInput ||
          row->shape == ops::OpShapeForm::kBroadcast)
        return !in.empty() && in[0].info ? in[0].info->type : DataType::kUndefined;
    }
    // Ops with rules of their own whose output 0 still has input 0's type.
    static const std::set<std::string> kFirstInput = {
        "Expand",         "Reshape",   "Tile",
        "Transpose",      "Slice",     "Gather",
        "GatherElements", "Squeeze",   "Unsqueeze",
        "Flatten",        "Concat",    "Pad",
        "MatMul",         "Gemm",      "LayerNormalization",
        "ReduceMean",     "ReduceSum", "Range"};
    if (node.opType == "Cast") return static_cast<DataType>(node.attrInt("to", 1));  // ONNX's codes
    if (node.opType == "Shape" || node.opType == "Size") return DataType::kInt64;
    if (node.opType == "Not" || node.opType == "IsNaN" || node.opType == "IsInf")
      return DataType::kBool;
    if (node.opType == "ConstantOfShape") {  // the value's type; float32 0 without one
      auto value = node.attributes.find("value");
      return value != node.attributes.end() && value->second.kind == Attribute::Kind::kTensor
                 ? value->second.t.type()
                 : DataType::kFloat32;
    }
    size_t data = 0;
    if (node.opType == "Where")
      data = 1;
    else if (!kFirstInput.count(node.opType))
      return DataType::kUndefined;
    if (data >= in.size() || !in[data].info) return DataType::kUndefined;
    return in[data].info->type;
  }

  void applyRule(const Node& node, const Graph& graph) {
    std::vector<shape::RuleInput> inputs;
    for (const std::string& name : node.inputs) {
      shape::RuleInput r;
      auto it = result.values.find(name);
      if (!name.empty() && it != result.values.end()) r.info = &it->second;
      auto sym = symbolic.find(name);
      if (!name.empty() && sym != symbolic.end()) r.symbolicValue = &sym->second;
      auto folded = result.folded.find(name);
      if (!name.empty() && folded != result.folded.end()) r.constant = &folded->second;
      inputs.push_back(r);
    }
    // A channels-last layer: the channels-first rule between two permutations.
    const bool channelsLast = isChannelsLast(node);
    ChannelsLastRoles roles;
    std::vector<InferredValue> permuted;
    if (channelsLast) {
      roles = channelsLastRoles(node);
      std::vector<size_t> slots = roles.activationInputs;
      if (roles.filterInput >= 0) slots.push_back(static_cast<size_t>(roles.filterInput));
      permuted.reserve(slots.size());
      for (size_t slot : slots) {
        if (slot >= inputs.size() || !inputs[slot].info) continue;
        permuted.push_back(permuteSymbolic(*inputs[slot].info, kToChannelsFirst));
        inputs[slot].info = &permuted.back();
        inputs[slot].constant = nullptr;
      }
    }
    std::vector<shape::RuleOutput> outputs(node.outputs.size());
    shape::ShapeRule rule =
        isPluginNode(node) ? &shape::pluginShapeRule : shape::findShapeRule(node.opType);
    const bool inferred = rule && rule(node, inputs, &outputs);
    if (channelsLast && inferred) {
      for (size_t slot : roles.activationOutputs)
        if (slot < outputs.size())
          outputs[slot].info = permuteSymbolic(outputs[slot].info, kToChannelsLast);
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& name = node.outputs[i];
      if (name.empty()) continue;
      InferredValue value = i < outputs.size() ? outputs[i].info : InferredValue{};
      if (!inferred || !value.hasShape) {
        if (const ValueInfo* declared = graph.findValueInfo(name)) {
          value.type = declared->type;
          value.hasShape = declared->hasShape;
          value.shape = declared->shape;
        }
      }
      if (value.type == DataType::kUndefined) {
        if (const ValueInfo* declared = graph.findValueInfo(name)) value.type = declared->type;
      }
      if (value.type == DataType::kUndefined && i == 0)
        value.type = typeFollowingData(node, inputs);
      result.values[name] = value;
      if (inferred && i < outputs.size() && outputs[i].symbolicValue) {
        symbolic[name] = *outputs[i].symbolicValue;
        materializeIfConstant(name, value);
      }
    }
    if (!inferred) {
      result.unresolved.push_back(node.describe() +
                                  (rule ? ": inputs not known well enough" : ": no shape rule"));
      result.unresolvedNodes.push_back({node.name, node.index, node.opType, node.domain});
    }
  }

  // A symbolic value whose every element is a number becomes a folded tensor.
  void materializeIfConstant(const std::string& name, const InferredValue& value) {
    const auto& sym = symbolic[name];
    std::vector<int64_t> numbers;
    for (const DimExpr& d : sym) {
      if (!d.isConst()) return;
      numbers.push_back(d.constValue());
    }
    if (!value.hasShape || value.shape.size() > 1) return;
    Tensor t = Tensor::int64Vector(numbers);
    if (value.shape.empty() && numbers.size() == 1) t = Tensor::scalarInt64(numbers[0]);
    if (value.type != DataType::kInt64 && value.type != DataType::kUndefined)
      t = castTensor(t, value.type);
    result.folded[name] = t;
    result.values[name].isConstant = true;
  }
};

// Every shape a node's rule or fold produced, held to the size limits before any
// kernel allocates it: Reshape, Expand, Tile, Pad, Resize, Range, ConstantOfShape...
// take their output size from data or attributes a model controls.
Status checkOutputSizes(const Node& node, const ShapeInferenceResult& result) {
  const int64_t maxRank = tensorLimits().maxRank;
  for (const std::string& name : node.outputs) {
    auto it = result.values.find(name);
    if (name.empty() || it == result.values.end() || !it->second.hasShape) continue;
    const InferredValue& value = it->second;
    const std::string what = node.describe() + ": output '" + name + "'";
    if (static_cast<int64_t>(value.shape.size()) > maxRank)
      return invalidArgument(what + ": rank " + std::to_string(value.shape.size()) +
                             " exceeds the limit of " + std::to_string(maxRank))
          .withTensor(name);
    Shape known;
    for (const DimExpr& d : value.shape) known.push_back(d.isConst() ? d.constValue() : 1);
    // Symbolic dims count as 1 here: the known ones must fit already.
    const DataType type = value.type == DataType::kUndefined ? DataType::kUInt8 : value.type;
    if (Status size = checkTensorSize(type, known, what); !size.isOk())
      return size.withTensor(name);
  }
  return Status::ok();
}

}  // namespace

Result<ShapeInferenceResult> inferShapes(const Network& network,
                                         const std::map<std::string, Shape>& inputShapes) {
  const Graph& graph = network.graph;
  State state{network};
  for (const auto& [name, t] : graph.initializers) state.setTensor(name, t);
  for (const auto& [name, shape] : inputShapes) {
    bool found = false;
    for (const ValueInfo& in : graph.inputs) found = found || in.name == name;
    if (!found)
      return invalidArgument("'" + name + "' is not an input of the model").withTensor(name);
  }
  for (const ValueInfo& in : graph.inputs) {
    InferredValue v;
    v.type = in.type;
    v.hasShape = in.hasShape;
    v.shape = in.shape;
    auto bound = inputShapes.find(in.name);
    if (bound != inputShapes.end()) {
      KILN_RETURN_IF_ERROR(
          checkTensorSize(in.type == DataType::kUndefined ? DataType::kUInt8 : in.type,
                          bound->second, "input '" + in.name + "'")
              .withTensor(in.name));
      if (in.hasShape && in.shape.size() != bound->second.size()) {
        return invalidArgument("input '" + in.name + "': shape " + shapeToString(bound->second) +
                               " does not match the declared " + symbolicShapeToString(in.shape))
            .withTensor(in.name);
      }
      v.hasShape = true;
      v.shape.clear();
      for (size_t d = 0; d < bound->second.size(); ++d) {
        if (in.hasShape && in.shape[d].isConst() && in.shape[d].constValue() != bound->second[d]) {
          return invalidArgument("input '" + in.name + "': shape " + shapeToString(bound->second) +
                                 " does not match the declared " + symbolicShapeToString(in.shape))
              .withTensor(in.name);
        }
        v.shape.push_back(bound->second[d]);
      }
    }
    state.result.values[in.name] = v;
  }
  for (const Node& node : graph.nodes) {
    if (!state.tryFold(node)) state.applyRule(node, graph);
    KILN_RETURN_IF_ERROR_NODE(checkOutputSizes(node, state.result), node);
  }
  return std::move(state.result);
}

}  // namespace kiln
