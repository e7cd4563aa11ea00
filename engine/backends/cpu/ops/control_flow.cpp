// Identity, Constant, and the control-flow ops If, Loop and Scan, which run
// their subgraphs through the executor's SubgraphRunner.
#include <cstdlib>
#include <cstring>

#include "backends/cpu/ops/op_utils.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

Status identityKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  ctx.setOutput(0, ctx.input(0));
  return Status::ok();
}

Status constantKernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  if (const Tensor* t = node.attrTensor("value")) {
    ctx.setOutput(0, *t);
  } else if (node.hasAttr("value_float")) {
    ctx.setOutput(0, Tensor::scalarFloat(node.attrFloat("value_float", 0)));
  } else if (node.hasAttr("value_int")) {
    ctx.setOutput(0, Tensor::scalarInt64(node.attrInt("value_int", 0)));
  } else if (node.hasAttr("value_floats")) {
    auto v = node.attrFloats("value_floats");
    ctx.setOutput(0, Tensor::fromVector(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v));
  } else if (node.hasAttr("value_ints")) {
    ctx.setOutput(0, Tensor::int64Vector(node.attrInts("value_ints")));
  } else if (node.hasAttr("value_string") || node.hasAttr("value_strings")) {
    bool scalar = node.hasAttr("value_string");
    std::vector<std::string> v = scalar
                                     ? std::vector<std::string>{node.attrString("value_string", "")}
                                     : node.attrStrings("value_strings");
    Tensor t(DataType::kString, scalar ? Shape{} : Shape{static_cast<int64_t>(v.size())});
    t.strings() = v;
    ctx.setOutput(0, t);
  } else {
    return ctx.unsupported("Constant without a supported value attribute");
  }
  return Status::ok();
}

bool truthy(const Tensor& t) {
  return t.numel() > 0 && t.valueAsDouble(0) != 0.0;
}

Status ifKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Graph* branch = ctx.node().attrGraph(truthy(ctx.input(0)) ? "then_branch" : "else_branch");
  if (!branch) return ctx.error("missing then_branch/else_branch subgraph");
  std::vector<Tensor> outputs;
  KILN_RETURN_IF_ERROR_CTX(ctx.runSubgraph(*branch, {}, &outputs), ctx.node().describe());
  if (outputs.size() < ctx.outputCount())
    return ctx.error("branch '" + branch->name + "' returns too few outputs");
  for (size_t i = 0; i < ctx.outputCount(); ++i) ctx.setOutput(i, outputs[i]);
  return Status::ok();
}

// Stacks equally shaped tensors along a new axis at `axis` (0 for Loop scan outputs).
Status stackTensors(const std::vector<Tensor>& parts, int64_t axis, Tensor* out) {
  const Tensor& first = parts.front();
  for (const Tensor& p : parts) {
    if (p.shape() != first.shape() || p.type() != first.type())
      return invalidArgument("scan output changes shape across iterations: " +
                             shapeToString(first.shape()) + " vs " + shapeToString(p.shape()));
  }
  Shape shape = first.shape();
  shape.insert(shape.begin() + axis, static_cast<int64_t>(parts.size()));
  Tensor result(first.type(), shape);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.shape()[d];
  const int64_t inner = first.numel() / std::max<int64_t>(outer, 1);
  const size_t elem = dataTypeSize(first.type());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < parts.size(); ++k) {
      int64_t dst = (o * static_cast<int64_t>(parts.size()) + static_cast<int64_t>(k)) * inner;
      if (first.type() == DataType::kString) {
        for (int64_t j = 0; j < inner; ++j)
          result.strings()[dst + j] = parts[k].strings()[o * inner + j];
      } else if (inner > 0) {
        std::memcpy(static_cast<char*>(result.rawData()) + dst * elem,
                    static_cast<const char*>(parts[k].rawData()) + o * inner * elem, inner * elem);
      }
    }
  }
  *out = result;
  return Status::ok();
}

