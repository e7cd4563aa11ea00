#include "backends/cuda/context_plan.h"

#include <algorithm>
#include <set>

#include "plan/memory_planner.h"

namespace kiln::cuda {
namespace {

// A planned view starts on the arena's alignment (planMemory's 256 bytes), so every kernel
// reading it sees the alignment it would see in a buffer of its own (cuBLASLt's algorithms,
// 16-byte vector paths).
constexpr int64_t kViewAlignment = 256;

bool allConst(const SymbolicShape& shape, Shape* out) {
  out->clear();
  for (const DimExpr& d : shape) {
    if (!d.isConst()) return false;
    out->push_back(d.constValue());
  }
  return true;
}

// The byte offset at which `node`'s output 0 is a view of its input 0 (entry->viewOffset at
// the planned shapes), or -1: no such entry, a shape not known, a storage type that differs
// between the two (the output is converted), or an input that is not on the GPU path.
template <class ValueFor>
int64_t plannedViewOffset(const Node& node, const GpuKernelEntry* entry, ValueFor& valueFor) {
  if (!entry || !entry->viewOffset || node.inputs.empty() || node.inputs[0].empty() ||
      node.outputs.empty() || node.outputs[0].empty())
    return -1;
  std::vector<Shape> shapes;
  for (const std::string& name : node.inputs) {
    if (name.empty()) {
      shapes.emplace_back();
      continue;
    }
    const PlannedValue& value = valueFor(name);
    if (!value.shapeKnown) return -1;
    shapes.push_back(value.shape);
  }
  const PlannedValue& in = valueFor(node.inputs[0]);
  const PlannedValue& out = valueFor(node.outputs[0]);
  if (!out.shapeKnown || in.storage != out.storage || in.storage == DataType::kString ||
      dataTypeSize(in.storage) == 0)
    return -1;
  const int64_t offset = entry->viewOffset(node, shapes, dataTypeSize(in.storage));
  return offset >= 0 && offset % kViewAlignment == 0 ? offset : -1;
}

// Whether every reader of `name` is a GPU Transpose taking it as its only input, or a view
// (aliasesInput0, at byte 0) whose output is read that way in turn, with at least one
// Transpose reached and no graph output on the way: then a 16-bit engine's float32 input can
// be read in place, the Transposes narrowing it as they copy (narrowing_copy_impl.h).
bool readOnlyByTransposes(const std::string& name, const Graph& graph,
                          const std::vector<PlannedStep>& steps,
                          const std::set<std::string>& outputs, std::vector<std::string>* views,
                          int depth = 0) {
  if (outputs.count(name) || depth > 16) return false;
  bool transposed = false;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (const std::string& implicit : node.implicitInputs())
      if (implicit == name) return false;
    const bool reads = std::find(node.inputs.begin(), node.inputs.end(), name) != node.inputs.end();
    if (!reads) continue;
    const PlannedStep& step = steps[n];
    if (!step.entry || node.inputs[0] != name || step.viewOffsetBytes >= 0) return false;
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (node.inputs[i] == name) return false;
    if (step.placement == LayerPlacement::kGpu && step.entry->domain.empty() &&
        step.entry->opType == "Transpose" && node.inputs.size() == 1) {
      transposed = true;
      continue;
    }
    if (step.placement != LayerPlacement::kAlias || !step.entry->aliasesInput0 ||
        node.outputs.empty() || node.outputs[0].empty())
      return false;
    if (!readOnlyByTransposes(node.outputs[0], graph, steps, outputs, views, depth + 1))
      return false;
    views->push_back(node.outputs[0]);
    transposed = true;
  }
  return transposed;
}

}  // namespace

