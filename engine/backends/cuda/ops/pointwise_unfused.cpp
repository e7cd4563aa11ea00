#include "backends/cuda/ops/pointwise_unfused.h"

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_check.h"

namespace kiln::cuda {
namespace {

size_t alignUp(size_t bytes, size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Numpy broadcasting of two shapes; false when they do not broadcast.
// `a` by value: callers pass the running shape as both `a` and `out`.
bool broadcast(const Shape a, const Shape& b, Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    (*out)[i] = x == 1 ? y : x;
  }
  return true;
}

Attribute floatAttr(float v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}

// The ONNX node a step was fused from, at an opset where its CUDA kernel takes the
// step's parameters as attributes (Clip 6; Gelu and the rest 20).
Node stepNode(const PointwiseStep& step, size_t index) {
  Node node;
  node.opType = pointwiseOpName(step.op);
  node.opset = step.op == PointwiseOp::kClip ? 6 : 20;
  node.name = "step" + std::to_string(index) + "_" + node.opType;
  for (size_t k = 0; k < step.operands.size(); ++k)
    node.inputs.push_back(node.name + "_in" + std::to_string(k));
  node.outputs = {node.name + "_out"};
  switch (step.op) {
    case PointwiseOp::kClip:
      node.attributes["min"] = floatAttr(step.alpha);
      node.attributes["max"] = floatAttr(step.beta);
      break;
    case PointwiseOp::kLeakyRelu:
      node.attributes["alpha"] = floatAttr(step.alpha);
      break;
    case PointwiseOp::kHardSigmoid:
      node.attributes["alpha"] = floatAttr(step.alpha);
      node.attributes["beta"] = floatAttr(step.beta);
      break;
    case PointwiseOp::kGelu:
      node.attributes["approximate"].kind = Attribute::Kind::kString;
      node.attributes["approximate"].s = step.alpha != 0.f ? "tanh" : "none";
      break;
    case PointwiseOp::kCast:
      node.attributes["to"].kind = Attribute::Kind::kInt;
      node.attributes["to"].i = static_cast<int64_t>(step.type);
      break;
    default:
      break;
  }
  return node;
}

// `value` in storage type `type`, appended to `bytes` at a 16-byte boundary; returns its offset.
size_t appendConstant(float value, DataType type, std::vector<unsigned char>* bytes) {
  const size_t offset = alignUp(bytes->size(), 16);
  bytes->resize(offset + dataTypeSize(type));
  if (type == DataType::kFloat32) {
    std::memcpy(bytes->data() + offset, &value, sizeof(value));
  } else {
    const uint16_t bits = type == DataType::kFloat16 ? floatToHalf(value) : floatToBFloat16(value);
    std::memcpy(bytes->data() + offset, &bits, sizeof(bits));
  }
  return offset;
}

// One step seen by its op's kernel as a whole node: inputs and output are the chain's
// buffers; nothing else of the layer (workspace, host values) is lent.
class ChainStepContext final : public GpuKernelContext {
 public:
  ChainStepContext(GpuKernelContext& parent, const Node& node, std::vector<DeviceTensor> inputs,
                   const DeviceTensor& output, std::shared_ptr<void>& state)
      : m_parent(parent),
        m_node(node),
        m_inputs(std::move(inputs)),
        m_output(output),
        m_state(state) {}

  const Node& node() const override { return m_node; }
  size_t inputCount() const override { return m_inputs.size(); }
  bool hasInput(size_t i) const override { return i < m_inputs.size(); }
  const DeviceTensor& input(size_t i) const override { return m_inputs[i]; }
  Result<Tensor> hostInput(size_t i) override {
    return unsupported("an unfused chain step reads no host values");
  }
  Status hostRoundTrip(const std::string& why) override { return m_parent.hostRoundTrip(why); }
  size_t outputCount() const override { return 1; }
  bool wantsOutput(size_t i) const override { return i == 0; }
  Result<DeviceTensor> allocateOutput(size_t i, DataType type, const Shape& shape) override {
    if (i != 0 || type != m_output.type || shape != m_output.shape)
      return error("writes " + std::string(dataTypeName(type)) + shapeToString(shape) +
                   ", the chain planned " + dataTypeName(m_output.type) +
                   shapeToString(m_output.shape));
    return m_output;
  }
  Result<void*> workspace(size_t) override {
    return unsupported("an unfused chain step has no workspace");
  }
  Result<void*> libraryWorkspace(size_t) override {
    return unsupported("an unfused chain step has no library workspace");
  }
  cudaStream_t stream() const override { return m_parent.stream(); }
  Libraries& libraries() override { return m_parent.libraries(); }
  const EngineOptions& options() const override { return m_parent.options(); }
  DataType floatType() const override { return m_parent.floatType(); }
  std::shared_ptr<void>& layerState() override { return m_state; }
  void setImplementation(const std::string&) override {}