// How many iterations one Loop may run: a trip count near INT64_MAX with a condition that
// stays true is legal ONNX and would run (and grow its scan outputs) without end. The
// default, 2^24, is far above what real models loop (beam search, NMS: thousands);
// KILN_MAX_LOOP_ITERATIONS (a positive decimal) replaces it, read at each Loop.
int64_t loopIterationLimit() {
  constexpr int64_t kDefault = int64_t{1} << 24;
  const char* text = std::getenv("KILN_MAX_LOOP_ITERATIONS");
  if (!text || !*text) return kDefault;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  return end && *end == '\0' && value > 0 ? value : kDefault;
}

Status loopKernel(KernelContext& ctx) {
  const Graph* body = ctx.node().attrGraph("body");
  if (!body) return ctx.error("missing body subgraph");
  // M is a scalar (or 1-element) tensor; an empty one has no count to read.
  if (ctx.hasInput(0) && ctx.input(0).numel() != 1)
    return ctx.error("trip count M must hold one value, not " +
                     std::to_string(ctx.input(0).numel()));
  int64_t maxTrips = ctx.hasInput(0) ? ctx.input(0).valueAsInt64(0) : INT64_MAX;
  bool cond = ctx.hasInput(1) ? truthy(ctx.input(1)) : true;
  const size_t carried = ctx.inputCount() > 2 ? ctx.inputCount() - 2 : 0;
  if (body->inputs.size() != carried + 2)
    return ctx.error("body inputs do not match the loop-carried values");
  if (body->outputs.size() < carried + 1) return ctx.error("body returns too few outputs");
  std::vector<Tensor> state;
  for (size_t i = 0; i < carried; ++i) {
    if (!ctx.hasInput(i + 2))
      return ctx.error("loop-carried input " + std::to_string(i) + " is missing");
    state.push_back(ctx.input(i + 2));
  }
  const size_t scans = body->outputs.size() - 1 - carried;
  std::vector<std::vector<Tensor>> scanParts(scans);
  const int64_t limit = loopIterationLimit();
  int64_t scanBytes = 0;  // what the scan outputs hold so far, held to the tensor cap
  for (int64_t trip = 0; trip < maxTrips && cond; ++trip) {
    if (trip == limit)
      return ctx.error(
          "iteration " + std::to_string(trip) +
          " reaches the loop iteration limit (KILN_MAX_LOOP_ITERATIONS=" + std::to_string(limit) +
          "); trip count " + (ctx.hasInput(0) ? std::to_string(maxTrips) : std::string("none")) +
          ", the condition still true");
    std::vector<Tensor> in{Tensor::scalarInt64(trip),
                           Tensor::fromVector(DataType::kBool, {}, std::vector<uint8_t>{1})};
    in.insert(in.end(), state.begin(), state.end());
    std::vector<Tensor> out;
    KILN_RETURN_IF_ERROR_CTX(ctx.runSubgraph(*body, in, &out),
                             ctx.node().describe() + " iteration " + std::to_string(trip));
    cond = truthy(out[0]);
    for (size_t i = 0; i < carried; ++i) state[i] = out[1 + i];
    for (size_t i = 0; i < scans; ++i) {
      scanBytes += static_cast<int64_t>(out[1 + carried + i].byteSize());
      scanParts[i].push_back(out[1 + carried + i]);
    }
    if (scanBytes > tensorLimits().maxBytes)
      return ctx.error("scan outputs of " + std::to_string(scanBytes) + " bytes after iteration " +
                       std::to_string(trip) + " exceed the tensor cap of " +
                       std::to_string(tensorLimits().maxBytes) + " bytes");
  }
  for (size_t i = 0; i < carried && i < ctx.outputCount(); ++i) ctx.setOutput(i, state[i]);
  for (size_t i = 0; i < scans && carried + i < ctx.outputCount(); ++i) {
    Tensor stacked;
    if (scanParts[i].empty()) {
      const ValueInfo& info = body->outputs[1 + carried + i];
      DataType type = info.type == DataType::kUndefined ? DataType::kFloat32 : info.type;
      stacked = Tensor(type, {0});
    } else {
      KILN_RETURN_IF_ERROR_CTX(stackTensors(scanParts[i], 0, &stacked), ctx.node().describe());
    }
    ctx.setOutput(carried + i, stacked);
  }
  return Status::ok();
}