Result<ContextPlan> planContext(const EngineImpl& engine,
                                const std::map<std::string, Shape>& inputShapes) {
  const Graph& graph = engine.network().graph;
  auto inferred = inferShapes(engine.network(), inputShapes);
  if (!inferred.isOk()) return inferred.status();
  ShapeInferenceResult& result = inferred.value();

  ContextPlan plan;
  auto valueFor = [&](const std::string& name) -> PlannedValue& {
    auto [it, inserted] = plan.values.try_emplace(name);
    if (inserted) {
      auto info = result.values.find(name);
      if (info != result.values.end()) {
        it->second.modelType = info->second.type;
        it->second.shapeKnown =
            info->second.hasShape && allConst(info->second.shape, &it->second.shape);
      }
      it->second.storage = engine.storageType(it->second.modelType);
    }
    return it->second;
  };

  for (const auto& [name, weight] : engine.weights()) valueFor(name).home = ValueHome::kWeight;
  std::set<std::string> outputs;
  for (const ValueInfo& v : graph.outputs) outputs.insert(v.name);
  for (const ValueInfo& v : graph.inputs) {
    if (graph.initializers.count(v.name)) continue;
    PlannedValue& value = valueFor(v.name);
    value.shapeKnown = true;
    value.shape = inputShapes.at(v.name);
    bool converted = value.storage != value.modelType;
    value.home = converted ? ValueHome::kArena : ValueHome::kInputBinding;
    value.firstStep = 0;
  }

  const int stepCount = static_cast<int>(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const NodeChoice& choice = engine.choices()[n];
    PlannedStep step;
    step.nodeIndex = n;
    bool folded = !node.outputs.empty();
    for (const std::string& o : node.outputs)
      if (!o.empty() && !result.folded.count(o)) folded = false;
    if (folded) {
      step.placement = LayerPlacement::kFolded;
      step.implementation = "folded at prepare time";
    } else if (choice.entry && choice.entry->aliasesInput0) {
      step.placement = LayerPlacement::kAlias;
      step.entry = choice.entry;
      step.implementation = "view of its input (no kernel)";
    } else if (const int64_t offset = plannedViewOffset(node, choice.entry, valueFor);
               offset >= 0) {
      step.placement = LayerPlacement::kAlias;
      step.entry = choice.entry;
      step.viewOffsetBytes = offset;
      step.implementation =
          "view of its input at byte " + std::to_string(offset) + " (a contiguous run: no kernel)";
    } else if (choice.entry) {
      step.entry = choice.entry;
    } else {
      step.placement = LayerPlacement::kHostFallback;
      step.note = choice.fallbackReason + "; runs on the host";
      step.implementation = "CPU reference kernel";
    }
    const int s = static_cast<int>(n);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& o = node.outputs[i];
      if (o.empty()) continue;
      PlannedValue& value = valueFor(o);
      value.firstStep = s;
      value.lastStep = std::max(value.lastStep, s);
      if (folded) {
        value.home = ValueHome::kFolded;
        plan.folded[o] = result.folded.at(o);
        value.shapeKnown = true;
        value.shape = plan.folded[o].shape();
      } else if (outputs.count(o) && value.storage == value.modelType) {
        value.home = ValueHome::kOutputBinding;
      } else if (step.placement == LayerPlacement::kAlias && i == 0) {
        value.home = ValueHome::kAlias;
        const PlannedValue& source = valueFor(node.inputs[0]);
        value.aliasRoot = source.home == ValueHome::kAlias ? source.aliasRoot : node.inputs[0];
      } else {
        value.home = value.shapeKnown ? ValueHome::kArena : ValueHome::kDynamic;
      }
    }
    if (!folded) {
      std::vector<std::string> reads(node.inputs.begin(), node.inputs.end());
      for (const std::string& name : node.implicitInputs()) reads.push_back(name);
      for (const std::string& name : reads) {
        if (name.empty()) continue;
        PlannedValue& value = valueFor(name);
        value.lastStep = std::max(value.lastStep, s);
      }
    }
    plan.steps.push_back(std::move(step));
  }
  for (const std::string& name : outputs) valueFor(name).lastStep = stepCount;
  // A float32 input of a 16-bit engine that only Transposes read (through views) stays in its
  // binding: the Transposes narrow it as they copy, with no conversion pass (measured in
  // docs/benchmarks.md, nineteenth session).
  if (engine.options().narrowInputsInTransposes) {
    for (const ValueInfo& v : graph.inputs) {
      if (graph.initializers.count(v.name)) continue;
      PlannedValue& value = valueFor(v.name);
      if (value.modelType != DataType::kFloat32 || value.storage == value.modelType) continue;
      std::vector<std::string> views;
      if (!readOnlyByTransposes(v.name, graph, plan.steps, outputs, &views)) continue;
      value.storage = value.modelType;
      value.home = ValueHome::kInputBinding;
      for (const std::string& view : views) valueFor(view).storage = value.modelType;
    }
  }
  // A view keeps its root's bytes alive.
  for (auto& [name, value] : plan.values) {
    if (value.home != ValueHome::kAlias) continue;
    PlannedValue& root = valueFor(value.aliasRoot);
    root.lastStep = std::max(root.lastStep, value.lastStep);
  }
  // Pack the arena.
  std::vector<std::string> arenaNames;
  std::vector<BufferLifetime> lifetimes;
  for (auto& [name, value] : plan.values) {
    if (value.home != ValueHome::kArena) continue;
    arenaNames.push_back(name);
    int64_t bytes = shapeNumel(value.shape) * static_cast<int64_t>(dataTypeSize(value.storage));
    lifetimes.push_back({bytes, value.firstStep, std::max(value.lastStep, value.firstStep)});
  }
  MemoryPlan memory = planMemory(lifetimes);
  for (size_t i = 0; i < arenaNames.size(); ++i)
    plan.values[arenaNames[i]].offset = memory.offsets[i];
  plan.arenaBytes = memory.arenaBytes;
  plan.unsharedBytes = memory.unsharedBytes;
  // Release points: after the last step that reads a value (graph outputs live on).
  for (auto& [name, value] : plan.values) {
    if (outputs.count(name) || value.home == ValueHome::kWeight || value.home == ValueHome::kFolded)
      continue;
    if (value.lastStep >= 0 && value.lastStep < stepCount)
      plan.steps[value.lastStep].releaseAfter.push_back(name);
  }
  return plan;
}

}  // namespace kiln::cuda
