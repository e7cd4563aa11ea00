// exportStronglyTypedOnnx: the original ModelProto rewritten in two passes. The first
// decides a type per node (in the sorted order of Kiln's import, so that "follow"
// nodes see their producers' types) and then a stored type per source value
// (initializer, graph input, float Constant): reduced when every reader wants the
// same reduced type, else float32. The second emits the nodes in that order with a
// Cast before each read whose type differs from the value's (one Cast per value and
// type, shared by every reader). Types come from Kiln's shape inference; only
// float32 values are ever retyped.
#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "kiln/file_io.h"
#include "kiln/onnx_import.h"
#include "kiln/shape_inference.h"
#include "kiln/typed_onnx_export.h"
#include "onnx/tensor_proto.h"
#include "onnx/typed_op_rules.h"

namespace kiln {
namespace {

using typed_export::OpTyping;
using NodeList = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

constexpr float kHalfMax = 65504.0f;

bool isReduced(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16;
}

std::string suffixOf(DataType t) {
  return precisionSpelling(t);
}

// A float32 tensor in `type` (fp16 clamps to +-65504 rather than becoming infinite).
Tensor toReduced(const Tensor& tensor, DataType type, int64_t* clamped) {
  Tensor out(type, tensor.shape());
  const float* src = tensor.data<float>();
  uint16_t* dst = out.data<uint16_t>();
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    float v = src[i];
    if (type == DataType::kFloat16 && std::isfinite(v) && std::fabs(v) > kHalfMax) {
      v = std::copysign(kHalfMax, v);
      ++*clamped;
    }
    dst[i] = type == DataType::kFloat16 ? floatToHalf(v) : floatToBFloat16(v);
  }
  return out;
}

// Replaces `proto`'s contents with `tensor` (raw data inline), keeping its doc string
// (`name` is a copy: callers pass proto->name(), which Clear() empties).
void replaceTensor(const Tensor& tensor, std::string name, onnx::TensorProto* proto) {
  const std::string doc = proto->doc_string();
  proto->Clear();
  onnx_import::tensorToProto(tensor, name, proto);
  if (!doc.empty()) proto->set_doc_string(doc);
}

void collectNames(const onnx::GraphProto& graph, std::set<std::string>* names) {
  for (const auto& v : graph.input()) names->insert(v.name());
  for (const auto& t : graph.initializer()) names->insert(t.name());
  for (const auto& n : graph.node()) {
    names->insert(n.name());
    for (const auto& o : n.output()) names->insert(o);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collectNames(a.g(), names);
      for (const auto& g : a.graphs()) collectNames(g, names);
    }
  }
}

bool parseModelProto(const std::string& bytes, onnx::ModelProto* model) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  input.SetRecursionLimit(1000);  // as the importer: deep If/Loop nesting parses
  return model->ParseFromCodedStream(&input) && input.ConsumedEntireMessage();
}

// One value of the main graph as the export holds it.
struct Value {
  DataType original = DataType::kUndefined;
  DataType stored = DataType::kUndefined;   // the type its readers find it in
  DataType written = DataType::kUndefined;  // the type its node computes it in (a Cast
                                            // to `stored` follows when they differ)
  std::map<DataType, std::string> names;    // the name holding it in each available type
};

// What a reader wants of a value: a type, or anything (kUndefined).
constexpr DataType kAnyType = DataType::kUndefined;

class Rewriter {
 public:
  Rewriter(onnx::ModelProto& model, const Network& network, const ShapeInferenceResult& types,
           const NodePrecisions& precisions, const TypedExportOptions& options,
           TypedExportResult* result)
      : m_model(model),
        m_network(network),
        m_precisions(precisions),
        m_options(options),
        m_result(result) {
    for (const auto& [name, value] : types.values) m_values[name].original = value.type;
    collectNames(model.graph(), &m_taken);
    for (const ValueInfo& out : network.graph.outputs) m_graphOutputs.insert(out.name);
    for (const ValueInfo& in : network.graph.inputs) m_graphInputs.insert(in.name);
    for (const Node& node : network.graph.nodes)
      for (const std::string& name : node.implicitInputs()) m_implicitReads.insert(name);
  }