// Slice `index` of `t` along `axis`, dropping that axis.
Tensor sliceAlong(const Tensor& t, int64_t axis, int64_t index) {
  Shape shape = t.shape();
  const int64_t len = shape[axis];
  shape.erase(shape.begin() + axis);
  Tensor out(t.type(), shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.shape()[d];
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.shape()[d];
  const size_t elem = dataTypeSize(t.type());
  for (int64_t o = 0; o < outer; ++o) {
    int64_t src = (o * len + index) * inner;
    if (t.type() == DataType::kString) {
      for (int64_t j = 0; j < inner; ++j) out.strings()[o * inner + j] = t.strings()[src + j];
    } else if (inner > 0) {
      std::memcpy(static_cast<char*>(out.rawData()) + o * inner * elem,
                  static_cast<const char*>(t.rawData()) + src * elem, inner * elem);
    }
  }
  return out;
}

Status scanKernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Graph* body = node.attrGraph("body");
  if (!body) return ctx.error("missing body subgraph");
  const int64_t numScanInputs = node.attrInt("num_scan_inputs", 0);
  const int64_t numInputs = static_cast<int64_t>(ctx.inputCount());
  // Compared before subtracting: num_scan_inputs = INT64_MIN overflowed the difference
  // (UBSan, found by fuzz_onnx_import).
  if (numScanInputs <= 0 || numScanInputs > numInputs)
    return ctx.error("num_scan_inputs " + std::to_string(numScanInputs) + " is not in [1, " +
                     std::to_string(numInputs) + "]");
  const int64_t numState = numInputs - numScanInputs;
  const int64_t numScanOutputs = static_cast<int64_t>(body->outputs.size()) - numState;
  auto inAxes = node.attrInts("scan_input_axes", std::vector<int64_t>(numScanInputs, 0));
  auto inDirs = node.attrInts("scan_input_directions", std::vector<int64_t>(numScanInputs, 0));
  auto outAxes = node.attrInts("scan_output_axes",
                               std::vector<int64_t>(std::max<int64_t>(numScanOutputs, 0), 0));
  auto outDirs = node.attrInts("scan_output_directions",
                               std::vector<int64_t>(std::max<int64_t>(numScanOutputs, 0), 0));
  // The model's attributes and input list, checked before they are indexed.
  if (numScanOutputs < 0) return ctx.error("body has fewer outputs than state variables");
  if (static_cast<int64_t>(inAxes.size()) != numScanInputs ||
      static_cast<int64_t>(inDirs.size()) != numScanInputs ||
      static_cast<int64_t>(outAxes.size()) != numScanOutputs ||
      static_cast<int64_t>(outDirs.size()) != numScanOutputs)
    return ctx.error("scan axes and directions must have one entry per scan input and output");
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.inputCount()));
  std::vector<Tensor> state;
  for (int64_t i = 0; i < numState; ++i) state.push_back(ctx.input(i));
  int64_t length = -1;
  for (int64_t i = 0; i < numScanInputs; ++i) {
    const Tensor& t = ctx.input(numState + i);
    int64_t axis;
    KILN_RETURN_IF_ERROR_CTX(normalizeAxis(inAxes[i], t.rank(), &axis), node.describe());
    inAxes[i] = axis;
    if (length >= 0 && t.dim(axis) != length)
      return ctx.error("scan inputs differ in sequence length");
    length = t.dim(axis);
  }
  std::vector<std::vector<Tensor>> parts(std::max<int64_t>(numScanOutputs, 0));
  for (int64_t step = 0; step < length; ++step) {
    std::vector<Tensor> in = state;
    for (int64_t i = 0; i < numScanInputs; ++i) {
      int64_t index = inDirs[i] ? length - 1 - step : step;
      in.push_back(sliceAlong(ctx.input(numState + i), inAxes[i], index));
    }
    std::vector<Tensor> out;
    KILN_RETURN_IF_ERROR_CTX(ctx.runSubgraph(*body, in, &out),
                             node.describe() + " step " + std::to_string(step));
    if (static_cast<int64_t>(out.size()) < numState + numScanOutputs)
      return ctx.error("body returned " + std::to_string(out.size()) + " values");
    for (int64_t i = 0; i < numState; ++i) state[i] = out[i];
    for (int64_t i = 0; i < numScanOutputs; ++i) parts[i].push_back(out[numState + i]);
  }
  for (int64_t i = 0; i < numState; ++i) ctx.setOutput(i, state[i]);
  for (int64_t i = 0; i < numScanOutputs; ++i) {
    if (parts[i].empty()) return ctx.unsupported("Scan over an empty sequence");
    if (outDirs[i]) std::reverse(parts[i].begin(), parts[i].end());
    int64_t axis;
    KILN_RETURN_IF_ERROR_CTX(normalizeAxis(outAxes[i], parts[i][0].rank() + 1, &axis),
                             node.describe());
    Tensor stacked;
    KILN_RETURN_IF_ERROR_CTX(stackTensors(parts[i], axis, &stacked), node.describe());
    ctx.setOutput(numState + i, stacked);
  }
  return Status::ok();
}

