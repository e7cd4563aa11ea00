// fuse_pointwise_chain: a connected group of elementwise ops whose intermediates are
// read inside the group alone becomes one ai.kiln PointwiseChain node, named in
// TensorRT's style "PWN(Add_5, Relu_6)". The algebra is composition: for
// elementwise f, g and numpy broadcasting B,
//   g(f(B(x, y)), B(z)) = h(B(x, y, z))   with h = g . f applied per output element,
// so the group computes its one output from one element of each broadcast input,
// and the intermediates never reach memory. h is the node's expression program
// (ir/pointwise_program.h); one-element float constants are inlined into it when
// they cannot widen the result's rank, other constants stay node inputs.
// The ops: Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Neg, Abs, Erf, Reciprocal, Gelu,
// Clip (constant bounds), LeakyRelu, HardSigmoid, HardSwish, Softplus, Cast between
// float32 / float16 / bfloat16, and Add, Sub, Mul, Div, Pow, Max, Min of two
// operands; every value involved of one of those three types. Where is not taken
// (its condition is bool). Groups are maximal: roots are found from the graph's end
// and grow backwards (a producer joins once every reader of its output is in the
// group, so diamonds fuse whole); a group needs two ops, or one binary op broadcasting
// one computed value over another (squeeze-excitation's scale), and takes 128 at most.
// Numerics: the chain computes in float32 and rounds to 16 bits only at Cast steps
// and the output, where the unfused graph rounds after every op (identical at float32).
#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "ir/pointwise_program.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fuse_pointwise_chain";
// The generated CUDA kernel takes one pointer and one stride set per input.
constexpr size_t kMaxInputs = 16;
// A longer chain splits: NVRTC's compile time grows with the program, the saved
// memory traffic does not (one read and one write per element either way).
constexpr size_t kMaxOps = 128;

// One graph node read as a program step: its op and parameters, and per operand
// either the value it reads or the constant inlined in its place.
struct NodeStep {
  PointwiseStep step;
  std::vector<std::string> values;      // "" where a constant is inlined
  std::vector<float> inlinedConstants;  // one per operand (used where values[k] is "")
};

bool isUnary(const std::string& op) {
  static const std::set<std::string> kPlain = {
      "Relu", "Sigmoid",    "Tanh",     "Exp",       "Log", "Sqrt",      "Neg",
      "Abs",  "Reciprocal", "Softplus", "HardSwish", "Erf", "LeakyRelu", "HardSigmoid"};
  return kPlain.count(op) != 0;
}

bool isBinary(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Max" ||
         op == "Min";
}

// Clip's bounds: attributes before opset 11, optional one-element constant inputs after.
bool clipBounds(const Node& n, const GraphIndex& index, NodeStep* s) {
  if (n.opset < 11) {
    s->step.alpha = n.attrFloat("min", std::numeric_limits<float>::lowest());
    s->step.beta = n.attrFloat("max", std::numeric_limits<float>::max());
    return n.inputs.size() == 1;
  }
  float* bounds[2] = {&s->step.alpha, &s->step.beta};
  const float defaults[2] = {-std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::infinity()};
  for (size_t k = 0; k < 2; ++k) {
    *bounds[k] = defaults[k];
    if (!n.hasInput(k + 1)) continue;
    double v = 0;
    if (!scalarValue(index.constant(n.inputs[k + 1]), &v)) return false;
    *bounds[k] = static_cast<float>(v);
  }
  return n.inputs.size() <= 3;
}

// Operand k of a binary node inlined as a constant: a one-element float constant
// whose rank cannot widen the result (the other operand is not constant and has at
// least its rank).
bool inlineOperand(const Node& n, size_t k, const GraphIndex& index, const Shapes& shapes,
                   float* value) {
  const Tensor* c = index.constant(n.inputs[k]);
  const SymbolicShape* other = shapeOf(shapes, n.inputs[1 - k]);
  double v = 0;
  if (!c || index.constant(n.inputs[1 - k]) || !other || c->rank() > int(other->size()) ||
      !scalarValue(c, &v))
    return false;
  *value = static_cast<float>(v);
  return true;
}

