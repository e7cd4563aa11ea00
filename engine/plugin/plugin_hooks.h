// Where plugins enter the engine's backend-free seams, each through one function: the
// shape rule, the ONNX importer's support check and mapping. The CPU kernel lookup
// (executor, tactics) is in plugin_cpu_hooks.h, so the importer and shape inference,
// which include this, include no backend. Internal to kiln_engine.
#pragma once

#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "shape/shape_rules.h"

namespace kiln {

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
