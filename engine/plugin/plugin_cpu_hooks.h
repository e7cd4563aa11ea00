// Where plugins enter the CPU backend: the kernel lookup of the executor and the CPU
// tactics, which finds a plugin layer's kernel beside the built-in ones. Internal to
// kiln_engine (the backend-free seams are in plugin_hooks.h).
#pragma once

#include "backends/cpu/kernel.h"
#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln {

// The CPU tactic of a plugin layer (its executeCpu()).
constexpr const char* kPluginCpuTactic = "cpu.plugin";

namespace cpu {
// Runs a plugin layer on the host through its CPU implementation: output types and
// shapes from the plugin, the format check, configure, onShapeChange, executeCpu.
Status runPluginKernel(KernelContext& context);
// The kernel of `node` at `opset`: its built-in kernel, the plugin kernel when the
// node is a plugin layer (isPluginNode), else nullptr.
const KernelEntry* findNodeKernel(const Node& node, int opset);
}  // namespace cpu

}  // namespace kiln
