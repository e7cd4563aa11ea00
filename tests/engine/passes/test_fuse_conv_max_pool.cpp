// fuse_conv_max_pool: a ResNet-like stem (Conv 7x7/2 -> BatchNormalization -> Relu ->
// MaxPool 3x3/2 -> QuantizeLinear -> DequantizeLinear -> Conv with int8 weights) becomes
// FusedConvMaxPool -> QuantizedConv in a half-precision channels-last pipeline: the layer
// gets kiln_channels_last = 1 with X and W as they were and its int8 NHWC output read by
// the channels-last QuantizedConv without a reformat, and the CPU reference gives the
// same outputs as the graph without the pass (exactly) and as the original (1e-4). It
// does not fire without halfPrecision or channelsLast, when it or the layout pass is
// disabled, at level 1 (no layout pass), without the QuantizeLinear, with other than 64 filters,
// with conv stride 1, with a second reader of the MaxPool's or the conv's output, with a uint8
// QuantizeLinear or an int8 zero point other than 0, with 5 channels, a 4x4 pool window or a
// filter 9 wide, or when an fp32 precision rule names the stem's conv. When the stem's input
// comes from a layer that goes channels-last, a Transpose brings it back to NCHW.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/passes/pass_test_support.h"
#include "ir/channels_last.h"
#include "ir/conv_max_pool.h"
#include "ir/quantized_layers.h"
#include "kiln/build_backend.h"
#include "kiln/builder.h"
#include "kiln/passes.h"
#include "kiln/plan.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

struct StemOptions {
  int64_t filters = 64;
  std::vector<int64_t> convStrides = {2, 2};
  bool quantize = true;
  bool zeroPoint = true;       // false: QuantizeLinear without one (uint8 output)
  bool secondReader = false;   // Sigmoid(MaxPool) as a second graph output
  bool poolBefore = false;     // an AveragePool (which goes channels-last) feeds the stem
  int64_t channels = 3;        // x's channels (the kernel takes at most 4)
  int zeroPointValue = 0;      // the Q's int8 zero point
  int64_t poolKernel = 3;      // the MaxPool's window (the kernel takes at most 3)
  int64_t filterWidth = 7;     // S (the kernel takes at most 8)
  bool convReadTwice = false;  // Sigmoid(Relu) as a second graph output
};

Tensor int8Tensor(const Shape& shape, uint32_t seed) {
  return randomTensor(DataType::kInt8, shape, seed, -100, 100);
}

// x [2, 3, 32, 32] -> Conv 7x7/2 pad 3 -> BN -> Relu -> MaxPool 3x3/2 pad 1 [-> Q -> DQ]
// -> Conv 3x3 pad 1 to 16 channels (DQ'd int8 weights after a Q, float ones without) -> y.
Network stem(const StemOptions& o = {}) {
  const int64_t m = o.filters;
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {
      {"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(o.channels), DimExpr(32), DimExpr(32)}}};
  g.initializers["w"] =
      randomTensor(DataType::kFloat32, {m, o.channels, 7, o.filterWidth}, 1, -0.2, 0.2);
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, {m}, 2, 0.5, 1.5);
  g.initializers["beta"] = randomTensor(DataType::kFloat32, {m}, 3, -0.5, 0.5);
  g.initializers["mean"] = randomTensor(DataType::kFloat32, {m}, 4, -0.2, 0.2);
  g.initializers["var"] = randomTensor(DataType::kFloat32, {m}, 5, 0.5, 2.0);
  g.initializers["s"] = floatTensor({}, {0.03f});
  g.initializers["zp"] = castTensor(
      Tensor::fromVector(DataType::kFloat64, {}, std::vector<double>{double(o.zeroPointValue)}),
      DataType::kInt8);
  g.initializers["wq"] = int8Tensor({16, m, 3, 3}, 6);
  g.initializers["sw"] = floatTensor({}, {0.002f});
  g.initializers["w2"] = randomTensor(DataType::kFloat32, {16, m, 3, 3}, 7, -0.1, 0.1);
  Node conv = withInts(makeNode("Conv", {o.poolBefore ? "xa" : "x", "w"}, {"c"}), "kernel_shape",
                       {7, o.filterWidth});
  conv = withInts(withInts(conv, "strides", o.convStrides), "pads", {3, 3, 3, 3});
  Node pool =
      withInts(makeNode("MaxPool", {"r"}, {"p"}), "kernel_shape", {o.poolKernel, o.poolKernel});
  pool = withInts(withInts(pool, "strides", {2, 2}), "pads", {1, 1, 1, 1});
  g.nodes = {conv, makeNode("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"bn"}),
             makeNode("Relu", {"bn"}, {"r"}), pool};
  if (o.poolBefore) {
    Node before = withInts(makeNode("AveragePool", {"x"}, {"xa"}), "kernel_shape", {3, 3});
    g.nodes.insert(g.nodes.begin(), withInts(before, "pads", {1, 1, 1, 1}));
  }
  std::vector<std::string> qdq = {"s", "zp"};
  if (!o.zeroPoint) qdq.pop_back();
  if (o.quantize) {
    std::vector<std::string> q = {"p"}, dq = {"q"};
    q.insert(q.end(), qdq.begin(), qdq.end());
    dq.insert(dq.end(), qdq.begin(), qdq.end());
    g.nodes.push_back(makeNode("QuantizeLinear", q, {"q"}));
    g.nodes.push_back(makeNode("DequantizeLinear", dq, {"dq"}));
    g.nodes.push_back(makeNode("DequantizeLinear", {"wq", "sw"}, {"wd"}));
  }
  g.nodes.push_back(
      withInts(makeNode("Conv", {o.quantize ? "dq" : "p", o.quantize ? "wd" : "w2"}, {"y"}), "pads",
               {1, 1, 1, 1}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (o.secondReader) {
    g.nodes.push_back(makeNode("Sigmoid", {"p"}, {"side"}));
    g.outputs.push_back({"side", DataType::kFloat32, false, {}});
  }
  if (o.convReadTwice) {
    g.nodes.push_back(makeNode("Sigmoid", {"r"}, {"conv_side"}));
    g.outputs.push_back({"conv_side", DataType::kFloat32, false, {}});
  }
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 3, 32, 32}, 11, -2, 2)}});
}

