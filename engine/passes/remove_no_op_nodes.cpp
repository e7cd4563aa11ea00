// remove_no_op_nodes: a node whose output always equals one of its inputs goes, and
// its readers read that input (a graph output keeps its name: the input's writer
// takes it). The identities, each an exact equality:
//   Identity(x) = x
//   Dropout(x) = x in inference (before opset 12 always; since, with training_mode
//     absent or a constant false), its mask output unread
//   Cast(x, to = type(x)) = x,  CastLike(x, t) = x when type(t) = type(x)
//   Reshape / Flatten / Squeeze / Unsqueeze / Expand(x) = x when the output's inferred
//     shape is x's (symbolic dims equal as expressions, so true for every binding)
//   Transpose(x, perm = (0, 1, ..., n-1)) = x (and any rank <= 1 Transpose)
//   x + 0 = 0 + x = x - 0 = x * 1 = 1 * x = x / 1 = x, the constant's every element
//     the neutral one and the output's shape and type x's (no broadcast growth)
//   Pad(x, pads all 0) = x (any mode)
//   Slice(x) with every step 1 = x when the output's shape is x's (a unit-step range
//     of the full length is the whole axis)
//   Resize(x) = x when the output's shape is x's and every scale is 1 (or sizes give the
//     shape): each position then maps to itself, which both backends pass through
//     (SegFormer's decoder resizes its finest map to its own size); not for
//     tf_crop_and_resize (a crop) or tf_half_pixel_for_nn (a half-pixel shift that a
//     nearest ceil rounds to the next element)
// And one input at its default: an RNN / GRU / LSTM initial_h or initial_c that is a constant
// of zeros (the exporters' ConstantOfShape, folded at a fixed shape) is left out, which the
// op defines as zeros: Sequencer2D-S at batch 128 kept 72 such states, 100 MB of plan.
// Runs first, so the nodes exporters leave between the ops of a pattern (a Dropout
// between a GEMM and its residual, an Identity after a Transpose) do not hide it.
#include <algorithm>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "remove_no_op_nodes";

bool inferenceDropout(const Node& node, const GraphIndex& index) {
  if (node.outputs.size() > 1 && !node.outputs[1].empty() &&
      !index.readers(node.outputs[1]).empty())
    return false;  // the mask is read
  if (node.opset < 12 || !node.hasInput(2)) return true;
  return allElementsEqual(index.constant(node.inputs[2]), 0.0);
}

// x op c = x for the neutral constant c (rewrite::neutralOperand), x of the output's shape.
bool neutralOperandOfSameShape(const Node& node, const GraphIndex& index, const Shapes& shapes,
                               std::string* source) {
  const std::string x = neutralOperand(node, index);
  if (x.empty() || !sameShapeAndType(shapes, x, node.outputs[0])) return false;
  *source = x;
  return true;
}

