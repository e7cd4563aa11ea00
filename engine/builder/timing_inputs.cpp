// Timing inputs. Tactic times do not depend on the values a layer reads, so each
// layer is timed on synthetic inputs of the opt shapes: weights and folded shape
// values as they are, seeded random data for the rest. A layer that needs real
// values (control flow, data-dependent shapes, or every tactic failing on random
// data) gets them from one reference run of the whole network, made only then.
#include "builder/build_steps.h"

#include <algorithm>
#include <cstring>

#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "kiln/tensor_size.h"

namespace kiln::build {
namespace {

bool readsOuterScope(const Node& node) {
  return !node.implicitInputs().empty();
}

}  // namespace

TimingInputs::TimingInputs(const Network& network, std::map<std::string, Shape> optShapes,
                           uint64_t seed)
    : m_network(network), m_optShapes(std::move(optShapes)), m_seed(seed) {}

Status TimingInputs::inferShapes() {
  KILN_ASSIGN_OR_RETURN(ShapeInferenceResult inferred, kiln::inferShapes(m_network, m_optShapes));
  for (const auto& [name, value] : inferred.values) {
    ValueMeta meta{value.type, {}, value.hasShape};
    for (const DimExpr& d : value.shape) {
      std::optional<int64_t> v = d.evaluate();
      meta.shapeKnown = meta.shapeKnown && v.has_value();
      meta.shape.push_back(v.value_or(-1));
    }
    m_metas[name] = meta;
  }
  m_folded = std::move(inferred.folded);
  for (const auto& [name, t] : m_network.graph.initializers) m_constants.insert(name);
  for (const auto& [name, t] : m_folded) m_constants.insert(name);
  return Status::ok();
}

Status TimingInputs::runReference() {
  if (m_reference) return Status::ok();
  std::map<std::string, Tensor> inputs;
  uint64_t index = 0;
  for (const ValueInfo& in : m_network.graph.inputs) {
    if (m_network.graph.initializers.count(in.name)) continue;
    KILN_ASSIGN_OR_RETURN(
        inputs[in.name],
        randomInput(in.type, m_optShapes.at(in.name), m_seed + index++, "input '" + in.name + "'"));
  }
  ReferenceRunOptions options;
  for (const Node& node : m_network.graph.nodes)
    for (const std::string& out : node.outputs)
      if (!out.empty()) options.extraOutputs.push_back(out);
  std::vector<NamedTensor> outputs;
  KILN_RETURN_IF_ERROR_CTX(ReferenceBackend(m_network).run(inputs, &outputs, options),
                           "reference run at the opt shapes");
  m_reference.emplace(std::move(inputs));
  for (const auto& [name, t] : m_network.graph.initializers) (*m_reference)[name] = t;
  for (NamedTensor& named : outputs) (*m_reference)[named.name] = std::move(named.tensor);
  for (const auto& [name, t] : *m_reference) m_metas[name] = {t.type(), t.shape(), true};
  return Status::ok();
}

const Tensor& TimingInputs::syntheticTensor(const ValueMeta& meta) {
  // One random tensor per type and shape serves every layer that reads one: the
  // values do not matter for timing. Made by repeating one seeded random block of
  // the type: generating every element (randomInputTensor, ~10 ns each) took 1-7 s
  // per layer of DenseNet-121 at batch 256, whose concatenations give nearly every
  // layer a new shape (234 s of a 234 s build on an H200, 2026-11-29).
  const std::string key = std::string(dataTypeName(meta.type)) + shapeToString(meta.shape);
  auto it = m_synthetic.find(key);
  if (it != m_synthetic.end()) return it->second;
  Tensor tensor = meta.type == DataType::kString
                      ? randomInputTensor(meta.type, meta.shape, m_seed + m_synthetic.size())
                      : repeatedRandom(meta.type, meta.shape);
  m_syntheticBytes += tensor.byteSize();
  return m_synthetic.emplace(key, std::move(tensor)).first->second;
}

Tensor TimingInputs::repeatedRandom(DataType type, const Shape& shape) {
  auto block = m_randomBlocks.find(type);
  if (block == m_randomBlocks.end())
    block = m_randomBlocks
                .emplace(type, randomInputTensor(type, {kRandomBlockElements},
                                                 m_seed + m_randomBlocks.size()))
                .first;
  Tensor out(type, shape);
  auto* dst = static_cast<unsigned char*>(out.rawData());
  const auto* src = static_cast<const unsigned char*>(block->second.rawData());
  const size_t total = out.byteSize(), period = block->second.byteSize();
  for (size_t done = 0; done < total; done += period)
    std::memcpy(dst + done, src, std::min(period, total - done));
  return out;
}

bool TimingInputs::needsExact(const Node& node) const {
  if (readsOuterScope(node)) return true;
  for (const std::string& name : node.inputs) {
    auto meta = m_metas.find(name);
    if (!name.empty() && !m_constants.count(name) &&
        (meta == m_metas.end() || !meta->second.shapeKnown))
      return true;
  }
  return false;
}

Result<const LayerInputs*> TimingInputs::forNode(const Node& node, bool exact) {
  m_current = {};
  // The previous node's inputs are no longer needed: a full cache starts again, so a
  // model whose every layer has new shapes does not keep them all in host memory.
  if (m_syntheticBytes > kSyntheticCacheBytes) {
    m_synthetic.clear();
    m_syntheticBytes = 0;
  }
  const bool synthetic = !exact && !needsExact(node);
  if (!synthetic) KILN_RETURN_IF_ERROR(runReference());
  for (const std::string& name : node.inputs) {
    const Tensor* tensor = nullptr;
    if (name.empty()) {
    } else if (auto w = m_network.graph.initializers.find(name);
               w != m_network.graph.initializers.end()) {
      tensor = &w->second;
    } else if (auto f = m_folded.find(name); f != m_folded.end()) {
      tensor = &f->second;
    } else if (!synthetic) {
      tensor = &m_reference->at(name);
    } else {
      tensor = &syntheticTensor(m_metas.at(name));
    }
    m_current.inputs.push_back(tensor);
    m_current.constant.push_back(m_constants.count(name) != 0);
  }
  for (const std::string& name : node.implicitInputs())
    m_current.outerValues[name] = m_reference->at(name);
  m_lastWasSynthetic = synthetic;
  return &m_current;
}

}  // namespace kiln::build
