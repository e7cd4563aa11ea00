// Cross-backend tests for the rnn ops: CUDA engine vs CPU reference.
// Tolerances: fp32 runs with TF32 off and differs from the CPU only in summation order
// and exp/tanh rounding (1e-4). The 16-bit engines store the input projection, the
// hidden state fed to each step's GEMM and the outputs in 16 bits, and the recurrence
// carries that rounding from step to step, so their tolerances are looser than a
// single op's.
//
// Inputs in ONNX order: X, W, R, B, sequence_lens, initial_h, initial_c, P. X, the
// states and sequence_lens (int32, uneven) are fed at run time; weights are constants.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/ops/lstm_persistent.h"
#include "gpu/gpu_op_test.h"
#include "kiln/reference_backend.h"

namespace kiln::test {
namespace rnn = cuda::rnn;
namespace {

std::vector<PrecisionTolerance> rnnTolerances() {
  return {{cuda::Precision::kFloat32, 1e-4, 1e-4},
          {cuda::Precision::kFloat16, 1e-2, 1e-2},
          {cuda::Precision::kBFloat16, 6e-2, 6e-2}};
}

Tensor data(const Shape& shape, uint32_t seed) {
  return randomTensor(DataType::kFloat32, shape, seed, -1, 1);
}
// Weights in [-0.5, 0.5) keep pre-activations moderate over the steps.
Tensor weights(const Shape& shape, uint32_t seed) {
  return randomTensor(DataType::kFloat32, shape, seed, -0.5, 0.5);
}
Tensor lengths(const std::vector<int64_t>& values) {
  return castTensor(int64Tensor({static_cast<int64_t>(values.size())}, values), DataType::kInt32);
}

// Sizes shared by the tests: odd enough that direction 1's W / B slices and GRU's R_h
// rows start at unaligned addresses.
constexpr int64_t kSeq = 5, kBatch = 3, kInput = 4, kHidden = 6;

// ------------------------------------------------------------------ LSTM (gates = 4)

TEST(CudaRnn, LstmForwardBiasAndStates) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LSTM", 14)
      .attr("hidden_size", kHidden)
      .input(data({kSeq, kBatch, kInput}, 1))
      .constant(weights({1, 4 * kHidden, kInput}, 2))
      .constant(weights({1, 4 * kHidden, kHidden}, 3))
      .constant(weights({1, 8 * kHidden}, 4))
      .missingInput()
      .input(data({1, kBatch, kHidden}, 5))
      .input(data({1, kBatch, kHidden}, 6))
      .outputs(3)
      .check(rnnTolerances());
}

TEST(CudaRnn, LstmBidirectionalSequenceLensPeepholes) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LSTM", 14)
      .attr("direction", std::string("bidirectional"))
      .input(data({kSeq, kBatch, kInput}, 7))
      .constant(weights({2, 4 * kHidden, kInput}, 8))
      .constant(weights({2, 4 * kHidden, kHidden}, 9))
      .constant(weights({2, 8 * kHidden}, 10))
      .input(lengths({3, 5, 1}))
      .input(data({2, kBatch, kHidden}, 11))
      .input(data({2, kBatch, kHidden}, 12))
      .constant(weights({2, 3 * kHidden}, 13))
      .outputs(3)
      .check(rnnTolerances());
}

// Batch-major layout, a zero-length entry (Y rows zero, states = initial), clipped
// gates and the coupled input/forget gate.
TEST(CudaRnn, LstmReverseLayout1ClipInputForget) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LSTM", 14)
      .attr("direction", std::string("reverse"))
      .attr("layout", int64_t{1})
      .attr("clip", 0.7f)
      .attr("input_forget", int64_t{1})
      .input(data({kBatch, kSeq, kInput}, 14))
      .constant(weights({1, 4 * kHidden, kInput}, 15))
      .constant(weights({1, 4 * kHidden, kHidden}, 16))
      .constant(weights({1, 8 * kHidden}, 17))
      .input(lengths({2, 5, 0}))
      .input(data({kBatch, 1, kHidden}, 18))
      .input(data({kBatch, 1, kHidden}, 19))
      .constant(weights({1, 3 * kHidden}, 20))
      .outputs(3)
      .check(rnnTolerances());
}

// Opset 7: no B, no states, layout not read.
TEST(CudaRnn, LstmBidirectionalNoBiasOpset7) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LSTM", 7)
      .attr("direction", std::string("bidirectional"))
      .input(data({kSeq, kBatch, kInput}, 21))
      .constant(weights({2, 4 * kHidden, kInput}, 22))
      .constant(weights({2, 4 * kHidden, kHidden}, 23))
      .outputs(3)
      .check(rnnTolerances());
}

