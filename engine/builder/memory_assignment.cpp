// Activation memory at the opt shapes: every value a layer writes lives from its
// producer to its last reader (graph outputs to the end); the planner packs the
// lifetimes into one arena, as the CUDA runtime does at run time.
#include "builder/build_steps.h"
#include "plan/memory_planner.h"

namespace kiln::build {

void assignMemory(const Network& network, const ValueMetas& values, BuildRecord* record) {
  const Graph& graph = network.graph;
  const int steps = static_cast<int>(graph.nodes.size());
  std::map<std::string, int> producer, lastUse;
  for (int i = 0; i < steps; ++i) {
    const Node& node = graph.nodes[i];
    for (const std::string& in : node.inputs)
      if (!in.empty()) lastUse[in] = i;
    for (const std::string& in : node.implicitInputs()) lastUse[in] = i;
    for (const std::string& out : node.outputs)
      if (!out.empty()) producer[out] = i;
  }
  for (const ValueInfo& out : graph.outputs) lastUse[out.name] = steps;

  std::vector<BufferLifetime> buffers;
  std::vector<std::pair<int, std::string>> owners;  // (layer, value) per buffer
  for (const auto& [name, step] : producer) {
    auto value = values.find(name);
    // A shape that depends on data is allocated when it is known, outside the arena.
    if (value == values.end() || !value->second.shapeKnown) continue;
    const LayerRecord& layer = record->layers[step];
    const size_t element = value->second.type == DataType::kFloat32
                               ? dataTypeSize(layer.outputType)
                               : dataTypeSize(value->second.type);
    const int last = lastUse.count(name) ? lastUse[name] : step;
    buffers.push_back(
        {static_cast<int64_t>(element) * shapeNumel(value->second.shape), step, last});
    owners.push_back({step, name});
  }
  const MemoryPlan plan = planMemory(buffers);
  record->activationBytes = plan.arenaBytes;
  record->activationBytesWithoutReuse = plan.unsharedBytes;
  for (size_t i = 0; i < owners.size(); ++i) {
    LayerRecord& layer = record->layers[owners[i].first];
    const Node& node = graph.nodes[owners[i].first];
    if (!node.outputs.empty() && node.outputs[0] == owners[i].second)
      layer.memoryOffset = plan.offsets[i];
  }
  record->weightBytes = graph.parameterBytes();
}

}  // namespace kiln::build