  Status run() {
    decideNodes();
    retypePlumbing();
    decideSources();
    KILN_RETURN_IF_ERROR(emit());
    retypeInterface();
    return Status::ok();
  }

 private:
  bool isFloat32(const std::string& name) const {
    auto it = m_values.find(name);
    return !name.empty() && it != m_values.end() && it->second.original == DataType::kFloat32;
  }

  static bool isFloatConstant(const Node& node) {
    const Tensor* value = node.attrTensor("value");
    return node.opType == "Constant" && (node.domain.empty() || node.domain == "ai.onnx") &&
           value && value->type() == DataType::kFloat32 && node.outputs.size() == 1;
  }

  // False (with why) when a node's values are not all float32 or of a known type.
  bool valuesAllowReduction(const Node& node, std::string* why) const {
    bool anyFloat = false;
    for (const auto* list : {&node.inputs, &node.outputs}) {
      for (const std::string& name : *list) {
        if (name.empty()) continue;
        auto it = m_values.find(name);
        const DataType t = it == m_values.end() ? DataType::kUndefined : it->second.original;
        if (t == DataType::kUndefined) {
          *why = "the type of '" + name + "' is unknown";
          return false;
        }
        if (isFloatingPoint(t) && t != DataType::kFloat32) {
          *why = "'" + name + "' is " + dataTypeName(t) + ", not float32";
          return false;
        }
        anyFloat = anyFloat || t == DataType::kFloat32;
      }
    }
    if (!anyFloat) *why = "no float values";
    return anyFloat;
  }

  // The type a node without a decision follows: its first float input a node writes,
  // preferring one computed from the graph's inputs over weight plumbing (a value made
  // from initializers and constants alone, such as the TorchScript exporter's Identity
  // copies of identical initializers, which a build folds and a plan never types): a
  // bias Add(Identity(b), MatMul(x, W)) follows the MatMul, not the copy of b.
  DataType followed(const Node& node) const {
    DataType plumbing = DataType::kUndefined;
    for (const std::string& in : node.inputs) {
      if (!isFloat32(in)) continue;
      auto it = m_values.find(in);
      if (it->second.stored == DataType::kUndefined) continue;
      if (!m_constantValues.count(in)) return it->second.stored;
      if (plumbing == DataType::kUndefined) plumbing = it->second.stored;
    }
    return plumbing == DataType::kUndefined ? DataType::kFloat32 : plumbing;
  }

