// Network -> ModelProto. The inverse of importer.cpp: every field the importer reads
// is written so that importOnnxBytes(exportOnnxBytes(n)) gives back an equivalent
// Network. Tensors go through tensorToProto (the importer's own converter) so both
// directions agree on byte layout, packing of sub-byte types and strings.
#include <onnx/onnx_pb.h>

#include <climits>
#include <fstream>

#include "kiln/file_io.h"
#include "kiln/onnx_export.h"
#include "onnx/tensor_proto.h"

namespace kiln {
namespace {

Status exportGraph(const Graph& graph, const ExportOptions& options, bool initializersAsInputs,
                   onnx::GraphProto* proto);

// "unk__N" is what DimExpr::unknown() names an anonymous dim. Writing the name would
// make it a shared symbol on re-import, which could collide with a fresh unknown of the
// importing process; a dim with neither field set re-imports as a new unknown instead.
bool isAnonymousSymbol(const std::string& name) {
  const std::string prefix = "unk__";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  return name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

void exportDim(const DimExpr& dim, onnx::TensorShapeProto::Dimension* proto) {
  if (dim.isConst()) {
    if (dim.constValue() >= 0) proto->set_dim_value(dim.constValue());
  } else if (dim.isSymbol()) {
    if (!isAnonymousSymbol(dim.symbolName())) proto->set_dim_param(dim.symbolName());
  } else {
    proto->set_dim_param(dim.toString());  // re-imports as a symbol that prints the same
  }
}

void exportValueInfo(const ValueInfo& info, onnx::ValueInfoProto* proto) {
  proto->set_name(info.name);
  if (info.type == DataType::kUndefined && !info.hasShape) return;  // type left open
  auto* tensorType = proto->mutable_type()->mutable_tensor_type();
  tensorType->set_elem_type(static_cast<int32_t>(info.type));
  if (!info.hasShape) return;
  auto* shape = tensorType->mutable_shape();  // present even when empty: rank 0
  for (const DimExpr& dim : info.shape) exportDim(dim, shape->add_dim());
}

// The graph-input entry IR version 3 requires for every initializer.
void exportInitializerAsInput(const std::string& name, const Tensor& tensor,
                              onnx::ValueInfoProto* proto) {
  ValueInfo info;
  info.name = name;
  info.type = tensor.type();
  info.hasShape = true;
  for (int64_t d : tensor.shape()) info.shape.push_back(DimExpr(d));
  exportValueInfo(info, proto);
}

void addExternalEntry(onnx::TensorProto* proto, const std::string& key, const std::string& value) {
  auto* entry = proto->add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

// Hands `proto`'s raw bytes to the sink when the options ask for it, leaving an external
// reference in their place. Strings live in string_data (no raw bytes), and the importer
// refuses external strings, so they always stay inline.
Status externalize(const std::string& name, const Tensor& tensor, const ExportOptions& options,
                   onnx::TensorProto* proto) {
  const auto length = static_cast<int64_t>(proto->raw_data().size());
  if (!options.weightSink || tensor.type() == DataType::kString ||
      length < options.externalizeMinBytes) {
    return Status::ok();
  }
  Result<int64_t> offset = options.weightSink(name, tensor, proto->raw_data());
  if (!offset.isOk()) return offset.status();
  if (offset.value() < 0) {
    return internalError("the weight sink returned offset " + std::to_string(offset.value()));
  }
  proto->clear_raw_data();
  proto->set_data_location(onnx::TensorProto::EXTERNAL);
  addExternalEntry(proto, "location", options.externalLocation);
  addExternalEntry(proto, "offset", std::to_string(offset.value()));
  addExternalEntry(proto, "length", std::to_string(length));
  return Status::ok();
}

Status exportInitializer(const std::string& name, const Tensor& tensor,
                         const ExportOptions& options, onnx::TensorProto* proto) {
  if (!tensor.defined()) return invalidArgument("initializer '" + name + "' holds no tensor");
  onnx_import::tensorToProto(tensor, name, proto);
  KILN_RETURN_IF_ERROR_CTX(externalize(name, tensor, options, proto), "initializer '" + name + "'");
  return Status::ok();
}

Status exportSubgraph(const std::shared_ptr<Graph>& graph, const ExportOptions& options,
                      onnx::GraphProto* proto) {
  if (!graph) return invalidArgument("holds no graph");
  return exportGraph(*graph, options, false, proto);
}

Status exportAttribute(const Attribute& attr, const ExportOptions& options,
                       onnx::AttributeProto* proto) {
  using A = onnx::AttributeProto;
  using K = Attribute::Kind;
  switch (attr.kind) {
    case K::kFloat:
      proto->set_type(A::FLOAT);
      proto->set_f(attr.f);
      break;
    case K::kInt:
      proto->set_type(A::INT);
      proto->set_i(attr.i);
      break;
    case K::kString:
      proto->set_type(A::STRING);
      proto->set_s(attr.s);
      break;
    case K::kFloats:
      proto->set_type(A::FLOATS);
      proto->mutable_floats()->Add(attr.floats.begin(), attr.floats.end());
      break;
    case K::kInts:
      proto->set_type(A::INTS);
      proto->mutable_ints()->Add(attr.ints.begin(), attr.ints.end());
      break;
    case K::kStrings:
      proto->set_type(A::STRINGS);
      for (const std::string& s : attr.strings) proto->add_strings(s);
      break;
    case K::kTensor:
      proto->set_type(A::TENSOR);
      onnx_import::tensorToProto(attr.t, "", proto->mutable_t());
      break;
    case K::kTensors:
      proto->set_type(A::TENSORS);
      for (const Tensor& t : attr.tensors) onnx_import::tensorToProto(t, "", proto->add_tensors());
      break;
    case K::kGraph:
      proto->set_type(A::GRAPH);
      return exportSubgraph(attr.g, options, proto->mutable_g());
    case K::kGraphs:
      proto->set_type(A::GRAPHS);
      for (const auto& g : attr.graphs) {
        KILN_RETURN_IF_ERROR(exportSubgraph(g, options, proto->add_graphs()));
      }
      break;
  }
  return Status::ok();
}

Status exportNode(const Node& node, const ExportOptions& options, onnx::NodeProto* proto) {
  proto->set_name(node.name);
  proto->set_op_type(node.opType);
  if (!node.domain.empty()) proto->set_domain(node.domain);
  for (const std::string& in : node.inputs) proto->add_input(in);
  for (const std::string& out : node.outputs) proto->add_output(out);
  for (const auto& [key, attr] : node.attributes) {
    onnx::AttributeProto* a = proto->add_attribute();
    a->set_name(key);
    KILN_RETURN_IF_ERROR_CTX(exportAttribute(attr, options, a),
                             node.describe() + " attribute '" + key + "'");
    // Named by the value it produces: that name is unique in the model, like an initializer's.
    if (options.externalizeConstants && node.opType == "Constant" && node.domain.empty() &&
        key == "value" && attr.kind == Attribute::Kind::kTensor && !node.outputs.empty()) {
      KILN_RETURN_IF_ERROR_CTX(externalize(node.outputs[0], attr.t, options, a->mutable_t()),
                               node.describe() + " attribute 'value'");
    }
  }
  return Status::ok();
}

Status exportGraph(const Graph& graph, const ExportOptions& options, bool initializersAsInputs,
                   onnx::GraphProto* proto) {
  proto->set_name(graph.name);
  for (const Node& node : graph.nodes) {
    KILN_RETURN_IF_ERROR(exportNode(node, options, proto->add_node()));
  }
  for (const ValueInfo& in : graph.inputs) exportValueInfo(in, proto->add_input());
  if (initializersAsInputs) {
    for (const auto& [name, t] : graph.initializers) {
      exportInitializerAsInput(name, t, proto->add_input());
    }
  }
  for (const ValueInfo& out : graph.outputs) exportValueInfo(out, proto->add_output());
  for (const auto& [name, info] : graph.valueInfo) exportValueInfo(info, proto->add_value_info());
  for (const auto& [name, t] : graph.initializers) {
    KILN_RETURN_IF_ERROR(exportInitializer(name, t, options, proto->add_initializer()));
  }
  return Status::ok();
}

// The Network's opsets, plus the opset of any node (subgraphs included) whose domain
// they lack: a Network built in code may only say so per node.
void collectOpsets(const Graph& graph, std::map<std::string, int>* opsets) {
  for (const Node& node : graph.nodes) {
    if (node.opset > 0) opsets->emplace(node.domain, node.opset);
    for (const auto& [key, attr] : node.attributes) {
      if (attr.g) collectOpsets(*attr.g, opsets);
      for (const auto& g : attr.graphs) {
        if (g) collectOpsets(*g, opsets);
      }
    }
  }
}

// The lowest IR version that ONNX releases paired with an ai.onnx opset
// (onnx/docs/Versioning.md), for Networks that carry no IR version of their own.
int64_t irVersionForOpset(int opset) {
  if (opset <= 8) return 3;
  if (opset <= 11) return opset - 5;  // 9 -> 4, 10 -> 5, 11 -> 6
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  return 11;
}

}  // namespace

Result<std::string> exportOnnxBytes(const Network& network, const ExportOptions& options) {
  onnx::ModelProto model;
  std::map<std::string, int> opsets = network.opsets;
  collectOpsets(network.graph, &opsets);
  const auto defaultOpset = opsets.find("");
  const int64_t irVersion =
      network.irVersion > 0
          ? network.irVersion
          : irVersionForOpset(defaultOpset == opsets.end() ? 1 : defaultOpset->second);
  model.set_ir_version(irVersion);
  for (const auto& [domain, version] : opsets) {
    auto* entry = model.add_opset_import();
    entry->set_domain(domain);
    entry->set_version(version);
  }
  model.set_producer_name(network.producerName);
  model.set_producer_version(network.producerVersion);
  // Before IR 4 every initializer had to be listed among the main graph's inputs.
  KILN_RETURN_IF_ERROR(exportGraph(network.graph, options, irVersion < 4, model.mutable_graph()));
  if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    return unsupported("the exported model is " + std::to_string(model.ByteSizeLong()) +
                       " bytes, past protobuf's 2 GiB limit; externalize the weights");
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return internalError("serializing the ONNX model failed");
  return bytes;
}

Status exportOnnxFile(const Network& network, const std::string& path) {
  Result<std::string> bytes = exportOnnxBytes(network);
  if (!bytes.isOk()) return bytes.status().withContext(path);
  return writeFileAtomically(path, bytes.value(), "the ONNX model");
}

}  // namespace kiln