Network optimized(const Network& original, bool channelsLast, bool halfPrecision,
                  std::vector<PassApplication>* applied,
                  const std::vector<std::string>& disabled = {}, int level = 2) {
  Network net = original;
  Status s = runPasses(net, level, disabled, applied, channelsLast, halfPrecision);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return net;
}

const Node* findOp(const Network& net, const std::string& op) {
  for (const Node& n : net.graph.nodes)
    if (n.opType == op) return &n;
  return nullptr;
}

int count(const Network& net, const std::string& op) {
  return static_cast<int>(std::count_if(net.graph.nodes.begin(), net.graph.nodes.end(),
                                        [&](const Node& n) { return n.opType == op; }));
}

void expectSameOutputs(const Network& actual, const Network& expected, double tolerance) {
  const auto a = run(actual), e = run(expected);
  ASSERT_EQ(a.size(), e.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(e[i].name);
    expectTensorNear(a[i].tensor, e[i].tensor, tolerance, tolerance);
  }
}

TEST(FuseConvMaxPool, StemBecomesOneChannelsLastLayerFeedingTheInt8Region) {
  const Network original = stem();
  std::vector<PassApplication> applied;
  const Network fused = optimized(original, true, true, &applied);
  // FusedConvMaxPool -> QuantizedConv (NHWC, straight from the stem) -> Transpose for y.
  ASSERT_EQ(fused.graph.nodes.size(), 3u);
  const Node* layer = findOp(fused, kFusedConvMaxPoolOp);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->domain, kKilnDomain);
  EXPECT_TRUE(isChannelsLast(*layer));
  EXPECT_EQ(layer->inputs[kConvPoolX], "x") << "X stays channels-first, no reformat before it";
  EXPECT_EQ(fused.graph.initializers.at(layer->inputs[kConvPoolW]).shape(), (Shape{64, 3, 7, 7}))
      << "W stays [M, C, R, S]";
  EXPECT_TRUE(layer->hasInput(kConvPoolBias)) << "the folded BN's bias";
  EXPECT_EQ(layer->inputs[kConvPoolYScale], "s");
  EXPECT_EQ(layer->inputs[kConvPoolYZeroPoint], "zp");
  EXPECT_EQ(layer->attrString("activation", ""), "relu");
  EXPECT_EQ(layer->attrInts("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(layer->attrInts("pads"), (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_EQ(layer->attrInts("pool_kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(layer->attrInts("pool_strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(layer->attrInts("pool_pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(layer->attrInts("pool_dilations"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(layer->attrInt("pool_ceil_mode", -1), 0);
  const std::vector<std::string> sources = {"c", "bn", "r", "p", "q"};
  EXPECT_EQ(layer->attrStrings(kSourceNodesAttribute), sources);
  EXPECT_EQ(layer->attrString(kFusionPassAttribute, ""), kConvMaxPoolPass);
  const Node* qconv = findOp(fused, kQuantizedConvOp);
  ASSERT_NE(qconv, nullptr);
  EXPECT_TRUE(isChannelsLast(*qconv));
  EXPECT_EQ(qconv->inputs[kQuantX], layer->outputs[0]) << "no reformat between the two";
  EXPECT_EQ(count(fused, "Transpose"), 1);
  int records = 0;
  for (const PassApplication& a : applied) {
    if (a.pass != kConvMaxPoolPass) continue;
    ++records;
    EXPECT_EQ(a.nodes, sources);
    EXPECT_EQ(a.layer, "c + bn + r + p + q");
  }
  EXPECT_EQ(records, 1);
  // The same kernels as the pipeline without the pass, so the same values; the BN fold
  // moves float results by an ulp, hence a tolerance against the original.
  std::vector<PassApplication> unused;
  expectSameOutputs(fused, optimized(original, true, false, &unused), 0);
  expectSameOutputs(fused, original, 1e-4);
}

// A strongly typed export's stem (issue 24): X cast to float16, the filter and bias stored
// float16, the pool's output cast back to float32 for an opset-17 QuantizeLinear. The Cast
// before the Q folds into it and the stem is one layer, as in the plan it came from.
TEST(FuseConvMaxPool, StronglyTypedStemWithHalfWeightsAndACastBeforeItsQ) {
  Network typed;
  typed.opsets[""] = 17;
  Graph& g = typed.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(32), DimExpr(32)}}};
  g.initializers["w"] =
      castTensor(randomTensor(DataType::kFloat32, {64, 3, 7, 7}, 1, -0.2, 0.2), DataType::kFloat16);
  g.initializers["b"] =
      castTensor(randomTensor(DataType::kFloat32, {64}, 2, -0.5, 0.5), DataType::kFloat16);
  g.initializers["s"] = floatTensor({}, {0.03f});
  g.initializers["zp"] = castTensor(
      Tensor::fromVector(DataType::kFloat64, {}, std::vector<double>{0.0}), DataType::kInt8);
  g.initializers["wq"] = int8Tensor({16, 64, 3, 3}, 6);
  g.initializers["sw"] = floatTensor({}, {0.002f});
  Node conv = withInts(makeNode("Conv", {"x16", "w", "b"}, {"c"}), "kernel_shape", {7, 7});
  conv = withInts(withInts(conv, "strides", {2, 2}), "pads", {3, 3, 3, 3});
  Node pool = withInts(makeNode("MaxPool", {"r"}, {"p"}), "kernel_shape", {3, 3});
  pool = withInts(withInts(pool, "strides", {2, 2}), "pads", {1, 1, 1, 1});
  g.nodes = {withInt(makeNode("Cast", {"x"}, {"x16"}), "to", 10),
             conv,
             makeNode("Relu", {"c"}, {"r"}),
             pool,
             withInt(makeNode("Cast", {"p"}, {"p32"}), "to", 1),
             makeNode("QuantizeLinear", {"p32", "s", "zp"}, {"q"}),
             makeNode("DequantizeLinear", {"q", "s", "zp"}, {"dq"}),
             makeNode("DequantizeLinear", {"wq", "sw"}, {"wd"}),
             withInts(makeNode("Conv", {"dq", "wd"}, {"y"}), "pads", {1, 1, 1, 1})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  std::vector<PassApplication> applied;
  const Network fused = optimized(typed, true, true, &applied);
  const Node* layer = findOp(fused, kFusedConvMaxPoolOp);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->inputs[kConvPoolX], "x16");
  EXPECT_EQ(count(fused, "Cast"), 1) << "only the input's cast to float16 stays";
  expectSameOutputs(fused, typed, 1e-4);  // the INT8 conv after it sums in its own order
}

// The stem's X stays channels-first: when the node writing it goes channels-last (an
// AveragePool here), X must come back through a Transpose (the layout pass once renamed
// it to its NHWC twin and left the stem reading a value nobody wrote).
TEST(FuseConvMaxPool, ChannelsLastProducerOfXGetsATransposeBack) {
  StemOptions o;
  o.poolBefore = true;
  const Network original = stem(o);
  std::vector<PassApplication> applied;
  const Network fused = optimized(original, true, true, &applied);
  const Node* layer = findOp(fused, kFusedConvMaxPoolOp);
  ASSERT_NE(layer, nullptr);
  const Node* pool = findOp(fused, "AveragePool");
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(isChannelsLast(*pool));
  bool written = false;
  for (const Node& n : fused.graph.nodes)
    written |=
        std::find(n.outputs.begin(), n.outputs.end(), layer->inputs[kConvPoolX]) != n.outputs.end();
  EXPECT_TRUE(written) << "the stem's X '" << layer->inputs[kConvPoolX] << "' has no producer";
  std::vector<PassApplication> unused;
  expectSameOutputs(fused, optimized(original, true, false, &unused), 0);
}

TEST(FuseConvMaxPool, RunsOnlyInHalfPrecisionChannelsLastPipelines) {
  const Network original = stem();
  struct Case {
    const char* what;
    bool channelsLast, halfPrecision;
    std::vector<std::string> disabled;
    int level;
  };
  // The layer's kernel writes NHWC only: not without the layout pass after it either
  // (level 1, or the layout pass disabled).
  for (const Case& c : {Case{"fp32 channels-last", true, false, {}, 2},
                        Case{"half precision, channels-first", false, true, {}, 2},
                        Case{"disabled", true, true, {kConvMaxPoolPass}, 2},
                        Case{"layout pass disabled", true, true, {kChannelsLastPass}, 2},
                        Case{"level 1 (no layout pass)", true, true, {}, 1}}) {
    SCOPED_TRACE(c.what);
    std::vector<PassApplication> applied;
    const Network net =
        optimized(original, c.channelsLast, c.halfPrecision, &applied, c.disabled, c.level);
    EXPECT_EQ(count(net, kFusedConvMaxPoolOp), 0);
    EXPECT_EQ(count(net, "FusedConv"), 1);
    EXPECT_EQ(count(net, "MaxPool"), 1);
    EXPECT_EQ(count(net, "QuantizeLinear"), 1);
    for (const PassApplication& a : applied) EXPECT_NE(a.pass, kConvMaxPoolPass);
  }
}

TEST(FuseConvMaxPool, OnlyTheCudaKernelsStems) {
  StemOptions noQuantize, filters32, stride1, shared, uint8Output, channels5, zeroPoint3, pool4,
      width9, convShared, channels4;
  noQuantize.quantize = false;
  channels5.channels = 5;
  channels4.channels = 4;
  zeroPoint3.zeroPointValue = 3;
  pool4.poolKernel = 4;
  width9.filterWidth = 9;
  convShared.convReadTwice = true;
  filters32.filters = 32;
  stride1.convStrides = {1, 1};
  shared.secondReader = true;
  uint8Output.zeroPoint = false;
  struct Case {
    const char* what;
    StemOptions options;
  };
  for (const Case& c :
       {Case{"no QuantizeLinear", noQuantize}, Case{"32 filters", filters32},
        Case{"conv stride 1", stride1}, Case{"MaxPool output read twice", shared},
        Case{"uint8 QuantizeLinear", uint8Output}, Case{"5 channels (C > 4)", channels5},
        Case{"4 channels x 7 rows: 28 filter rows > 22", channels4},
        Case{"zero point 3", zeroPoint3}, Case{"4x4 pool window", pool4},
        Case{"filter width 9", width9}, Case{"conv output read twice", convShared}}) {
    SCOPED_TRACE(c.what);
    const Network original = stem(c.options);
    std::vector<PassApplication> applied;
    const Network net = optimized(original, true, true, &applied);
    EXPECT_EQ(count(net, kFusedConvMaxPoolOp), 0);
    EXPECT_EQ(count(net, "FusedConv"), 1 + (c.options.quantize ? 0 : 1));
    EXPECT_EQ(count(net, "MaxPool"), 1);
    for (const PassApplication& a : applied) EXPECT_NE(a.pass, kConvMaxPoolPass);
  }
}

// The CPU backend's tactics answering like the CUDA backend: channels-last for
// tensor-core math, one precision per engine. Nothing is timed (the CPU's timing runs
// kernels without the executor's channels-last permutations): every candidate takes 1 ms.
class ChannelsLastCpu final : public BuildBackend {
 public:
  PlanIdentity identity() const override { return m_cpu->identity(); }
  bool uniformPrecision() const override { return true; }
  bool prefersChannelsLast(bool tensorCoreMath) const override { return tensorCoreMath; }
  std::vector<TacticDescriptor> tactics(const Node& node) const override {
    return m_cpu->tactics(node);
  }
  Result<double> timeTactic(const Node&, const std::string&, DataType, const LayerInputs&,
                            int) override {
    return 1.0;
  }

 private:
  std::unique_ptr<BuildBackend> m_cpu = cpuBuildBackend();
};

// The builder asks for the pass with --fp16 (or --bf16) only; the layer then computes in
// the engine's float precision (X recorded fp16) and writes int8.
TEST(FuseConvMaxPool, Fp16BuildKeepsXFloatAndYInt8) {
  const auto original = std::make_shared<const Network>(stem());
  ChannelsLastCpu backend;
  BuilderConfig config;
  config.optimizationLevel = 2;
  config.fp16 = true;
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = {{"*", DataType::kFloat16}};
  auto plan = buildPlan(original, config, backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  const LayerRecord* stemLayer = nullptr;
  for (const LayerRecord& l : plan.value().record.layers)
    if (l.opType == kFusedConvMaxPoolOp) stemLayer = &l;
  ASSERT_NE(stemLayer, nullptr);
  EXPECT_EQ(stemLayer->layerType, "Convolution");
  EXPECT_EQ(stemLayer->fusion, kConvMaxPoolPass);
  EXPECT_EQ(stemLayer->precision, DataType::kFloat16);
  EXPECT_EQ(stemLayer->outputType, DataType::kInt8) << stemLayer->precisionReason;
  ASSERT_FALSE(stemLayer->inputs.empty());
  EXPECT_EQ(stemLayer->inputs[0].name, "x");
  EXPECT_EQ(stemLayer->inputs[0].type, DataType::kFloat16);
  ASSERT_EQ(stemLayer->outputs.size(), 1u);
  EXPECT_EQ(stemLayer->outputs[0].type, DataType::kInt8);
  EXPECT_EQ(stemLayer->outputs[0].dimensions, (Shape{2, 8, 8, 64})) << "NHWC";
  // A plan file keeps the node (its importer knows the op) and the int8 output type.
  auto bytes = serializePlan(plan.value());
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  auto loaded = deserializePlan(bytes.value(), "stem.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  const Node* layer = findOp(*loaded.value().network, kFusedConvMaxPoolOp);
  ASSERT_NE(layer, nullptr);
  EXPECT_TRUE(isChannelsLast(*layer));
  EXPECT_EQ(layer->attrInts("pool_pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  const size_t at = static_cast<size_t>(layer - loaded.value().network->graph.nodes.data());
  ASSERT_LT(at, loaded.value().layers.size());
  EXPECT_EQ(loaded.value().layers[at].outputType, DataType::kInt8);
  // fp32 with TF32 (channels-last, not half precision): no such layer.
  config.fp16 = false;
  config.layerPrecisions.clear();
  auto fp32 = buildPlan(original, config, backend);
  ASSERT_TRUE(fp32.isOk()) << fp32.status().toString();
  for (const LayerRecord& l : fp32.value().record.layers) EXPECT_NE(l.opType, kFusedConvMaxPoolOp);
}

// A rule pinning the stem's conv to float32 in an fp16 build: the builder runs the passes
// again without fuse_conv_max_pool (a half-precision-only layer would run on the host).
TEST(FuseConvMaxPool, Float32RuleOnTheStemKeepsItUnfused) {
  const auto original = std::make_shared<const Network>(stem());
  ChannelsLastCpu backend;
  BuilderConfig config;
  config.optimizationLevel = 2;
  config.fp16 = true;
  config.precisionConstraints = ConstraintMode::kPrefer;
  config.layerPrecisions = {{"c", DataType::kFloat32}};
  auto plan = buildPlan(original, config, backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  bool stemConv = false;
  for (const LayerRecord& l : plan.value().record.layers) {
    EXPECT_NE(l.opType, kFusedConvMaxPoolOp);
    stemConv |= l.opType == "FusedConv";
  }
  EXPECT_TRUE(stemConv);
  for (const PassApplication& a : plan.value().record.passes) EXPECT_NE(a.pass, kConvMaxPoolPass);
}

// Level 2, as the layout pass it needs (the listing says when it can run).
TEST(FuseConvMaxPool, ListedRightBeforeTheLayoutPassAtLevelTwo) {
  const std::vector<PassInfo> passes = listPasses();
  auto at = std::find_if(passes.begin(), passes.end(),
                         [](const PassInfo& p) { return p.name == kConvMaxPoolPass; });
  ASSERT_NE(at, passes.end());
  EXPECT_EQ(at->minimumLevel, 2);
  ASSERT_NE(at + 1, passes.end());
  EXPECT_EQ((at + 1)->name, kChannelsLastPass);
}

}  // namespace
}  // namespace kiln::test