  // Records `node`'s outputs as constant when every input is an initializer (not a graph
  // input) or a constant value already; a node without inputs (Constant) counts too.
  void noteConstantOutputs(const Node& node) {
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      const bool initializer = m_network.graph.initializers.count(in) && !m_graphInputs.count(in);
      if (!initializer && !m_constantValues.count(in)) return;
    }
    for (const std::string& out : node.outputs)
      if (!out.empty()) m_constantValues.insert(out);
  }

  void decideNode(const Node& node) {
    noteConstantOutputs(node);
    const std::string name = node.displayName();
    const int key = node.index;
    std::string why;
    OpTyping typing = typed_export::opTyping(node, &why);
    auto decided = m_precisions.byNode.find(name);
    DataType type = decided != m_precisions.byNode.end() ? decided->second : followed(node);
    bool hasFloat = false;
    for (const auto* list : {&node.inputs, &node.outputs})
      for (const std::string& v : *list) hasFloat = hasFloat || isFloat32(v);
    if (isFloatConstant(node)) {
      m_nodeType[key] = kAnyType;  // stored as its readers want (decideSources)
      return;
    }
    if (isReduced(type) && typing == OpTyping::kFollowsData && !valuesAllowReduction(node, &why))
      typing = OpTyping::kKeepsOwnTypes;
    const int bf16Opset = typed_export::bfloat16SinceOpset(node.opType);
    if (type == DataType::kBFloat16 && typing == OpTyping::kFollowsData &&
        m_network.defaultOpset() < bf16Opset) {
      why = "its schema takes bfloat16 from opset " + std::to_string(bf16Opset) +
            "; the model has " + std::to_string(m_network.defaultOpset());
      typing = OpTyping::kKeepsOwnTypes;
    }
    if (typing != OpTyping::kFollowsData) {
      if (isReduced(type) && hasFloat && typing == OpTyping::kKeepsOwnTypes &&
          decided != m_precisions.byNode.end())
        m_result->keptFloat32.push_back(node.describe() + ": " + why);
      type = typing == OpTyping::kReadsAnyType ? kAnyType : DataType::kFloat32;
    }
    m_nodeType[key] = type;
    m_typing[key] = typing;
    if (hasFloat && isReduced(type)) ++m_result->reducedNodes;
    if (hasFloat && type == DataType::kFloat32) {
      ++m_result->float32Nodes;
      m_result->float32NodeNames.push_back(name);
    }
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      if (!isFloat32(node.outputs[j])) continue;
      const bool reduced = isReduced(type) && !typed_export::outputKeepsType(node, j);
      Value& value = m_values[node.outputs[j]];
      value.stored = reduced ? type : DataType::kFloat32;
      value.written = value.stored;
      // An output type of its own (--layer-output-types): stored so after a Cast.
      auto storedAs = m_precisions.storedTypes.find(node.outputs[j]);
      if (storedAs != m_precisions.storedTypes.end() && m_typing[key] != OpTyping::kReadsAnyType &&
          (storedAs->second == DataType::kFloat32 || isReduced(storedAs->second)))
        value.stored = storedAs->second;
    }
  }

  void decideNodes() {
    for (const Node& node : m_network.graph.nodes) decideNode(node);
  }

  // Weight plumbing without a decision (a node computing a float32 value from constants
  // alone: an Identity copy of an initializer) takes the reduced type every reader wants
  // of its output, so the weight is stored reduced and no Cast follows it. From the
  // graph's end, so a chain of such nodes settles from its readers back.
  void retypePlumbing() {
    std::map<std::string, std::vector<std::pair<const Node*, size_t>>> readers;
    for (const Node& n : m_network.graph.nodes)
      for (size_t slot = 0; slot < n.inputs.size(); ++slot)
        if (!n.inputs[slot].empty()) readers[n.inputs[slot]].push_back({&n, slot});
    const auto& nodes = m_network.graph.nodes;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Node& node = *it;
      const int key = node.index;
      if (node.outputs.size() != 1 || m_precisions.byNode.count(node.displayName()) ||
          m_typing[key] != OpTyping::kFollowsData || m_nodeType[key] != DataType::kFloat32)
        continue;
      const std::string& out = node.outputs[0];
      if (!isFloat32(out) || !m_constantValues.count(out) || m_graphOutputs.count(out) ||
          m_implicitReads.count(out) || typed_export::outputKeepsType(node, 0))
        continue;
      std::set<DataType> wants;
      for (const auto& [reader, slot] : readers[out]) wants.insert(wanted(*reader, slot));
      wants.erase(kAnyType);
      std::string why;
      if (wants.size() != 1 || !isReduced(*wants.begin()) || !valuesAllowReduction(node, &why))
        continue;
      const DataType type = *wants.begin();
      m_nodeType[key] = type;
      m_values[out].stored = m_values[out].written = type;
      ++m_result->reducedNodes;
      --m_result->float32Nodes;
      auto& names = m_result->float32NodeNames;
      names.erase(std::remove(names.begin(), names.end(), node.displayName()), names.end());
    }
  }

  // The type `node` wants of its input `slot` (kAnyType: whatever it is stored in).
  DataType wanted(const Node& node, size_t slot) const {
    const OpTyping typing = m_typing.at(node.index);
    if (typing == OpTyping::kReadsAnyType) return kAnyType;
    const DataType type = m_nodeType.at(node.index);
    if (typing == OpTyping::kFollowsData && isReduced(type) &&
        !typed_export::inputKeepsFloat32(node, slot))
      return type;
    return DataType::kFloat32;
  }

  // Sources (graph inputs, initializers, float Constants) are stored reduced when every
  // reader wants the same reduced type.
  void decideSources() {
    std::map<std::string, std::set<DataType>> wants;
    for (const Node& node : m_network.graph.nodes) {
      if (isFloatConstant(node)) continue;
      for (size_t s = 0; s < node.inputs.size(); ++s)
        if (isFloat32(node.inputs[s])) wants[node.inputs[s]].insert(wanted(node, s));
      for (const std::string& name : node.implicitInputs()) wants[name].insert(DataType::kFloat32);
    }
    for (const std::string& out : m_graphOutputs)
      wants[out].insert(m_options.keepIoTypes ? DataType::kFloat32 : kAnyType);
    auto decide = [&](const std::string& name, bool mayReduce) {
      if (!isFloat32(name)) return;
      std::set<DataType> types = wants[name];
      types.erase(kAnyType);
      Value& value = m_values[name];
      value.stored = mayReduce && types.size() == 1 && isReduced(*types.begin())
                         ? *types.begin()
                         : DataType::kFloat32;
      value.names[value.stored] = name;
    };
    std::set<std::string> inputs;
    for (const ValueInfo& in : m_network.graph.inputs) inputs.insert(in.name);
    for (const auto& [name, tensor] : m_network.graph.initializers)
      decide(name, !inputs.count(name));  // an IR<4 initializer-input may be fed: float32
    for (const std::string& name : inputs)
      if (!m_network.graph.initializers.count(name)) decide(name, !m_options.keepIoTypes);
    for (const Node& node : m_network.graph.nodes)
      if (isFloatConstant(node)) decide(node.outputs[0], true);
  }

  std::string uniqueName(const std::string& base) {
    std::string name = base;
    for (int i = 1; m_taken.count(name); ++i) name = base + "_" + std::to_string(i);
    m_taken.insert(name);
    return name;
  }

  void addCast(NodeList* out, const std::string& from, const std::string& to, DataType type,
               const std::string& value) {
    onnx::NodeProto* cast = out->Add();
    cast->set_op_type("Cast");
    cast->set_name(uniqueName(value + "_cast_to_" + suffixOf(type)));
    cast->add_input(from);
    cast->add_output(to);
    onnx::AttributeProto* attr = cast->add_attribute();
    attr->set_name("to");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(static_cast<int64_t>(type));
    ++m_result->castsInserted;
  }

  // The name holding `value` in `type`, adding the Cast that makes it when needed.
  std::string resolve(const std::string& value, DataType type, NodeList* out) {
    Value& v = m_values[value];
    if (type == kAnyType) type = v.stored;
    auto it = v.names.find(type);
    if (it != v.names.end()) return it->second;
    const std::string name = uniqueName(value + "_" + suffixOf(type));
    addCast(out, v.names.at(v.stored), name, type, value);
    v.names[type] = name;
    return name;
  }

  // A reduced output that must keep float32 under its own name (a graph output under
  // keep-io-types, or a value a subgraph reads): the node writes a renamed value and a
  // Cast after it writes the original name.
  // An output stored in another type than its node writes (an output type of its own):
  // the node writes a renamed value and a Cast stores it, under the original name unless
  // that name must hold float32 (then the pinned Cast below writes it).
  void emitOutputs(const Node& node, onnx::NodeProto* proto, NodeList* out) {
    struct CastAfter {
      std::string value, from, to;  // the original value, and the Cast's input and output
      DataType type;
    };
    std::vector<CastAfter> castsAfter;
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      const std::string& name = node.outputs[j];
      if (!isFloat32(name)) continue;
      Value& v = m_values[name];
      const bool pinned =
          m_implicitReads.count(name) || (m_options.keepIoTypes && m_graphOutputs.count(name));
      const bool recast = v.written != DataType::kUndefined && v.written != v.stored;
      if (!recast && (v.stored == DataType::kFloat32 || !pinned)) {
        v.names[v.stored] = name;
        continue;
      }
      std::string held = name;  // what the node writes, then each Cast after it
      if (recast) {
        held = uniqueName(name + "_" + suffixOf(v.written));
        proto->set_output(static_cast<int>(j), held);
        const std::string storedName = v.stored == DataType::kFloat32 || !pinned
                                           ? name
                                           : uniqueName(name + "_" + suffixOf(v.stored));
        castsAfter.push_back({name, held, storedName, v.stored});
        held = storedName;
      } else {
        held = uniqueName(name + "_" + suffixOf(v.stored));
        proto->set_output(static_cast<int>(j), held);
      }
      v.names[v.stored] = held;
      if (held != name) castsAfter.push_back({name, held, name, DataType::kFloat32});
    }
    *out->Add() = *proto;
    for (const CastAfter& cast : castsAfter) {
      addCast(out, cast.from, cast.to, cast.type, cast.value);
      m_values[cast.value].names[cast.type] = cast.to;
    }
  }

  Status emit() {
    const onnx::GraphProto& graph = m_model.graph();
    NodeList out;
    for (const Node& node : m_network.graph.nodes) {
      if (node.index < 0 || node.index >= graph.node_size())
        return internalError(node.describe() + ": not in the model's node list");
      onnx::NodeProto proto = graph.node(node.index);
      if (proto.name().empty()) proto.set_name(node.displayName());
      if (isFloatConstant(node)) {
        KILN_RETURN_IF_ERROR(emitConstant(node, &proto));
      } else {
        for (size_t s = 0; s < node.inputs.size(); ++s)
          if (isFloat32(node.inputs[s]))
            proto.set_input(static_cast<int>(s), resolve(node.inputs[s], wanted(node, s), &out));
      }
      emitOutputs(node, &proto, &out);
    }
    // Graph outputs that are sources (inputs, initializers) read in float32 when kept.
    for (const std::string& name : m_graphOutputs)
      if (isFloat32(name) && m_options.keepIoTypes) resolve(name, DataType::kFloat32, &out);
    m_model.mutable_graph()->mutable_node()->Swap(&out);
    convertInitializers();
    return Status::ok();
  }

  Status emitConstant(const Node& node, onnx::NodeProto* proto) {
    const Value& v = m_values[node.outputs[0]];
    if (!isReduced(v.stored)) return Status::ok();
    for (auto& attr : *proto->mutable_attribute()) {
      if (attr.name() != "value") continue;
      const Tensor reduced =
          toReduced(*node.attrTensor("value"), v.stored, &m_result->clampedWeights);
      replaceTensor(reduced, attr.t().name(), attr.mutable_t());
    }
    return Status::ok();
  }

  // Reduced initializers are rewritten; externally stored ones are written inline.
  void convertInitializers() {
    for (auto& proto : *m_model.mutable_graph()->mutable_initializer()) {
      auto it = m_network.graph.initializers.find(proto.name());
      if (it == m_network.graph.initializers.end()) continue;
      const Value& v = m_values[proto.name()];
      if (isReduced(v.stored)) {
        replaceTensor(toReduced(it->second, v.stored, &m_result->clampedWeights), proto.name(),
                      &proto);
        ++m_result->initializersConverted;
      } else if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
        replaceTensor(it->second, proto.name(), &proto);
      }
    }
  }

  // The type held under `name` in the export (its original when never retyped).
  DataType typeUnder(const std::string& name) const {
    auto it = m_values.find(name);
    if (it == m_values.end()) return DataType::kUndefined;
    for (const auto& [type, held] : it->second.names)
      if (held == name) return type;
    return it->second.original;
  }

  void setElemType(onnx::ValueInfoProto* info) {
    const DataType t = typeUnder(info->name());
    if (isFloat32(info->name()) && t != DataType::kUndefined && info->has_type() &&
        info->type().has_tensor_type())
      info->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int>(t));
  }

  void retypeInterface() {
    onnx::GraphProto* graph = m_model.mutable_graph();
    for (auto& in : *graph->mutable_input()) setElemType(&in);
    for (auto& out : *graph->mutable_output()) setElemType(&out);
    for (auto& info : *graph->mutable_value_info()) setElemType(&info);
  }

  onnx::ModelProto& m_model;
  const Network& m_network;
  const NodePrecisions& m_precisions;
  const TypedExportOptions& m_options;
  TypedExportResult* m_result;
  std::map<std::string, Value> m_values;
  std::map<int, DataType> m_nodeType;  // by node index; kAnyType: Shape, Constant
  std::map<int, OpTyping> m_typing;
  std::set<std::string> m_taken;
  std::set<std::string> m_graphOutputs;
  std::set<std::string> m_graphInputs;
  std::set<std::string> m_constantValues;  // computed from initializers and constants alone
  std::set<std::string> m_implicitReads;
};

