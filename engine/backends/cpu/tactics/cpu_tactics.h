// The CPU backend's tactics: for each node, the kernels that can run it (the
// reference kernel, BLAS-free loop kernels for Conv/MatMul/Gemm), and how a layer
// runs at a reduced precision on the host (float32 values rounded to float16 or
// bfloat16 around the kernel). Used by the CPU build backend (timing) and by the
// executor (running a plan's choices).
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

constexpr const char* kReferenceTactic = "cpu.reference";

struct CpuTactic {
  std::string name;
  uint32_t source = 0;  // a TacticSource bit
  KernelFn fn = nullptr;
};

// The tactics for `node` at `opset`, the heuristic's pick first; empty when the
// node has no CPU kernel at all.
std::vector<CpuTactic> cpuTactics(const Node& node, int opset);
// The kernel of tactic `name` for `node`, or nullptr when it does not apply.
KernelFn findCpuTactic(const Node& node, int opset, const std::string& name);

// Runs `fn` on `inputs`. With `precision` float16/bfloat16, float32 inputs are
// converted to it first (but a FusedConvMaxPool's y_scale, float32 in every precision)
// and the float outputs converted back to float32 (callers
// guarantee the node's float values are all float32); then float32 outputs are
// rounded through `outputType` when that is float16/bfloat16.
Status runKernelAtPrecision(const Node& node, KernelFn fn, const std::vector<const Tensor*>& inputs,
                            const SubgraphRunner& runner, DataType precision, DataType outputType,
                            std::vector<Tensor>* outputs);

}  // namespace kiln::cpu
