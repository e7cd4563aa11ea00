#include "ir/pointwise_program.h"

#include <sstream>

namespace kiln {
namespace {

struct OpEntry {
  PointwiseOp op;
  const char* name;
  int arity;
};

constexpr OpEntry kOps[] = {
    {PointwiseOp::kRelu, "Relu", 1},
    {PointwiseOp::kSigmoid, "Sigmoid", 1},
    {PointwiseOp::kTanh, "Tanh", 1},
    {PointwiseOp::kExp, "Exp", 1},
    {PointwiseOp::kLog, "Log", 1},
    {PointwiseOp::kSqrt, "Sqrt", 1},
    {PointwiseOp::kNeg, "Neg", 1},
    {PointwiseOp::kAbs, "Abs", 1},
    {PointwiseOp::kErf, "Erf", 1},
    {PointwiseOp::kReciprocal, "Reciprocal", 1},
    {PointwiseOp::kGelu, "Gelu", 1},
    {PointwiseOp::kClip, "Clip", 1},
    {PointwiseOp::kLeakyRelu, "LeakyRelu", 1},
    {PointwiseOp::kHardSigmoid, "HardSigmoid", 1},
    {PointwiseOp::kHardSwish, "HardSwish", 1},
    {PointwiseOp::kSoftplus, "Softplus", 1},
    {PointwiseOp::kCast, "Cast", 1},
    {PointwiseOp::kAdd, "Add", 2},
    {PointwiseOp::kSub, "Sub", 2},
    {PointwiseOp::kMul, "Mul", 2},
    {PointwiseOp::kDiv, "Div", 2},
    {PointwiseOp::kPow, "Pow", 2},
    {PointwiseOp::kMax, "Max", 2},
    {PointwiseOp::kMin, "Min", 2},
};

const OpEntry& entryOf(PointwiseOp op) {
  return kOps[static_cast<size_t>(op)];  // kOps lists the enum in order
}

Status programError(const Node& node, const std::string& message) {
  return invalidArgument(node.describe() + ": pointwise program: " + message);
}

}  // namespace

const char* pointwiseOpName(PointwiseOp op) {
  return entryOf(op).name;
}

int pointwiseArity(PointwiseOp op) {
  return entryOf(op).arity;
}

bool parsePointwiseOp(const std::string& name, PointwiseOp* op) {
  for (const OpEntry& e : kOps) {
    if (name == e.name) {
      *op = e.op;
      return true;
    }
  }
  return false;
}

bool isPointwiseType(DataType type) {
  return type == DataType::kFloat32 || type == DataType::kFloat16 || type == DataType::kBFloat16;
}

Result<PointwiseProgram> readPointwiseProgram(const Node& node) {
  PointwiseProgram p;
  p.inputCount = static_cast<int>(node.inputs.size());
  p.constants = node.attrFloats("constants");
  const std::vector<std::string> ops = node.attrStrings("ops");
  const std::vector<int64_t> operands = node.attrInts("operands");
  const std::vector<float> alphas = node.attrFloats("alphas");
  const std::vector<float> betas = node.attrFloats("betas");
  const std::vector<int64_t> types = node.attrInts("types");
  if (ops.empty()) return programError(node, "attribute 'ops' is missing or empty");
  if (alphas.size() != ops.size() || betas.size() != ops.size() || types.size() != ops.size())
    return programError(node, "'alphas', 'betas' and 'types' need one entry per op (" +
                                  std::to_string(ops.size()) + ")");
  size_t next = 0;
  for (size_t s = 0; s < ops.size(); ++s) {
    PointwiseStep step;
    if (!parsePointwiseOp(ops[s], &step.op))
      return programError(node, "unknown op '" + ops[s] + "' at step " + std::to_string(s));
    const int arity = pointwiseArity(step.op);
    if (next + arity > operands.size())
      return programError(node, "'operands' ends before step " + std::to_string(s));
    for (int k = 0; k < arity; ++k) {
      const int64_t id = operands[next++];
      if (id < 0 || id >= p.stepValue(s))
        return programError(node, "step " + std::to_string(s) + " reads value " +
                                      std::to_string(id) + ", not defined before it");
      step.operands.push_back(static_cast<int>(id));
    }
    step.alpha = alphas[s];
    step.beta = betas[s];
    step.type = static_cast<DataType>(types[s]);
    if (!isPointwiseType(step.type))
      return programError(node, "step " + std::to_string(s) + " has type code " +
                                    std::to_string(types[s]) +
                                    " (float32, float16 or bfloat16 only)");
    p.steps.push_back(std::move(step));
  }
  if (next != operands.size())
    return programError(node, "'operands' has " + std::to_string(operands.size() - next) +
                                  " entries more than the ops read");
  return p;
}

void writePointwiseProgram(const PointwiseProgram& program, Node* node) {
  std::vector<std::string> ops;
  std::vector<int64_t> operands, types;
  std::vector<float> alphas, betas;
  for (const PointwiseStep& step : program.steps) {
    ops.push_back(pointwiseOpName(step.op));
    operands.insert(operands.end(), step.operands.begin(), step.operands.end());
    alphas.push_back(step.alpha);
    betas.push_back(step.beta);
    types.push_back(static_cast<int64_t>(step.type));
  }
  auto floats = [](std::vector<float> values) {
    Attribute a;
    a.kind = Attribute::Kind::kFloats;
    a.floats = std::move(values);
    return a;
  };
  auto ints = [](std::vector<int64_t> values) {
    Attribute a;
    a.kind = Attribute::Kind::kInts;
    a.ints = std::move(values);
    return a;
  };
  Attribute opNames;
  opNames.kind = Attribute::Kind::kStrings;
  opNames.strings = std::move(ops);
  node->attributes["ops"] = std::move(opNames);
  node->attributes["operands"] = ints(std::move(operands));
  node->attributes["constants"] = floats(program.constants);
  node->attributes["alphas"] = floats(std::move(alphas));
  node->attributes["betas"] = floats(std::move(betas));
  node->attributes["types"] = ints(std::move(types));
}

std::string describePointwiseProgram(const PointwiseProgram& program) {
  std::ostringstream s;
  auto value = [&](int id) {
    const int k = id - program.inputCount;
    if (id < program.inputCount)
      s << "in" << id;
    else if (k < static_cast<int>(program.constants.size()))
      s << program.constants[k];
    else
      s << "v" << k - static_cast<int>(program.constants.size());
  };
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const PointwiseStep& step = program.steps[i];
    s << (i ? "; " : "") << "v" << i << " = " << pointwiseOpName(step.op) << "(";
    for (size_t k = 0; k < step.operands.size(); ++k) {
      if (k) s << ", ";
      value(step.operands[k]);
    }
    if (step.op == PointwiseOp::kCast) s << " -> " << dataTypeName(step.type);
    s << ")";
  }
  return s.str();
}

}  // namespace kiln