// Reads `n` as a program step, or false when it is not one the chain takes.
bool readStep(const Node& n, const GraphIndex& index, const Shapes& shapes, NodeStep* s) {
  const bool kilnGelu = n.domain == kKilnDomain && n.opType == "Gelu";
  if ((!isDefaultDomain(n) && !kilnGelu) || n.outputs.size() != 1 || n.outputs[0].empty() ||
      n.inputs.empty() || n.hasSubgraphs() || !parsePointwiseOp(n.opType, &s->step.op))
    return false;
  s->step.type = typeOf(shapes, n.outputs[0]);
  if (!isPointwiseType(s->step.type) || !isPointwiseType(typeOf(shapes, n.inputs[0]))) return false;
  const std::string& op = n.opType;
  s->values = {n.inputs[0]};
  s->inlinedConstants = {0.f};
  if (isBinary(op)) {
    if (n.inputs.size() != 2 || !isPointwiseType(typeOf(shapes, n.inputs[1]))) return false;
    s->values.push_back(n.inputs[1]);
    s->inlinedConstants.push_back(0.f);
    for (size_t k = 0; k < 2; ++k)
      if (inlineOperand(n, k, index, shapes, &s->inlinedConstants[k])) {
        s->values[k].clear();
        break;
      }
    return true;
  }
  if (op == "Clip") return clipBounds(n, index, s);
  if (n.inputs.size() != 1) return false;
  if (op == "Gelu") {
    const std::string form = n.attrString("approximate", "none");
    s->step.alpha = form == "tanh" ? 1.f : 0.f;
    return form == "none" || form == "tanh";
  }
  if (op == "LeakyRelu") s->step.alpha = n.attrFloat("alpha", 0.01f);
  if (op == "HardSigmoid") {
    s->step.alpha = n.attrFloat("alpha", 0.2f);
    s->step.beta = n.attrFloat("beta", 0.5f);
  }
  return op == "Cast" || isUnary(op);
}

// The group rooted at node `root`: every node of it is eligible and unclaimed, and
// every value one writes is read inside the group alone (the root's excepted).
// One sweep from the root down the topological order reaches the fixed point: a
// member joins while its consumer is visited, so it is in before it is visited
// itself, and every member reading a producer's value asks for it, the last of
// them once all who ever join have joined (a diamond's shared input joins whole).
std::vector<int> growGroup(int root, const GraphIndex& index, const std::map<int, NodeStep>& steps,
                           const std::set<int>& claimed) {
  std::set<int> group = {root};
  for (int member = root;;) {
    for (const std::string& value : steps.at(member).values) {
      const int p = value.empty() ? -1 : index.producer(value);
      if (p >= 0 && group.size() < kMaxOps && !group.count(p) && !claimed.count(p) &&
          steps.count(p) && readOnlyBy(index, value, group))
        group.insert(p);
    }
    auto next = group.lower_bound(member);  // the next member down, joined or not yet seen
    if (next == group.begin()) break;
    member = *std::prev(next);
  }
  return std::vector<int>(group.begin(), group.end());
}

// A lone binary step between two computed values of different shapes (squeeze-
// excitation's x * s, s [N, C, 1, 1]): a chain of one, whose generated kernel reads the
// broadcast operand in packs where the unfused op's kernel cannot (both are timed).
bool broadcastsBetweenValues(const Node& n, const NodeStep& s, const GraphIndex& index,
                             const Shapes& shapes) {
  if (s.values.size() != 2 || s.values[0].empty() || s.values[1].empty() ||
      index.constant(s.values[0]) || index.constant(s.values[1]) || n.inputs.size() != 2)
    return false;
  const SymbolicShape* a = shapeOf(shapes, s.values[0]);
  const SymbolicShape* b = shapeOf(shapes, s.values[1]);
  return a && b && !(*a == *b);
}

