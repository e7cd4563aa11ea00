#include "kiln/graph_outputs.h"

#include <set>

#include "kiln/shape_inference.h"

namespace kiln {

std::shared_ptr<const Network> withGraphOutputs(const Network& source,
                                                const std::vector<std::string>& names) {
  auto network = std::make_shared<Network>(source);
  std::set<std::string> present;
  for (const ValueInfo& v : network->graph.outputs) present.insert(v.name);
  auto inferred = inferShapes(source);
  for (const std::string& name : names) {
    if (!present.insert(name).second) continue;
    ValueInfo info;
    info.name = name;
    if (inferred.isOk()) {
      auto it = inferred->values.find(name);
      if (it != inferred->values.end()) info.type = it->second.type;
    }
    network->graph.outputs.push_back(std::move(info));
  }
  return network;
}

std::vector<std::string> readIntermediateValues(const Graph& graph) {
  std::set<std::string> outputs, read;
  for (const ValueInfo& v : graph.outputs) outputs.insert(v.name);
  for (const Node& node : graph.nodes)
    for (const std::string& in : node.inputs)
      if (!in.empty()) read.insert(in);
  std::vector<std::string> names;
  for (const Node& node : graph.nodes)
    for (const std::string& out : node.outputs)
      if (!out.empty() && read.count(out) && !outputs.count(out)) names.push_back(out);
  return names;
}

}  // namespace kiln
