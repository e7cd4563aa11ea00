#include "backends/cpu/kernel.h"

#include "backends/cpu/invoke_kernel.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {

Status KernelContext::requireInputs(size_t count) const {
  for (size_t i = 0; i < count; ++i) {
    if (!hasInput(i)) return error("required input " + std::to_string(i) + " is missing");
  }
  return Status::ok();
}

Tensor& KernelContext::allocateOutput(size_t i, DataType type, const Shape& shape) {
  if (i >= m_outputs.size()) m_outputs.resize(i + 1);
  const std::string name = i < m_node.outputs.size() ? m_node.outputs[i] : std::to_string(i);
  Status size = checkTensorSize(type, shape, "output '" + name + "'");
  if (!size.isOk()) throw TensorSizeError(size.message());
  m_outputs[i] = Tensor(type, shape);
  m_outputs[i].poison();
  return m_outputs[i];
}

Status invokeKernel(KernelFn fn, KernelContext& context) {
  try {
    return fn(context);
  } catch (const TensorSizeError& e) {
    return context.error(e.what());
  }
}

Status KernelContext::error(const std::string& message) const {
  return nodeStatus(StatusCode::kInvalidArgument, m_node, message);
}

Status KernelContext::unsupported(const std::string& message) const {
  return nodeStatus(StatusCode::kUnsupported, m_node, message);
}

void KernelRegistry::add(const std::string& opType, int sinceVersion, int untilVersion, KernelFn fn,
                         const std::string& domain) {
  m_entries.push_back({domain, opType, sinceVersion, untilVersion, fn});
}

const KernelEntry* KernelRegistry::find(const std::string& domain, const std::string& opType,
                                        int opset) const {
  const std::string& d = domain == "ai.onnx" ? std::string() : domain;
  for (const KernelEntry& e : m_entries) {
    if (e.opType == opType && e.domain == d && opset >= e.sinceVersion && opset <= e.untilVersion)
      return &e;
  }
  return nullptr;
}

}  // namespace kiln::cpu