Status checkOpsets(const Network& network, const NodePrecisions& precisions) {
  const int opset = network.defaultOpset();
  if (opset < 6)
    return unsupported("ai.onnx opset " + std::to_string(opset) +
                       " is below 6 (Cast names its type as a string there)");
  for (const auto& [name, type] : precisions.byNode)
    if (type == DataType::kBFloat16 && opset < 13)
      return unsupported("bf16 needs ai.onnx opset 13 (Cast to bfloat16); the model has " +
                         std::to_string(opset));
  return Status::ok();
}

void addMetadata(onnx::ModelProto& model, const std::string& key, const std::string& value) {
  auto* props = model.mutable_metadata_props();
  for (int i = props->size() - 1; i >= 0; --i)
    if (props->Get(i).key() == key) props->DeleteSubrange(i, 1);
  onnx::StringStringEntryProto* entry = props->Add();
  entry->set_key(key);
  entry->set_value(value);
}

std::string precisionSummary(const TypedExportResult& r, const TypedExportOptions& options) {
  return std::to_string(r.reducedNodes) + " nodes reduced, " + std::to_string(r.float32Nodes) +
         " float32, " + std::to_string(r.castsInserted) +
         " casts; keep_io_types=" + (options.keepIoTypes ? "1" : "0");
}