// ------------------------------------------------------------------ persistent LSTM

// The 16-bit engines run these LSTMs in one persistent kernel (lstm_persistent.h; float32
// keeps the step loop): both directions, a partial last block of entries (37 of 64 or 16 a
// block), initial states and every output; batch-major layout without B; hidden 128 over
// 16 entries. Each case also asserts the layer's kernel at fp16.
struct PersistentCase {
  const char* direction;
  int64_t layout, seq, batch, input, hidden;
  bool bias, states;
};

void checkPersistent(const PersistentCase& c, uint32_t seed) {
  const int64_t dirs = std::string(c.direction) == "bidirectional" ? 2 : 1;
  const Shape x = c.layout ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input};
  const Shape state = c.layout ? Shape{c.batch, dirs, c.hidden} : Shape{dirs, c.batch, c.hidden};
  GpuOpTest op("LSTM", 14);
  op.attr("direction", std::string(c.direction))
      .attr("layout", c.layout)
      .input(data(x, seed))
      .constant(weights({dirs, 4 * c.hidden, c.input}, seed + 1))
      .constant(weights({dirs, 4 * c.hidden, c.hidden}, seed + 2));
  if (c.bias)
    op.constant(weights({dirs, 8 * c.hidden}, seed + 3));
  else
    op.missingInput();
  op.missingInput();  // sequence_lens
  if (c.states) op.input(data(state, seed + 4)).input(data(state, seed + 5));
  op.outputs(c.states ? 3 : 1).check(rnnTolerances());

  std::vector<cuda::LayerInfo> layers;
  auto fp16 = runCudaPoisoned(op.network(), op.feeds(), cuda::Precision::kFloat16, "out0", &layers);
  ASSERT_TRUE(fp16.isOk()) << fp16.status().toString();
  bool seen = false;
  for (const cuda::LayerInfo& layer : layers) {
    if (layer.opType != "LSTM") continue;
    seen = true;
    EXPECT_NE(layer.implementation.find("kiln:lstm persistent"), std::string::npos)
        << layer.implementation;
  }
  EXPECT_TRUE(seen);
}

TEST(CudaRnn, PersistentLstmBidirectionalStates) {
  KILN_REQUIRE_GPU();
  checkPersistent({"bidirectional", 0, 9, 37, 20, 48, true, true}, 300);
}

TEST(CudaRnn, PersistentLstmLayout1NoBias) {
  KILN_REQUIRE_GPU();
  checkPersistent({"forward", 1, 7, 70, 12, 32, false, false}, 310);
}

// recurrent_batch_first turns batch_first exports (Sequencer2D's LSTMs) into this case:
// bidirectional at layout 1, with states in their batch-major order.
TEST(CudaRnn, PersistentLstmBidirectionalLayout1States) {
  KILN_REQUIRE_GPU();
  checkPersistent({"bidirectional", 1, 8, 37, 12, 48, true, true}, 330);
}

TEST(CudaRnn, PersistentLstmReverseHidden128) {
  KILN_REQUIRE_GPU();
  checkPersistent({"reverse", 0, 6, 5, 16, 128, true, true}, 320);
}

// What the persistent kernel refuses keeps the step loop (sequence_lens, peepholes, clip,
// other activations, hidden sizes off the 16 grid or over 128, float32).
TEST(CudaRnn, PersistentLstmRefusals) {
  rnn::CellParams p;
  p.cell = rnn::Cell::kLstm;
  p.seq = 4;
  p.batch = 3;
  p.hidden = 48;
  p.dirs = 1;
  p.actsPerDirection = 3;
  p.acts[0].kind = rnn::ActKind::kSigmoid;
  p.acts[1].kind = p.acts[2].kind = rnn::ActKind::kTanh;
  EXPECT_EQ(rnn::persistentLstmRefusal(DataType::kFloat16, p, false), "");
  EXPECT_EQ(rnn::persistentLstmRefusal(DataType::kBFloat16, p, false), "");
  EXPECT_NE(rnn::persistentLstmRefusal(DataType::kFloat32, p, false), "");
  EXPECT_NE(rnn::persistentLstmRefusal(DataType::kFloat16, p, true), "");
  rnn::CellParams q = p;
  q.hidden = 40;
  EXPECT_NE(rnn::persistentLstmRefusal(DataType::kFloat16, q, false), "");
  q.hidden = 144;
  EXPECT_NE(rnn::persistentLstmRefusal(DataType::kFloat16, q, false), "");
  q = p;
  q.clip = 1.f;
  EXPECT_NE(rnn::persistentLstmRefusal(DataType::kFloat16, q, false), "");
  q = p;
  int32_t lens[3] = {1, 2, 3};
  q.lens = lens;
  EXPECT_NE(rnn::persistentLstmRefusal(DataType::kFloat16, q, false), "");
  q = p;
  q.acts[1].kind = rnn::ActKind::kRelu;
  EXPECT_NE(rnn::persistentLstmRefusal(DataType::kFloat16, q, false), "");
  rnn::PersistentLstmShape shape = rnn::persistentLstmShape(p, 132);
  EXPECT_EQ(shape.rowsPerBlock, 16);  // 3 entries: one block of the smallest size
  p.batch = 7168;
  p.dirs = 2;
  shape = rnn::persistentLstmShape(p, 132);
  EXPECT_EQ(shape.rowsPerBlock, 32);  // hidden 48: 3 warps a 16-entry tile, 2 tiles a block
  EXPECT_EQ(shape.warps, 6);
}

