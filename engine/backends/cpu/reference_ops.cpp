// ops/reference_ops.h answered by the CPU reference kernels.
#include "ops/reference_ops.h"

#include "backends/cpu/invoke_kernel.h"
#include "backends/cpu/kernel.h"

namespace kiln::ops {

bool isKnownOp(const std::string& domain, const std::string& opType, int opset) {
  return cpu::builtinKernels().find(domain, opType, opset) != nullptr;
}

Result<std::vector<Tensor>> evaluateOnHost(const Node& node,
                                           const std::vector<const Tensor*>& inputs) {
  const cpu::KernelEntry* entry = cpu::builtinKernels().find(node.domain, node.opType, node.opset);
  if (!entry) return unsupported(node.describe() + ": no built-in kernel");
  cpu::SubgraphRunner none = [](const Graph&, const std::vector<Tensor>&, std::vector<Tensor>*) {
    return unsupported("no subgraphs when evaluating constants");
  };
  cpu::KernelContext ctx(node, inputs, none);
  KILN_RETURN_IF_ERROR(cpu::invokeKernel(entry->fn, ctx));
  std::vector<Tensor> outputs = std::move(ctx.outputs());
  outputs.resize(node.outputs.size());
  return outputs;
}

}  // namespace kiln::ops
