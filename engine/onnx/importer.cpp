// ModelProto -> Network. Order of work: parse, check versions, list every
// unsupported node (so the user sees all of them at once), then convert graphs
// recursively and sort each one topologically.
#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <limits>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/file_io.h"
#include "kiln/onnx_import.h"
#include "kiln/tensor_size.h"
#include "onnx/support_check.h"
#include "onnx/tensor_proto.h"
#include "kiln/plugin_registry.h"
#include "ops/reference_ops.h"
#include "plugin/plugin_hooks.h"

namespace kiln {
namespace {

using onnx_import::tensorFromProto;

// Any domain's opset version must lie in 0..kMaxOpsetVersion (the field is 64-bit).
constexpr int64_t kMaxOpsetVersion = 1 << 20;
// If/Loop/Scan bodies may nest this many levels; deeper is a clear import error.
constexpr int kMaxSubgraphDepth = 64;

struct ImportContext {
  std::string modelDir;
  std::map<std::string, int> opsets;
  ExternalDataResolver externalData;  // consulted instead of files when set
};

Result<Graph> convertGraph(const onnx::GraphProto& proto, const ImportContext& ctx,
                           const std::vector<std::string>& outerScope);

// The element type of a value: an ONNX code Kiln knows, or 0 (left open).
Status checkElementType(int32_t code, const std::string& what) {
  if (code >= 0 && code <= kLastDataTypeCode) return Status::ok();
  return parseError(what + ": element type " + std::to_string(code) +
                    " is not an ONNX tensor type");
}

// A declared shape's dims and, when all are known, its size, held to the limits
// of kiln/tensor_size.h before any tensor of that shape exists.
Status checkDeclaredShape(const onnx::TensorShapeProto& shape, DataType type,
                          const std::string& what) {
  Shape known;
  for (const auto& dim : shape.dim()) {
    const int64_t d = dim.has_dim_value() ? dim.dim_value() : 1;
    known.push_back(d < 0 ? 1 : d);  // -1: some exporters' spelling of a dynamic dim
  }
  return checkTensorSize(type == DataType::kUndefined ? DataType::kUInt8 : type, known, what);
}

Status convertValueInfo(const onnx::ValueInfoProto& proto, ValueInfo* out) {
  out->name = proto.name();
  if (!proto.has_type()) return Status::ok();
  const onnx::TypeProto& type = proto.type();
  if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET) return Status::ok();  // type left open
  if (!type.has_tensor_type()) {
    return unsupported("value '" + proto.name() +
                       "' is not a tensor (sequence, map and optional types are not supported)");
  }
  const auto& tensorType = type.tensor_type();
  const std::string what = "value '" + proto.name() + "'";
  KILN_RETURN_IF_ERROR(checkElementType(tensorType.elem_type(), what));
  out->type = static_cast<DataType>(tensorType.elem_type());
  if (!tensorType.has_shape()) return Status::ok();
  KILN_RETURN_IF_ERROR(checkDeclaredShape(tensorType.shape(), out->type, what));
  out->hasShape = true;
  for (const auto& dim : tensorType.shape().dim()) {
    // Some exporters write -1 for a dynamic dim; it is unknown, not a size.
    if (dim.has_dim_value() && dim.dim_value() >= 0) out->shape.push_back(DimExpr(dim.dim_value()));
    // "?" is how some exporters (Paddle) spell an anonymous dynamic dim: not a shared name.
    else if (dim.has_dim_param() && !dim.dim_param().empty() && dim.dim_param() != "?")
      out->shape.push_back(DimExpr::symbol(dim.dim_param()));
    else
      out->shape.push_back(DimExpr::unknown());
  }
  return Status::ok();
}

// A subgraph's error, reported about the node holding the subgraph (convertGraph
// attaches it): node fields name a main-graph node, whose index the studio and the
// CLI can use; the message still names the inner node.
Status bodyError(const Status& inner, const std::string& what) {
  return Status(inner.code(), what + ": " + inner.message()).withTensor(inner.tensor());
}

Status convertAttribute(const onnx::AttributeProto& proto, const ImportContext& ctx,
                        const std::vector<std::string>& scope, const std::string& where,
                        Attribute* out) {
  using A = onnx::AttributeProto;
  const std::string what = where + " attribute '" + proto.name() + "'";
  switch (proto.type()) {
    case A::FLOAT:
      out->kind = Attribute::Kind::kFloat;
      out->f = proto.f();
      break;
    case A::INT:
      out->kind = Attribute::Kind::kInt;
      out->i = proto.i();
      break;
    case A::STRING:
      out->kind = Attribute::Kind::kString;
      out->s = proto.s();
      break;
    case A::FLOATS:
      out->kind = Attribute::Kind::kFloats;
      out->floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case A::INTS:
      out->kind = Attribute::Kind::kInts;
      out->ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case A::STRINGS:
      out->kind = Attribute::Kind::kStrings;
      out->strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    case A::TENSOR: {
      out->kind = Attribute::Kind::kTensor;
      auto t = tensorFromProto(proto.t(), ctx.modelDir, ctx.externalData);
      if (!t.isOk()) return t.status().withContext(what);
      out->t = std::move(t).value();
      break;
    }
    case A::TENSORS:
      out->kind = Attribute::Kind::kTensors;
      for (const auto& tp : proto.tensors()) {
        auto t = tensorFromProto(tp, ctx.modelDir, ctx.externalData);
        if (!t.isOk()) return t.status().withContext(what);
        out->tensors.push_back(std::move(t).value());
      }
      break;
    case A::GRAPH: {
      out->kind = Attribute::Kind::kGraph;
      auto g = convertGraph(proto.g(), ctx, scope);
      if (!g.isOk()) return bodyError(g.status(), what);
      out->g = std::make_shared<Graph>(std::move(g).value());
      break;
    }
    case A::GRAPHS:
      out->kind = Attribute::Kind::kGraphs;
      for (const auto& gp : proto.graphs()) {
        auto g = convertGraph(gp, ctx, scope);
        if (!g.isOk()) return bodyError(g.status(), what);
        out->graphs.push_back(std::make_shared<Graph>(std::move(g).value()));
      }
      break;
    default:
      return unsupported(what + " has an unsupported type (" + std::to_string(proto.type()) + ")");
  }
  return Status::ok();
}

// Everything a subgraph of this graph can see: the outer scope plus this graph's names.
std::vector<std::string> innerScope(const onnx::GraphProto& proto,
                                    const std::vector<std::string>& outer) {
  std::vector<std::string> scope = outer;
  for (const auto& v : proto.input()) scope.push_back(v.name());
  for (const auto& t : proto.initializer()) scope.push_back(t.name());
  for (const auto& n : proto.node())
    for (const auto& o : n.output()) scope.push_back(o);
  return scope;
}

Status convertNode(const onnx::NodeProto& proto, int index, const ImportContext& ctx,
                   const std::vector<std::string>& scope, Node* node) {
  node->name = proto.name();
  node->opType = proto.op_type();
  node->domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  node->index = index;
  auto it = ctx.opsets.find(node->domain);
  node->opset = it == ctx.opsets.end() ? 0 : it->second;
  node->inputs.assign(proto.input().begin(), proto.input().end());
  node->outputs.assign(proto.output().begin(), proto.output().end());
  // A node that names no output computes nothing a plan could keep (a Split without
  // outputs once built into a plan that `kiln run` refused).
  if (std::all_of(node->outputs.begin(), node->outputs.end(),
                  [](const std::string& o) { return o.empty(); }))
    return invalidArgument(node->describe() + ": names no outputs");
  for (const auto& attr : proto.attribute()) {
    if (!attr.ref_attr_name().empty()) {
      return unsupported(node->describe() + ": attribute references (functions) are not supported");
    }
    Attribute a;
    KILN_RETURN_IF_ERROR(convertAttribute(attr, ctx, scope, node->describe(), &a));
    node->attributes[attr.name()] = std::move(a);
  }
  return Status::ok();
}

// Graph inputs and outputs need names, and each output a producer: a node, an
// input, an initializer or (in a subgraph) a value of an enclosing graph.
Status checkInterfaceNames(const onnx::GraphProto& proto, const std::vector<std::string>& scope) {
  for (int i = 0; i < proto.input_size(); ++i)
    if (proto.input(i).name().empty())
      return invalidArgument("graph input #" + std::to_string(i) + " has an empty name");
  for (int i = 0; i < proto.output_size(); ++i) {
    const std::string& name = proto.output(i).name();
    if (name.empty())
      return invalidArgument("graph output #" + std::to_string(i) + " has an empty name");
    if (std::find(scope.begin(), scope.end(), name) == scope.end())
      return invalidArgument("graph output '" + name +
                             "' is never produced (no node, input or initializer has that name)");
  }
  return Status::ok();
}

Result<Graph> convertGraph(const onnx::GraphProto& proto, const ImportContext& ctx,
                           const std::vector<std::string>& outerScope) {
  Graph graph;
  graph.name = proto.name();
  for (const auto& init : proto.initializer()) {
    auto t = tensorFromProto(init, ctx.modelDir, ctx.externalData);
    if (!t.isOk()) return t.status().withContext("initializer");
    graph.initializers[init.name()] = std::move(t).value();
  }
  if (proto.sparse_initializer_size() > 0)
    return unsupported("sparse initializers are not supported");
  for (const auto& in : proto.input()) {
    ValueInfo info;
    KILN_RETURN_IF_ERROR_CTX(convertValueInfo(in, &info), "graph input");
    // IR < 4 lists initializers among the inputs; they stay weights, not user inputs.
    if (!graph.initializers.count(info.name)) graph.inputs.push_back(std::move(info));
  }
  for (const auto& out : proto.output()) {
    ValueInfo info;
    KILN_RETURN_IF_ERROR_CTX(convertValueInfo(out, &info), "graph output");
    graph.outputs.push_back(std::move(info));
  }
  for (const auto& vi : proto.value_info()) {
    ValueInfo info;
    if (convertValueInfo(vi, &info).isOk()) graph.valueInfo[info.name] = std::move(info);
  }
  const std::vector<std::string> scope = innerScope(proto, outerScope);
  KILN_RETURN_IF_ERROR(checkInterfaceNames(proto, scope));
  for (int i = 0; i < proto.node_size(); ++i) {
    Node node;
    KILN_RETURN_IF_ERROR_NODE(convertNode(proto.node(i), i, ctx, scope, &node), node);
    graph.nodes.push_back(std::move(node));
  }
  KILN_RETURN_IF_ERROR(graph.sortTopologically(outerScope));
  return graph;
}

Status checkVersions(const onnx::ModelProto& model, std::map<std::string, int>* opsets) {
  if (!model.has_graph()) return parseError("not an ONNX model (no graph)");
  if (model.ir_version() < kMinIrVersion || model.ir_version() > kMaxIrVersion) {
    return unsupported("IR version " + std::to_string(model.ir_version()) +
                       " is outside the supported range " + std::to_string(kMinIrVersion) + ".." +
                       std::to_string(kMaxIrVersion));
  }
  for (const auto& op : model.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    // The field is 64-bit; a version past int's range once wrapped to a valid one.
    if (op.version() < 0 || op.version() > kMaxOpsetVersion) {
      return unsupported("opset " + std::to_string(op.version()) + " of " +
                         (domain.empty() ? std::string("ai.onnx") : "'" + domain + "'") +
                         " is out of range (0.." + std::to_string(kMaxOpsetVersion) + ")");
    }
    (*opsets)[domain] = static_cast<int>(op.version());
  }
  if (model.opset_import_size() == 0) (*opsets)[""] = 1;  // IR 3 without imports means opset 1
  auto it = opsets->find("");
  if (it != opsets->end() && (it->second < kMinDefaultOpset || it->second > kMaxDefaultOpset)) {
    return unsupported("opset " + std::to_string(it->second) +
                       " of ai.onnx is outside the supported range " +
                       std::to_string(kMinDefaultOpset) + ".." + std::to_string(kMaxDefaultOpset));
  }
  return Status::ok();
}

// Kiln runs tensors only: a sequence, map or optional graph input or output is
// refused before the op check, so the error says what the model needs.
Status checkTensorInterface(const onnx::GraphProto& graph) {
  for (const auto* list : {&graph.input(), &graph.output()}) {
    for (const auto& v : *list) {
      if (v.has_type() && v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET &&
          !v.type().has_tensor_type()) {
        return unsupported(
            "value '" + v.name() +
            "' is not a tensor (sequence, map and optional types are not supported)");
      }
    }
  }
  return Status::ok();
}

// Protobuf's default nesting limit (100 messages, 33 subgraph levels: each is a
// graph, a node and an attribute) made a deeper model fail as "protobuf parse
// failed"; parsing allows far more, and checkNesting() names the real limit.
constexpr int kProtobufRecursionLimit = 1000;

bool parseModel(const std::string& bytes, onnx::ModelProto* model) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  input.SetRecursionLimit(kProtobufRecursionLimit);
  return model->ParseFromCodedStream(&input) && input.ConsumedEntireMessage();
}