// The PointwiseChain node computing `members` (ascending; the last is the root).
Node chainNode(const Graph& g, const std::vector<int>& members,
               const std::map<int, NodeStep>& steps) {
  Node node;
  node.opType = kPointwiseChainOp;
  node.domain = kKilnDomain;
  node.opset = 1;
  node.name = "PWN(";
  for (size_t i = 0; i < members.size(); ++i)
    node.name += (i ? ", " : "") + g.nodes[members[i]].displayName();
  node.name += ")";
  std::set<std::string> produced;
  for (int m : members) produced.insert(g.nodes[m].outputs[0]);
  // Value ids need the input and constant counts first: operands are written with
  // placeholders (inputs as themselves, constants as -1 - k, steps as -1000 - s).
  std::map<std::string, int> stepOf;
  PointwiseProgram program;
  for (int m : members) {
    const NodeStep& ns = steps.at(m);
    PointwiseStep step = ns.step;
    step.operands.clear();
    for (size_t k = 0; k < ns.values.size(); ++k) {
      const std::string& v = ns.values[k];
      if (v.empty()) {
        program.constants.push_back(ns.inlinedConstants[k]);
        step.operands.push_back(-1 - static_cast<int>(program.constants.size() - 1));
      } else if (produced.count(v)) {
        step.operands.push_back(-1000 - stepOf.at(v));
      } else {
        auto it = std::find(node.inputs.begin(), node.inputs.end(), v);
        if (it == node.inputs.end()) it = node.inputs.insert(node.inputs.end(), v);
        step.operands.push_back(static_cast<int>(it - node.inputs.begin()));
      }
    }
    stepOf[g.nodes[m].outputs[0]] = static_cast<int>(program.steps.size());
    program.steps.push_back(std::move(step));
  }
  program.inputCount = static_cast<int>(node.inputs.size());
  for (PointwiseStep& step : program.steps)
    for (int& id : step.operands) {
      if (id <= -1000)
        id = program.stepValue(static_cast<size_t>(-1000 - id));
      else if (id < 0)
        id = program.inputCount + (-1 - id);
    }
  writePointwiseProgram(program, &node);
  node.outputs = {g.nodes[members.back()].outputs[0]};
  return node;
}

class FusePointwiseChain final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "elementwise ops whose intermediates stay inside -> PointwiseChain "
            "(one generated kernel: h = g . f per broadcast element)",
            2};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const Shapes shapes = inferredShapesOrNone(network);
    std::vector<std::pair<std::vector<std::string>, Node>> rewrites;  // member outputs, node
    {
      const GraphIndex index(g);
      std::map<int, NodeStep> steps;
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        NodeStep s;
        if (readStep(g.nodes[i], index, shapes, &s)) steps[static_cast<int>(i)] = std::move(s);
      }
      // From the end: a consumer's group is grown before its producers are roots.
      std::set<int> claimed;
      for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
        if (claimed.count(it->first)) continue;
        const std::vector<int> members = growGroup(it->first, index, steps, claimed);
        if (members.size() < 2 &&
            !broadcastsBetweenValues(g.nodes[members[0]], steps.at(members[0]), index, shapes))
          continue;
        Node node = chainNode(g, members, steps);
        if (node.inputs.size() > kMaxInputs) continue;
        claimed.insert(members.begin(), members.end());
        std::vector<std::string> outputs;
        for (int m : members) outputs.push_back(g.nodes[m].outputs[0]);
        rewrites.emplace_back(std::move(outputs), std::move(node));
      }
    }
    for (auto& [outputs, node] : rewrites) {
      std::map<std::string, int> writer;  // indices move with each rewrite
      for (size_t i = 0; i < g.nodes.size(); ++i)
        for (const std::string& out : g.nodes[i].outputs) writer[out] = static_cast<int>(i);
      std::vector<int> members;
      for (const std::string& out : outputs) members.push_back(writer.at(out));
      std::sort(members.begin(), members.end());
      applied->push_back({kName, sourceNodesOf(g, members), node.name});
      replaceNodes(g, members, std::move(node), kName);
    }
    if (!rewrites.empty()) network.opsets[kKilnDomain] = 1;
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFusePointwiseChain() {
  return std::make_unique<FusePointwiseChain>();
}

}  // namespace kiln::passes
