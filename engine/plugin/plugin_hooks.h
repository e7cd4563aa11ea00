// Where plugins enter the engine's seams, each through one function: the CPU
// kernel lookup (executor, tactics, shape folding), the shape rule, the ONNX
// importer's support check and mapping, and the builder's plugin step.
// Internal to kiln_engine.
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/kernel.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "shape/shape_rules.h"

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

namespace shape {
// The shape rule of every plugin layer: the plugin's output types and symbolic
// output shapes. False (not inferred) when an input's type or shape is unknown or
// the plugin fails.
bool pluginShapeRule(const Node& node, const std::vector<RuleInput>& inputs,
                     std::vector<RuleOutput>* outputs);
}  // namespace shape

namespace onnx_import {
// True when a registered creator has the name `opType`. The namespace and version,
// which the node's attributes may set, are matched exactly after conversion.
bool pluginMayProvide(const std::string& opType);
// After conversion: records each plugin layer's INT8 scales from its Q/DQ
// neighbours; with `check`, creates every plugin layer once (so attributes become
// fields and are checked) and lists every node that does not resolve in one error.
Status mapPluginNodes(Network& network, bool check);
}  // namespace onnx_import

}  // namespace kiln