// Levels of subgraphs below `graph` (0: none); `path` gets the outermost node of
// the deepest chain. Bounded by the parse's recursion limit.
int nestingDepth(const onnx::GraphProto& graph, std::string* path) {
  int deepest = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    for (const auto& attr : node.attribute()) {
      std::vector<const onnx::GraphProto*> bodies;
      if (attr.has_g()) bodies.push_back(&attr.g());
      for (const auto& g : attr.graphs()) bodies.push_back(&g);
      for (const onnx::GraphProto* body : bodies) {
        std::string inner;
        const int depth = 1 + nestingDepth(*body, &inner);
        if (depth <= deepest) continue;
        deepest = depth;
        *path = "node '" + node.name() + "' (#" + std::to_string(i) + ", " + node.op_type() + ")";
      }
    }
  }
  return deepest;
}

Status checkNesting(const onnx::GraphProto& graph) {
  std::string where;
  const int depth = nestingDepth(graph, &where);
  if (depth <= kMaxSubgraphDepth) return Status::ok();
  return unsupported(where + ": subgraphs nest " + std::to_string(depth) +
                     " levels deep; the limit is " + std::to_string(kMaxSubgraphDepth));
}

}  // namespace

Result<Network> importOnnxBytes(const std::string& bytes, const std::string& modelDir,
                                const std::string& displayName, const ImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty()) return Status(StatusCode::kParseError, displayName + ": file is empty");
  if (!parseModel(bytes, &model)) {
    return Status(
        StatusCode::kParseError,
        displayName + ": not a valid ONNX model (protobuf parse failed; truncated or not ONNX)");
  }
  Network network;
  KILN_RETURN_IF_ERROR_CTX(checkVersions(model, &network.opsets), displayName);
  KILN_RETURN_IF_ERROR_CTX(checkTensorInterface(model.graph()), displayName);
  KILN_RETURN_IF_ERROR_CTX(checkNesting(model.graph()), displayName);
  if (options.checkSupport) {
    OpSupportQuery query = options.isSupported;
    if (!query) {
      query = [](const std::string& domain, const std::string& opType, int opset) {
        return ops::isKnownOp(domain, opType, opset) || onnx_import::pluginMayProvide(opType);
      };
    }
    std::vector<Status> problems = onnx_import::listUnsupportedNodes(model, network.opsets, query);
    if (!problems.empty()) {
      std::string message = displayName + ": " + std::to_string(problems.size()) +
                            " unsupported node" + (problems.size() == 1 ? "" : "s") + ": ";
      for (size_t i = 0; i < problems.size(); ++i)
        message += (i ? "; " : "") + problems[i].message();
      // The fields name the first node listed, the one the message starts with.
      return Status(StatusCode::kUnsupported, message + "; " + describeLoadedPlugins())
          .withNode(*problems[0].node());
    }
  }
  ImportContext ctx{modelDir, network.opsets, options.externalData};
  auto graph = convertGraph(model.graph(), ctx, {});
  if (!graph.isOk()) return graph.status().withContext(displayName);
  network.graph = std::move(graph).value();
  KILN_RETURN_IF_ERROR_CTX(onnx_import::mapPluginNodes(network, options.checkSupport), displayName);
  network.irVersion = model.ir_version();
  network.producerName = model.producer_name();
  network.producerVersion = model.producer_version();
  return network;
}

Result<Network> importOnnxFile(const std::string& path, const ImportOptions& options) {
  // Regular files only, checked on the opened descriptor (no FIFO, device, directory).
  Result<std::string> bytes = readRegularFile(path, kMaxModelFileBytes);
  if (!bytes.isOk()) return bytes.status();
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  auto network = importOnnxBytes(bytes.value(), dir, path, options);
  if (network.isOk()) network->sourcePath = path;
  return network;
}

Result<Tensor> readTensorProtoFile(const std::string& path, std::string* name) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, readRegularFile(path, kMaxTensorFileBytes));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return parseError(path + ": not a serialized ONNX TensorProto");
  if (name) *name = proto.name();
  std::string dir = std::filesystem::path(path).parent_path().string();
  auto t = onnx_import::tensorFromProto(proto, dir.empty() ? "." : dir);
  if (!t.isOk()) return t.status().withContext(path);
  return t;
}

Status writeTensorProtoFile(const std::string& path, const Tensor& tensor,
                            const std::string& name) {
  onnx::TensorProto proto;
  onnx_import::tensorToProto(tensor, name, &proto);
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) return internalError(path + ": serializing failed");
  return writeFileAtomically(path, bytes, "the tensor");
}

}  // namespace kiln
