#include "onnx/support_check.h"

namespace kiln::onnx_import {
namespace {

void visitGraph(const onnx::GraphProto& graph, const std::map<std::string, int>& opsets,
                const OpSupportQuery& isSupported, const std::string& path, std::vector<std::string>* out) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto it = opsets.find(domain);
    const int opset = it == opsets.end() ? 0 : it->second;
    const std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name();
    if (it == opsets.end()) {
      out->push_back("node '" + name + "' (#" + std::to_string(i) + ", " + node.op_type() + ")" + path +
                     " domain '" + domain + "' is not imported by the model");
    } else if (!isSupported(domain, node.op_type(), opset)) {
      out->push_back("node '" + name + "' (#" + std::to_string(i) + ", " + node.op_type() + ")" + path +
                     " domain '" + (domain.empty() ? "ai.onnx" : domain) + "' opset " + std::to_string(opset));
    }
    for (const auto& attr : node.attribute()) {
      const std::string inner = " in subgraph '" + attr.name() + "' of '" + name + "'";
      if (attr.has_g()) visitGraph(attr.g(), opsets, isSupported, inner, out);
      for (const auto& g : attr.graphs()) visitGraph(g, opsets, isSupported, inner, out);
    }
  }
}

}  // namespace

std::vector<std::string> listUnsupportedNodes(const onnx::ModelProto& model, const std::map<std::string, int>& opsets,
                                              const OpSupportQuery& isSupported) {
  std::vector<std::string> out;
  visitGraph(model.graph(), opsets, isSupported, "", &out);
  return out;
}

}  // namespace kiln::onnx_import