 private:
  GpuKernelContext& m_parent;
  const Node& m_node;
  std::vector<DeviceTensor> m_inputs;
  DeviceTensor m_output;
  std::shared_ptr<void>& m_state;
};

}  // namespace

struct UnfusedPointwiseChain::Step {
  Node node;
  const GpuKernelEntry* entry = nullptr;
  std::vector<int> operands;  // value ids; -1 where constantOffsets holds the value
  std::vector<size_t> constantOffsets;
  std::vector<DeviceTensor> constantTensors;  // data set once the constants are uploaded
  DeviceTensor result;                        // data set per run
  size_t workspaceOffset = 0;
  std::shared_ptr<void> state;
};

UnfusedPointwiseChain::~UnfusedPointwiseChain() {
  if (m_constants) cudaFree(m_constants);  // a destructor reports nothing
}

Result<std::unique_ptr<UnfusedPointwiseChain>> UnfusedPointwiseChain::create(
    GpuKernelContext& ctx, const PointwiseProgram& program) {
  std::unique_ptr<UnfusedPointwiseChain> chain(new UnfusedPointwiseChain());
  const int constantsEnd = program.inputCount + static_cast<int>(program.constants.size());
  chain->m_values.resize(static_cast<size_t>(program.stepValue(program.steps.size())));
  for (int k = 0; k < program.inputCount; ++k) chain->m_values[k] = ctx.input(k);
  std::vector<unsigned char> constantBytes;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const PointwiseStep& ps = program.steps[s];
    Step step;
    step.node = stepNode(ps, s);
    // A constant takes the type of the operand beside it (ONNX binary ops have one type).
    DataType operandType = DataType::kUndefined;
    for (int id : ps.operands)
      if (id < program.inputCount || id >= constantsEnd) operandType = chain->m_values[id].type;
    if (operandType == DataType::kUndefined)
      return ctx.error("step " + std::to_string(s) + " (" + step.node.opType +
                       ") reads constants only");
    std::vector<DataType> types;
    Shape shape;
    for (size_t k = 0; k < ps.operands.size(); ++k) {
      const int id = ps.operands[k];
      DeviceTensor operand;
      if (id >= program.inputCount && id < constantsEnd) {
        operand.type = operandType;
        step.constantOffsets.push_back(appendConstant(program.constants[id - program.inputCount],
                                                      operandType, &constantBytes));
        step.operands.push_back(-1);
      } else {
        operand = chain->m_values[id];
        step.constantOffsets.push_back(0);
        step.operands.push_back(id);
      }
      step.constantTensors.push_back(operand);
      types.push_back(operand.type);
      if (!broadcast(k == 0 ? operand.shape : shape, operand.shape, &shape))
        return ctx.error("step " + std::to_string(s) + " (" + step.node.opType +
                         ") has operands that do not broadcast");
    }
    step.entry = builtinGpuKernels().find("", step.node.opType, step.node.opset);
    const std::string why = !step.entry            ? "no CUDA kernel"
                            : step.entry->supports ? step.entry->supports(step.node, types)
                                                   : std::string();
    if (!why.empty()) return ctx.unsupported("unfused step " + step.node.opType + ": " + why);
    step.result.type = ctx.storageType(ps.type);
    step.result.shape = shape;
    if (s + 1 < program.steps.size()) {
      step.workspaceOffset = chain->m_workspaceBytes;
      chain->m_workspaceBytes += alignUp(step.result.byteSize(), 256);
    }
    chain->m_values[program.stepValue(s)] = step.result;
    chain->m_steps.push_back(std::move(step));
  }
  if (!constantBytes.empty()) {
    KILN_CUDA_CHECK(cudaMalloc(&chain->m_constants, constantBytes.size()));
    KILN_CUDA_CHECK(cudaMemcpy(chain->m_constants, constantBytes.data(), constantBytes.size(),
                               cudaMemcpyHostToDevice));
  }
  for (Step& step : chain->m_steps)
    for (size_t k = 0; k < step.operands.size(); ++k)
      if (step.operands[k] < 0)
        step.constantTensors[k].data =
            static_cast<char*>(chain->m_constants) + step.constantOffsets[k];
  return chain;
}

size_t UnfusedPointwiseChain::kernelCount() const {
  return m_steps.size();
}

Status UnfusedPointwiseChain::run(GpuKernelContext& ctx, const DeviceTensor& output) {
  const Step& last = m_steps.back();
  if (output.type != last.result.type || output.shape != last.result.shape)
    return ctx.error("the unfused chain planned " + shapeToString(last.result.shape) +
                     ", the layer's output is " + shapeToString(output.shape));
  char* base = nullptr;
  if (m_workspaceBytes > 0) {
    KILN_ASSIGN_OR_RETURN(void* workspace, ctx.workspace(m_workspaceBytes));
    base = static_cast<char*>(workspace);
  }
  for (size_t k = 0; k < ctx.inputCount(); ++k) m_values[k] = ctx.input(k);
  const int firstStep = static_cast<int>(m_values.size() - m_steps.size());
  for (size_t s = 0; s < m_steps.size(); ++s) {
    Step& step = m_steps[s];
    step.result.data = s + 1 == m_steps.size() ? output.data : base + step.workspaceOffset;
    m_values[firstStep + s] = step.result;
    std::vector<DeviceTensor> inputs;
    for (size_t k = 0; k < step.operands.size(); ++k)
      inputs.push_back(step.operands[k] < 0 ? step.constantTensors[k] : m_values[step.operands[k]]);
    ChainStepContext stepContext(ctx, step.node, std::move(inputs), step.result, step.state);
    Status ran = step.entry->fn(stepContext);
    if (!ran.isOk())
      return Status(ran.code(), ctx.node().describe() + ": unfused step " + std::to_string(s) +
                                    " (" + step.node.opType + "): " + ran.message());
  }
  return Status::ok();
}

}  // namespace kiln::cuda