// ------------------------------------------------------------------ GRU (gates = 3)

TEST(CudaRnn, GruForwardBiasInitialState) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GRU", 14)
      .input(data({kSeq, kBatch, kInput}, 31))
      .constant(weights({1, 3 * kHidden, kInput}, 32))
      .constant(weights({1, 3 * kHidden, kHidden}, 33))
      .constant(weights({1, 6 * kHidden}, 34))
      .missingInput()
      .input(data({1, kBatch, kHidden}, 35))
      .outputs(2)
      .check(rnnTolerances());
}

TEST(CudaRnn, GruBidirectionalSequenceLens) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GRU", 14)
      .attr("direction", std::string("bidirectional"))
      .input(data({kSeq, kBatch, kInput}, 36))
      .constant(weights({2, 3 * kHidden, kInput}, 37))
      .constant(weights({2, 3 * kHidden, kHidden}, 38))
      .constant(weights({2, 6 * kHidden}, 39))
      .input(lengths({4, 1, 5}))
      .input(data({2, kBatch, kHidden}, 40))
      .outputs(2)
      .check(rnnTolerances());
}

TEST(CudaRnn, GruBidirectionalLinearBeforeResetLayout1) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GRU", 14)
      .attr("direction", std::string("bidirectional"))
      .attr("linear_before_reset", int64_t{1})
      .attr("layout", int64_t{1})
      .input(data({kBatch, kSeq, kInput}, 41))
      .constant(weights({2, 3 * kHidden, kInput}, 42))
      .constant(weights({2, 3 * kHidden, kHidden}, 43))
      .constant(weights({2, 6 * kHidden}, 44))
      .input(lengths({5, 2, 3}))
      .input(data({kBatch, 2, kHidden}, 45))
      .outputs(2)
      .check(rnnTolerances());
}

TEST(CudaRnn, GruReverseSequenceLensNoBias) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GRU", 14)
      .attr("direction", std::string("reverse"))
      .input(data({kSeq, kBatch, kInput}, 46))
      .constant(weights({1, 3 * kHidden, kInput}, 47))
      .constant(weights({1, 3 * kHidden, kHidden}, 48))
      .missingInput()
      .input(lengths({1, 5, 3}))
      .outputs(2)
      .check(rnnTolerances());
}

TEST(CudaRnn, GruReverseLinearBeforeResetClipOpset7) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GRU", 7)
      .attr("direction", std::string("reverse"))
      .attr("linear_before_reset", int64_t{1})
      .attr("clip", 0.9f)
      .input(data({kSeq, kBatch, kInput}, 49))
      .constant(weights({1, 3 * kHidden, kInput}, 50))
      .constant(weights({1, 3 * kHidden, kHidden}, 51))
      .constant(weights({1, 6 * kHidden}, 52))
      .outputs(2)
      .check(rnnTolerances());
}

// ------------------------------------------------------------------ RNN (gates = 1)

TEST(CudaRnn, RnnForwardBias) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RNN", 14)
      .input(data({kSeq, kBatch, kInput}, 61))
      .constant(weights({1, kHidden, kInput}, 62))
      .constant(weights({1, kHidden, kHidden}, 63))
      .constant(weights({1, 2 * kHidden}, 64))
      .outputs(2)
      .check(rnnTolerances());
}