// Scan-8 output `i`: per batch entry its steps zero-padded to maxLen, stacked to
// [batch, maxLen, ...].
Status stackPaddedScanOutput(const KernelContext& ctx,
                             std::vector<std::vector<std::vector<Tensor>>>& steps, int64_t i,
                             int64_t maxLen, Tensor* out) {
  const Tensor* sample = nullptr;  // any produced step gives the element shape for padding
  for (size_t b = 0; b < steps.size() && !sample; ++b) {
    if (!steps[b][i].empty()) sample = &steps[b][i].front();
  }
  if (!sample) return ctx.unsupported("Scan with no steps at all");
  std::vector<Tensor> perBatch;
  for (auto& entry : steps) {
    std::vector<Tensor>& seq = entry[i];
    while (static_cast<int64_t>(seq.size()) < maxLen)
      seq.push_back(Tensor(sample->type(), sample->shape()));
    Tensor stacked;
    KILN_RETURN_IF_ERROR_CTX(stackTensors(seq, 0, &stacked), ctx.node().describe());
    perBatch.push_back(stacked);
  }
  KILN_RETURN_IF_ERROR_CTX(stackTensors(perBatch, 0, out), ctx.node().describe());
  return Status::ok();
}

// Checks Scan-8's inputs share batch (and scan inputs the sequence length) and reads the
// per-entry lengths: sequence_lens, or the full sequence when it is absent.
Status readScanV8Lengths(const KernelContext& ctx, int64_t numState, int64_t* maxLen,
                         std::vector<int64_t>* lens) {
  for (size_t i = 1; i < ctx.inputCount(); ++i) {
    if (!ctx.hasInput(i)) return ctx.error("input " + std::to_string(i) + " is missing");
  }
  const Tensor& first = ctx.input(1 + numState);
  if (first.rank() < 2) return ctx.error("scan inputs must be [batch, sequence, ...]");
  const int64_t batch = first.dim(0);
  *maxLen = first.dim(1);
  for (size_t i = 1; i < ctx.inputCount(); ++i) {
    const Tensor& t = ctx.input(i);
    const bool isScan = static_cast<int64_t>(i) > numState;
    if (t.rank() < (isScan ? 2 : 1) || t.dim(0) != batch || (isScan && t.dim(1) != *maxLen)) {
      return ctx.error("input " + std::to_string(i) + " " + shapeToString(t.shape()) +
                       " does not match batch " + std::to_string(batch) + " and sequence " +
                       std::to_string(*maxLen));
    }
  }
  lens->assign(static_cast<size_t>(batch), *maxLen);
  if (ctx.hasInput(0)) {
    *lens = ctx.input(0).toInt64Vector();
    if (static_cast<int64_t>(lens->size()) != batch)
      return ctx.error("sequence_lens must have one entry per batch");
    for (int64_t len : *lens) {
      if (len < 0 || len > *maxLen)
        return ctx.error("sequence length " + std::to_string(len) + " is out of range");
    }
  }
  return Status::ok();
}