bool identityPermutation(const Node& node, const Shapes& shapes) {
  if (!node.hasAttr("perm")) {
    const SymbolicShape* s = shapeOf(shapes, node.inputs[0]);
    return s && s->size() <= 1;  // the default perm reverses the axes
  }
  const std::vector<int64_t> perm = node.attrInts("perm");
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

bool zeroPads(const Node& node, const GraphIndex& index) {
  if (node.opset < 11) {
    const std::vector<int64_t> pads = node.attrInts("pads");
    return !pads.empty() && std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  }
  return node.hasInput(1) && allElementsEqual(index.constant(node.inputs[1]), 0.0);
}

bool unitSteps(const Node& node, const GraphIndex& index) {
  if (node.opset < 10 || !node.hasInput(4)) return true;
  return allElementsEqual(index.constant(node.inputs[4]), 1.0);
}

// A Resize's scales are all 1 (a constant), or it has none and sizes set the shape.
bool unitResizeScales(const Node& node, const GraphIndex& index) {
  const std::string mode = node.attrString("coordinate_transformation_mode", "half_pixel");
  if (node.opset >= 11 && (mode == "tf_crop_and_resize" || mode == "tf_half_pixel_for_nn"))
    return false;
  const size_t scalesSlot = node.opset < 11 ? 1 : 2;
  if (!node.hasInput(scalesSlot)) return node.opset >= 11 && node.hasInput(3);
  const Tensor* scales = index.constant(node.inputs[scalesSlot]);
  if (!scales) return false;
  if (scales->numel() == 0) return node.opset >= 11 && node.hasInput(3);
  return allElementsEqual(scales, 1.0);
}

// The input node `node`'s output always equals, or false.
bool noOpSource(const Node& node, const GraphIndex& index, const Shapes& shapes,
                std::string* source) {
  if ((!node.domain.empty() && node.domain != "ai.onnx") || node.inputs.empty() ||
      node.inputs[0].empty() || node.outputs.empty() || node.outputs[0].empty())
    return false;
  const std::string& op = node.opType;
  const std::string& x = node.inputs[0];
  const std::string& y = node.outputs[0];
  *source = x;
  if (op == "Identity") return node.inputs.size() == 1;
  if (op == "Dropout") return inferenceDropout(node, index);
  if (op == "Cast") {
    const DataType t = typeOf(shapes, x);
    return t != DataType::kUndefined && static_cast<int64_t>(t) == node.attrInt("to", -1);
  }
  if (op == "CastLike") {
    const DataType t = typeOf(shapes, x);
    return node.inputs.size() == 2 && t != DataType::kUndefined &&
           t == typeOf(shapes, node.inputs[1]);
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Expand")
    return sameShapeAndType(shapes, x, y);
  if (op == "Transpose") return node.inputs.size() == 1 && identityPermutation(node, shapes);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div")
    return neutralOperandOfSameShape(node, index, shapes, source);
  if (op == "Pad") return zeroPads(node, index);
  if (op == "Slice") return unitSteps(node, index) && sameShapeAndType(shapes, x, y);
  if (op == "Resize") return unitResizeScales(node, index) && sameShapeAndType(shapes, x, y);
  return false;
}

class RemoveNoOpNodes final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Identity, inference Dropout, same-type Cast, same-shape Reshape/Expand/Slice, "
            "identity Transpose, x+0, x*1, x/1, zero Pad, same-size Resize -> removed (readers "
            "read x); zero RNN / GRU / LSTM initial states -> left out",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    // Removing a node renames no value that stays, so one inference serves every match.
    const Shapes shapes = inferredShapesOrNone(network);
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size();) {
      std::string source;
      const std::string name = g.nodes[at].displayName();
      if (!noOpSource(g.nodes[at], *index, shapes, &source) ||
          !bypassNode(g, *index, static_cast<int>(at), source)) {
        ++at;
        continue;
      }
      applied->push_back({kName, {name}, ""});
      index = std::make_unique<GraphIndex>(g);  // indices moved
    }
    for (Node& node : g.nodes) {
      if (!dropZeroInitialStates(node, *index)) continue;
      applied->push_back({kName, {node.displayName()}, ""});
    }
    return Status::ok();
  }

 private:
  // Clears a recurrent node's initial_h (input 5) and LSTM's initial_c (input 6) when each is a
  // constant of zeros, then the empty inputs at the end; true when one went.
  static bool dropZeroInitialStates(Node& node, const GraphIndex& index) {
    if (!isDefaultDomain(node) ||
        (node.opType != "RNN" && node.opType != "GRU" && node.opType != "LSTM"))
      return false;
    bool dropped = false;
    constexpr size_t kInitialH = 5, kInitialC = 6;  // the ONNX input slots
    for (size_t i : {kInitialH, kInitialC}) {
      if (i >= node.inputs.size() || node.inputs[i].empty() ||
          !allElementsEqual(index.constant(node.inputs[i]), 0.0))
        continue;
      node.inputs[i].clear();
      dropped = true;
    }
    while (!node.inputs.empty() && node.inputs.back().empty()) node.inputs.pop_back();
    return dropped;
  }
};

}  // namespace

std::unique_ptr<Pass> makeRemoveNoOpNodes() {
  return std::make_unique<RemoveNoOpNodes>();
}

}  // namespace kiln::passes
