#include "onnx/support_check.h"

namespace kiln::onnx_import {
namespace {

// `holder`: the main-graph node whose subgraph `graph` is; null for the main graph.
void visitGraph(const onnx::GraphProto& graph, const std::map<std::string, int>& opsets,
                const OpSupportQuery& isSupported, const std::string& path,
                const StatusNode* holder, std::vector<Status>* out) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    const StatusNode self{node.name(), i, node.op_type(),
                          node.domain() == "ai.onnx" ? "" : node.domain()};
    const StatusNode& about = holder ? *holder : self;
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto it = opsets.find(domain);
    const int opset = it == opsets.end() ? 0 : it->second;
    const std::string name =
        node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name();
    if (it == opsets.end()) {
      out->push_back(unsupported("node '" + name + "' (#" + std::to_string(i) + ", " +
                                 node.op_type() + ")" + path + " domain '" + domain +
                                 "' is not imported by the model")
                         .withNode(about));
    } else if (!isSupported(domain, node.op_type(), opset)) {
      out->push_back(unsupported("node '" + name + "' (#" + std::to_string(i) + ", " +
                                 node.op_type() + ")" + path + " domain '" +
                                 (domain.empty() ? "ai.onnx" : domain) + "' opset " +
                                 std::to_string(opset))
                         .withNode(about));
    }
    for (const auto& attr : node.attribute()) {
      const std::string inner = " in subgraph '" + attr.name() + "' of '" + name + "'";
      if (attr.has_g()) visitGraph(attr.g(), opsets, isSupported, inner, &about, out);
      for (const auto& g : attr.graphs()) visitGraph(g, opsets, isSupported, inner, &about, out);
    }
  }
}

}  // namespace

std::vector<Status> listUnsupportedNodes(const onnx::ModelProto& model,
                                         const std::map<std::string, int>& opsets,
                                         const OpSupportQuery& isSupported) {
  std::vector<Status> out;
  visitGraph(model.graph(), opsets, isSupported, "", nullptr, &out);
  return out;
}

}  // namespace kiln::onnx_import