// Scan-8: inputs are [sequence_lens], states [batch, ...] and scan inputs [batch, seq, ...];
// each batch entry runs on its own, for sequence_lens[b] steps (all of seq when absent).
// `directions` reverses scan inputs within each entry's length; scan outputs come out in
// step order, zero-padded past the entry's length to [batch, seq, ...].
Status scanV8Kernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Graph* body = node.attrGraph("body");
  if (!body) return ctx.error("missing body subgraph");
  const int64_t numScan = node.attrInt("num_scan_inputs", 0);
  // Compared before subtracting, as in opset 9's Scan: INT64_MIN overflowed the state count
  // (UBSan, found by fuzz_onnx_import after the opset-9 fix).
  const int64_t numInputs = static_cast<int64_t>(ctx.inputCount()) - 1;  // after sequence_lens
  if (numScan <= 0 || numScan > numInputs)
    return ctx.error("num_scan_inputs " + std::to_string(numScan) + " is not in [1, " +
                     std::to_string(numInputs) + "]");
  const int64_t numState = numInputs - numScan;
  const int64_t numScanOut = static_cast<int64_t>(body->outputs.size()) - numState;
  if (numScanOut < 0) return ctx.error("bad num_scan_inputs");
  const auto dirs = node.attrInts("directions", std::vector<int64_t>(numScan, 0));
  if (static_cast<int64_t>(dirs.size()) != numScan)
    return ctx.error("'directions' needs one entry per scan input");
  int64_t maxLen = 0;
  std::vector<int64_t> lens;
  KILN_RETURN_IF_ERROR(readScanV8Lengths(ctx, numState, &maxLen, &lens));
  const int64_t batch = static_cast<int64_t>(lens.size());
  if (batch == 0) return ctx.unsupported("Scan over an empty batch");
  std::vector<std::vector<Tensor>> finalStates(numState);
  std::vector<std::vector<std::vector<Tensor>>> steps(batch,
                                                      std::vector<std::vector<Tensor>>(numScanOut));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> state;
    for (int64_t i = 0; i < numState; ++i) state.push_back(sliceAlong(ctx.input(1 + i), 0, b));
    std::vector<Tensor> sequences;
    for (int64_t i = 0; i < numScan; ++i)
      sequences.push_back(sliceAlong(ctx.input(1 + numState + i), 0, b));
    for (int64_t step = 0; step < lens[b]; ++step) {
      std::vector<Tensor> in = state;
      for (int64_t i = 0; i < numScan; ++i)
        in.push_back(sliceAlong(sequences[i], 0, dirs[i] ? lens[b] - 1 - step : step));
      std::vector<Tensor> out;
      KILN_RETURN_IF_ERROR_CTX(
          ctx.runSubgraph(*body, in, &out),
          node.describe() + " batch " + std::to_string(b) + " step " + std::to_string(step));
      for (int64_t i = 0; i < numState; ++i) state[i] = out[i];
      for (int64_t i = 0; i < numScanOut; ++i) steps[b][i].push_back(out[numState + i]);
    }
    for (int64_t i = 0; i < numState; ++i) finalStates[i].push_back(state[i]);
  }
  for (int64_t i = 0; i < numState; ++i) {
    Tensor stacked;
    KILN_RETURN_IF_ERROR_CTX(stackTensors(finalStates[i], 0, &stacked), node.describe());
    ctx.setOutput(i, stacked);
  }
  for (int64_t i = 0; i < numScanOut; ++i) {
    Tensor all;
    KILN_RETURN_IF_ERROR(stackPaddedScanOutput(ctx, steps, i, maxLen, &all));
    ctx.setOutput(numState + i, all);
  }
  return Status::ok();
}

}  // namespace

void registerControlFlowKernels(KernelRegistry& registry) {
  registry.add("Identity", 1, 1000, &identityKernel);
  registry.add("Constant", 1, 1000, &constantKernel);
  registry.add("If", 1, 1000, &ifKernel);
  registry.add("Loop", 1, 1000, &loopKernel);
  registry.add("Scan", 8, 8, &scanV8Kernel);
  registry.add("Scan", 9, 1000, &scanKernel);
}

}  // namespace kiln::cpu