TEST(CudaRnn, RnnBidirectionalLayout1SequenceLens) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RNN", 14)
      .attr("direction", std::string("bidirectional"))
      .attr("layout", int64_t{1})
      .input(data({kBatch, kSeq, kInput}, 65))
      .constant(weights({2, kHidden, kInput}, 66))
      .constant(weights({2, kHidden, kHidden}, 67))
      .constant(weights({2, 2 * kHidden}, 68))
      .input(lengths({2, 0, 5}))
      .input(data({kBatch, 2, kHidden}, 69))
      .outputs(2)
      .check(rnnTolerances());
}

TEST(CudaRnn, RnnReverseNoBiasOpset7) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RNN", 7)
      .attr("direction", std::string("reverse"))
      .input(data({kSeq, kBatch, kInput}, 70))
      .constant(weights({1, kHidden, kInput}, 71))
      .constant(weights({1, kHidden, kHidden}, 72))
      .missingInput()
      .missingInput()
      .input(data({1, kBatch, kHidden}, 73))
      .outputs(2)
      .check(rnnTolerances());
}

// ------------------------------------------------------------------ activations lists
//
// GpuOpTest has no string-list attribute, so these build the one-node network here:
// a node with `activations` (and omitted outputs), run on the CPU reference and on the
// CUDA engine at each precision, asserting the node ran on the GPU.

Attribute stringsAttr(const std::vector<std::string>& values) {
  Attribute a;
  a.kind = Attribute::Kind::kStrings;
  a.strings = values;
  return a;
}
Attribute floatsAttr(const std::vector<float>& values) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = values;
  return a;
}
Attribute stringAttr(const std::string& value) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = value;
  return a;
}

// One input of a hand-built node: undefined = omitted.
struct NodeInput {
  Tensor tensor;
  bool constant = false;
};

// `node` has its op, opset, attributes and outputs ("" = omitted); inputs are named here.
Network buildNetwork(Node node, const std::vector<NodeInput>& inputs) {
  Network network;
  network.irVersion = 8;
  network.opsets[""] = node.opset;
  node.inputs.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].tensor.defined()) {
      node.inputs.push_back("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    node.inputs.push_back(name);
    if (inputs[i].constant) {
      network.graph.initializers[name] = inputs[i].tensor;
      continue;
    }
    ValueInfo info;
    info.name = name;
    info.type = inputs[i].tensor.type();
    info.hasShape = true;
    for (int64_t d : inputs[i].tensor.shape()) info.shape.push_back(DimExpr(d));
    network.graph.inputs.push_back(info);
  }
  for (const std::string& name : node.outputs) {
    if (name.empty()) continue;
    ValueInfo info;
    info.name = name;
    network.graph.outputs.push_back(info);
  }
  network.graph.nodes.push_back(node);
  return network;
}

void checkNode(const Node& node, const std::vector<NodeInput>& original,
               const std::vector<PrecisionTolerance>& tolerances = rnnTolerances()) {
  for (const PrecisionTolerance& tolerance : tolerances) {
    SCOPED_TRACE(node.opType + " at " + cuda::precisionName(tolerance.precision));
    std::vector<NodeInput> inputs = original;
    for (NodeInput& in : inputs) in.tensor = roundTo(in.tensor, tolerance.precision);
    const Network network = buildNetwork(node, inputs);

    ReferenceBackend reference(network);
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].tensor.defined() && !inputs[i].constant)
        feeds["in" + std::to_string(i)] = inputs[i].tensor;
    }
    std::vector<NamedTensor> expected;
    const Status status = reference.run(feeds, &expected);
    ASSERT_TRUE(status.isOk()) << "CPU reference failed: " << status.toString();

    cuda::EngineOptions options;
    options.precision = tolerance.precision;
    options.allowTf32 = false;
    auto engine = cuda::Engine::create(std::make_shared<Network>(network), options);
    ASSERT_TRUE(engine.isOk()) << engine.status().toString();
    auto context = engine.value()->createContext();
    ASSERT_TRUE(context.isOk()) << context.status().toString();
    cuda::ExecutionContext& ctx = *context.value();
    for (const auto& [name, tensor] : feeds) {
      ASSERT_TRUE(ctx.setInputShape(name, tensor.shape()).isOk());
      ASSERT_TRUE(ctx.setInput(name, tensor).isOk());
    }
    const Status run = ctx.execute();
    ASSERT_TRUE(run.isOk()) << run.toString();
    for (const cuda::LayerInfo& layer : ctx.layers()) {
      EXPECT_NE(layer.placement, cuda::LayerPlacement::kHostFallback)
          << layer.name << " ran on the host: " << layer.note;
    }
    const std::vector<std::string> names = ctx.outputNames();
    ASSERT_EQ(names.size(), expected.size());
    for (size_t i = 0; i < names.size(); ++i) {
      SCOPED_TRACE("output " + names[i]);
      auto actual = ctx.getOutput(names[i]);
      ASSERT_TRUE(actual.isOk()) << actual.status().toString();
      expectTensorNear(actual.value(), expected[i].tensor, tolerance.atol, tolerance.rtol);
    }
  }
}