std::string reducedTypesOf(const NodePrecisions& precisions) {
  std::set<std::string> types;
  for (const auto& [name, type] : precisions.byNode)
    if (isReduced(type)) types.insert(precisionSpelling(type));
  std::string text;
  for (const std::string& t : types) text += (text.empty() ? "" : "+") + t;
  return text.empty() ? "fp32" : text;
}

}  // namespace

Result<TypedExportResult> exportStronglyTypedOnnx(const std::string& modelPath,
                                                  const NodePrecisions& precisions,
                                                  const TypedExportOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, readRegularFile(modelPath, kMaxModelFileBytes));
  return exportStronglyTypedOnnxBytes(bytes, modelPath, precisions, options);
}

Result<TypedExportResult> exportStronglyTypedOnnxBytes(const std::string& bytes,
                                                       const std::string& modelPath,
                                                       const NodePrecisions& precisions,
                                                       const TypedExportOptions& options) {
  ImportOptions importOptions;
  importOptions.checkSupport = false;  // the export runs nothing
  std::string dir = std::filesystem::path(modelPath).parent_path().string();
  KILN_ASSIGN_OR_RETURN(Network network,
                        importOnnxBytes(bytes, dir.empty() ? "." : dir, modelPath, importOptions));
  KILN_RETURN_IF_ERROR_CTX(checkOpsets(network, precisions), modelPath);
  auto types = inferShapes(network);
  if (!types.isOk()) return types.status().withContext(modelPath + ": type inference");
  onnx::ModelProto model;
  if (!parseModelProto(bytes, &model)) return parseError(modelPath + ": not a valid ONNX model");

  TypedExportResult result;
  Rewriter rewriter(model, network, *types, precisions, options, &result);
  KILN_RETURN_IF_ERROR_CTX(rewriter.run(), modelPath);
  addMetadata(model, "kiln:precision_source", precisions.source);
  addMetadata(model, "kiln:precision",
              reducedTypesOf(precisions) +
                  " regions, float32 islands: " + precisionSummary(result, options));
  if (model.ByteSizeLong() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return invalidArgument(modelPath + ": the export is past protobuf's 2 GiB limit");
  if (!model.SerializeToString(&result.bytes))
    return internalError(modelPath + ": serializing the export failed");
  return result;
}

}  // namespace kiln