Node recurrentNode(const std::string& opType, int opset, const std::vector<std::string>& outputs) {
  Node node;
  node.opType = opType;
  node.opset = opset;
  node.name = opType + "_under_test";
  node.outputs = outputs;
  return node;
}

// Per direction: f = HardSigmoid / Sigmoid, g = Softsign / ScaledTanh, h = Elu /
// Softplus; alphas and betas are consumed in order by the activations that take them.
TEST(CudaRnn, LstmBidirectionalActivationList) {
  KILN_REQUIRE_GPU();
  Node node = recurrentNode("LSTM", 14, {"out0", "out1", "out2"});
  node.attributes["direction"] = stringAttr("bidirectional");
  node.attributes["activations"] =
      stringsAttr({"HardSigmoid", "Softsign", "Elu", "Sigmoid", "ScaledTanh", "Softplus"});
  node.attributes["activation_alpha"] = floatsAttr({0.3f, 0.8f, 0.9f});
  node.attributes["activation_beta"] = floatsAttr({0.4f, 1.1f});
  checkNode(node, {{data({kSeq, kBatch, kInput}, 81)},
                   {weights({2, 4 * kHidden, kInput}, 82), true},
                   {weights({2, 4 * kHidden, kHidden}, 83), true},
                   {weights({2, 8 * kHidden}, 84), true},
                   {lengths({5, 3, 2})},
                   {data({2, kBatch, kHidden}, 85)},
                   {data({2, kBatch, kHidden}, 86)}});
}

// Relu / Affine candidates, HardSigmoid with default alpha taken from the list; Y omitted.
TEST(CudaRnn, GruBidirectionalActivationListOnlyYh) {
  KILN_REQUIRE_GPU();
  Node node = recurrentNode("GRU", 14, {"", "out1"});
  node.attributes["direction"] = stringAttr("bidirectional");
  node.attributes["activations"] = stringsAttr({"Sigmoid", "Relu", "HardSigmoid", "Affine"});
  node.attributes["activation_alpha"] = floatsAttr({0.25f, 0.7f});
  node.attributes["activation_beta"] = floatsAttr({0.45f, 0.1f});
  checkNode(node, {{data({kSeq, kBatch, kInput}, 87)},
                   {weights({2, 3 * kHidden, kInput}, 88), true},
                   {weights({2, 3 * kHidden, kHidden}, 89), true},
                   {weights({2, 6 * kHidden}, 90), true},
                   {lengths({2, 5, 4})}});
}

// LeakyRelu forward, ThresholdedRelu reverse. fp32 only: ThresholdedRelu jumps by
// alpha at x = alpha, and 16-bit rounding of a pre-activation near it would flip a
// value by 0.2 (the 16-bit paths of the cell are covered by the other tests).
TEST(CudaRnn, RnnBidirectionalActivationList) {
  KILN_REQUIRE_GPU();
  Node node = recurrentNode("RNN", 14, {"out0", "out1"});
  node.attributes["direction"] = stringAttr("bidirectional");
  node.attributes["activations"] = stringsAttr({"LeakyRelu", "ThresholdedRelu"});
  node.attributes["activation_alpha"] = floatsAttr({0.1f, 0.2f});
  checkNode(node,
            {{data({kSeq, kBatch, kInput}, 91)},
             {weights({2, kHidden, kInput}, 92), true},
             {weights({2, kHidden, kHidden}, 93), true},
             {weights({2, 2 * kHidden}, 94), true}},
            fp32Only(1e-4, 1e-4));
}

// A single-direction list is shared by both directions of a bidirectional cell.
TEST(CudaRnn, RnnBidirectionalSharedActivation) {
  KILN_REQUIRE_GPU();
  Node node = recurrentNode("RNN", 14, {"out0", "out1"});
  node.attributes["direction"] = stringAttr("bidirectional");
  node.attributes["activations"] = stringsAttr({"Softsign"});
  checkNode(node, {{data({kSeq, kBatch, kInput}, 95)},
                   {weights({2, kHidden, kInput}, 96), true},
                   {weights({2, kHidden, kHidden}, 97), true}});
}

}  // namespace
}  // namespace kiln::test
