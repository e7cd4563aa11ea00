// INT8 builds on the CPU backend: fold_qdq against the float simulation of the same
// Q/DQ graph, the ONNX Runtime QDQ fixture against ONNX Runtime's own output, and
// implicit INT8 from a calibration of the small CNN against FP32, with the precision
// record (rules, pins, fallbacks) and an edited range reaching the engine.
#include <gtest/gtest.h>

#include <cmath>

#include "builder/build_steps.h"
#include "ir/quantized_layers.h"
#include "kiln/builder.h"
#include "kiln/calibration.h"
#include "kiln/calibration_data.h"
#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/plan.h"
#include "kiln/tensor_io.h"
#include "compare/error_stats.h"
#include "engine/quant/quant_test_support.h"

namespace kiln {
namespace {

const std::string kQuantDir = std::string(KILN_TEST_DATA_DIR) + "/quant";

std::shared_ptr<const Network> loadModel(const std::string& file) {
  auto network = importOnnxFile(kQuantDir + "/" + file);
  EXPECT_TRUE(network.isOk()) << network.status().toString();
  return std::make_shared<const Network>(std::move(network.value()));
}

std::vector<NamedTensor> run(const Network& network, const std::map<std::string, Tensor>& inputs,
                             const Plan* plan = nullptr) {
  return test::runOnCpu(network, inputs, plan);
}

std::vector<NamedTensor> runPlan(const Plan& plan, const std::map<std::string, Tensor>& inputs) {
  return run(*plan.network, inputs, &plan);
}

// Batch 1..8 at 16x16 (the fixtures' batch dim is dynamic).
BuilderConfig baseConfig() {
  BuilderConfig config;
  OptimizationProfile profile;
  profile.inputs["input"] = {{1, 3, 16, 16}, {4, 3, 16, 16}, {8, 3, 16, 16}};
  config.profiles = {profile};
  config.optimizationLevel = 1;  // one timing run per candidate keeps the tests fast
  return config;
}

Plan build(std::shared_ptr<const Network> network, const BuilderConfig& config) {
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(network, config, *backend);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  return plan.isOk() ? std::move(plan.value()) : Plan();
}

const LayerRecord* layerFrom(const BuildRecord& record, const std::string& onnxNode) {
  for (const LayerRecord& layer : record.layers)
    for (const std::string& source : layer.sourceNodes)
      if (source == onnxNode) return &layer;
  return nullptr;
}

std::vector<std::map<std::string, Tensor>> calibrationBatches(int batchSize) {
  auto samples = loadCalibrationFolder(kQuantDir + "/calib", {});
  EXPECT_TRUE(samples.isOk()) << samples.status().toString();
  auto batches = makeCalibrationBatches(*samples, "input", 4, batchSize);
  EXPECT_TRUE(batches.isOk()) << batches.status().toString();
  return *batches;
}

// baseConfig() for an implicit INT8 build with `table` (which must outlive it).
BuilderConfig int8Config(const CalibrationTable& table) {
  BuilderConfig config = baseConfig();
  config.int8 = true;
  config.calibration = &table;
  return config;
}

CalibrationTable calibrate(const Network& network, CalibrationMethod method) {
  CalibrationOptions options;
  options.method = method;
  auto result = calibrateNetwork(network, calibrationBatches(4), options);
  EXPECT_TRUE(result.isOk()) << result.status().toString();
  return result->table;
}

// ---- fold_qdq on a graph built in code ---------------------------------------------

Tensor scalar(DataType type, double v) {
  Tensor t(type, Shape{});
  if (type == DataType::kFloat32) t.data<float>()[0] = static_cast<float>(v);
  if (type == DataType::kInt8) t.data<int8_t>()[0] = static_cast<int8_t>(v);
  if (type == DataType::kUInt8) t.data<uint8_t>()[0] = static_cast<uint8_t>(v);
  return t;
}

Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
          const std::string& name) {
  Node n;
  n.opType = op;
  n.name = name;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// x -> Q/DQ (uint8, zero point 3) -> Conv(DQ(int8 W, per channel), B) -> Relu -> Q/DQ
// (int8, zero point -5) -> y. Random non-zero weights.
Network qdqConvNetwork() {
  Network n;
  n.opsets[""] = 13;
  Graph& g = n.graph;
  g.inputs.push_back(
      {"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(4), DimExpr(6), DimExpr(6)}});
  g.outputs.push_back({"y", DataType::kFloat32, false, {}});
  Tensor w(DataType::kInt8, {5, 4, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<int8_t>()[i] = static_cast<int8_t>((i * 37) % 255 - 127);
  g.initializers["w_q"] = w;
  g.initializers["w_scale"] = Tensor::fromVector(
      DataType::kFloat32, {5}, std::vector<float>{0.01f, 0.02f, 0.005f, 0.015f, 0.008f});
  g.initializers["w_zero"] = Tensor(DataType::kInt8, {5});
  g.initializers["b"] = Tensor::fromVector(DataType::kFloat32, {5},
                                           std::vector<float>{0.1f, -0.2f, 0.05f, 0.3f, -0.1f});
  g.initializers["x_scale"] = scalar(DataType::kFloat32, 0.008);
  g.initializers["x_zero"] = scalar(DataType::kUInt8, 3);
  g.initializers["y_scale"] = scalar(DataType::kFloat32, 0.02);
  g.initializers["y_zero"] = scalar(DataType::kInt8, -5);
  g.nodes.push_back(node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"xq"}, "q_x"));
  g.nodes.push_back(node("DequantizeLinear", {"xq", "x_scale", "x_zero"}, {"xf"}, "dq_x"));
  Node wdq = node("DequantizeLinear", {"w_q", "w_scale", "w_zero"}, {"wf"}, "dq_w");
  Attribute axis;
  axis.i = 0;
  wdq.attributes["axis"] = axis;
  g.nodes.push_back(wdq);
  Node conv = node("Conv", {"xf", "wf", "b"}, {"c"}, "conv");
  Attribute pads;
  pads.kind = Attribute::Kind::kInts;
  pads.ints = {1, 1, 1, 1};
  conv.attributes["pads"] = pads;
  g.nodes.push_back(conv);
  g.nodes.push_back(node("Relu", {"c"}, {"r"}, "relu"));
  g.nodes.push_back(node("QuantizeLinear", {"r", "y_scale", "y_zero"}, {"rq"}, "q_r"));
  g.nodes.push_back(node("DequantizeLinear", {"rq", "y_scale", "y_zero"}, {"y"}, "dq_r"));
  return n;
}

// The folded network against the float simulation (the Q/DQ graph run as written) on
// random input x [2, 4, 6, 6] from `seed`: output `shape`, not zero, within one output
// step (y_scale 0.02) everywhere and differing rarely (only float-order ties).
void expectFoldedMatchesSimulation(const Network& original, const Network& folded,
                                   const Shape& shape, uint32_t seed) {
  const std::map<std::string, Tensor> inputs = {
      {"x", randomInputTensor(DataType::kFloat32, {2, 4, 6, 6}, seed)}};
  const Tensor simulated = run(original, inputs)[0].tensor;
  const Tensor integer = run(folded, inputs)[0].tensor;
  ASSERT_EQ(simulated.shape(), shape);
  ASSERT_EQ(integer.shape(), shape);
  double maxDiff = 0, maxValue = 0;
  int differing = 0;
  for (int64_t i = 0; i < simulated.numel(); ++i) {
    const double d = std::fabs(simulated.data<float>()[i] - integer.data<float>()[i]);
    maxDiff = std::max(maxDiff, d);
    differing += d > 1e-6;
    maxValue = std::max(maxValue, std::fabs(static_cast<double>(simulated.data<float>()[i])));
  }
  EXPECT_GT(maxValue, 0.2);
  EXPECT_LE(maxDiff, 0.02 + 1e-6);
  EXPECT_LT(differing, simulated.numel() / 50);
}

TEST(FoldQdq, ConvFoldsIntoOneInt8LayerMatchingTheFloatSimulation) {
  const Network original = qdqConvNetwork();
  Network folded = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(folded, 1, {}, &applied).isOk());
  int quantized = 0;
  for (const Node& n : folded.graph.nodes) quantized += isQuantizedLayer(n);
  ASSERT_EQ(quantized, 1);
  const Node* layer = nullptr;
  for (const Node& n : folded.graph.nodes)
    if (isQuantizedLayer(n)) layer = &n;
  EXPECT_EQ(layer->opType, kQuantizedConvOp);
  EXPECT_TRUE(layer->hasInput(kQuantYScale));  // the Q after Relu folded in: INT8 output
  EXPECT_EQ(layer->attrString("activation", ""), "relu");
  // Q(x), the layer, its DQ for y: three nodes.
  EXPECT_EQ(folded.graph.nodes.size(), 3u);
  bool recorded = false;
  for (const PassApplication& a : applied) recorded = recorded || a.pass == "fold_qdq";
  EXPECT_TRUE(recorded);

  expectFoldedMatchesSimulation(original, folded, Shape{2, 5, 6, 6}, 11);
}

// A Conv whose activation is GELU fuses into a FusedConv with gelu_erf, which has no INT8
// epilogue: it stays a float layer between its Q/DQ pairs, computing the simulation's values.
TEST(FoldQdq, ConvWithGeluStaysFloat) {
  Network original = qdqConvNetwork();
  original.opsets[""] = 20;
  for (Node& n : original.graph.nodes) {
    n.opset = 20;
    if (n.name == "relu") n.opType = "Gelu";
  }
  Network folded = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(folded, 1, {}, &applied).isOk());
  bool geluLayer = false;
  for (const Node& n : folded.graph.nodes) {
    EXPECT_FALSE(isQuantizedLayer(n)) << n.displayName();
    geluLayer = geluLayer || n.attrString("activation", "") == "gelu_erf";
  }
  EXPECT_TRUE(geluLayer);
  const std::map<std::string, Tensor> inputs = {
      {"x", randomInputTensor(DataType::kFloat32, {2, 4, 6, 6}, 12)}};
  const Tensor simulated = run(original, inputs)[0].tensor;
  const Tensor kept = run(folded, inputs)[0].tensor;
  ASSERT_EQ(kept.shape(), simulated.shape());
  for (int64_t i = 0; i < kept.numel(); ++i)
    ASSERT_NEAR(kept.data<float>()[i], simulated.data<float>()[i], 1e-5) << "element " << i;
}

TEST(FoldQdq, LevelZeroStillFoldsAndDisablingKeepsTheSimulation) {
  Network folded = qdqConvNetwork();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(folded, 0, {}, &applied).isOk());
  int quantized = 0;
  for (const Node& n : folded.graph.nodes) quantized += isQuantizedLayer(n);
  EXPECT_EQ(quantized, 1);
  Network kept = qdqConvNetwork();
  ASSERT_TRUE(runPasses(kept, 1, {"fold_qdq"}, &applied).isOk());
  for (const Node& n : kept.graph.nodes) EXPECT_FALSE(isQuantizedLayer(n)) << n.displayName();
}

// qdqConvNetwork with a MaxPool (3x3, stride 2, padded) between the Relu and its Q/DQ,
// as QAT exports that quantize only layer inputs write it.
Network qdqConvPoolNetwork() {
  Network n = qdqConvNetwork();
  Graph& g = n.graph;
  for (Node& node : g.nodes)
    if (node.name == "q_r") node.inputs[0] = "p";
  Node pool = node("MaxPool", {"r"}, {"p"}, "pool");
  Attribute kernel, strides, pads;
  kernel.kind = strides.kind = pads.kind = Attribute::Kind::kInts;
  kernel.ints = {3, 3};
  strides.ints = {2, 2};
  pads.ints = {1, 1, 1, 1};
  pool.attributes["kernel_shape"] = kernel;
  pool.attributes["strides"] = strides;
  pool.attributes["pads"] = pads;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == "relu") {
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, pool);
      break;
    }
  return n;
}

// Rule 4: the Q after the MaxPool moves before it, so the Conv folds with an INT8 output
// and the MaxPool pools int8 values; the result matches the float simulation.
TEST(FoldQdq, QuantizeMovesBackThroughMaxPoolOntoTheConv) {
  const Network original = qdqConvPoolNetwork();
  Network folded = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(folded, 1, {}, &applied).isOk());
  const Node* layer = nullptr;
  const Node* pool = nullptr;
  for (const Node& n : folded.graph.nodes) {
    if (isQuantizedLayer(n)) layer = &n;
    if (n.opType == "MaxPool") pool = &n;
  }
  ASSERT_NE(layer, nullptr);
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(layer->hasInput(kQuantYScale));     // the Q folded in: INT8 output
  EXPECT_EQ(pool->inputs[0], layer->outputs[0]);  // MaxPool reads the int8 output
  // Q(x), the layer, MaxPool, the DQ for y.
  EXPECT_EQ(folded.graph.nodes.size(), 4u);

  expectFoldedMatchesSimulation(original, folded, Shape{2, 5, 3, 3}, 12);

  // Without rule 4's target (the MaxPool's input read twice) nothing moves: the layer
  // keeps a float output and MaxPool pools it.
  Network shared = qdqConvPoolNetwork();
  shared.graph.outputs.push_back({"r", DataType::kFloat32, false, {}});
  ASSERT_TRUE(runPasses(shared, 1, {}, &applied).isOk());
  for (const Node& n : shared.graph.nodes) {
    if (isQuantizedLayer(n)) EXPECT_FALSE(n.hasInput(kQuantYScale)) << n.displayName();
    if (n.opType == "MaxPool") EXPECT_EQ(n.inputs[0], "r");
  }
}

// Exporters write the Q's scale as a Constant node right before the Q, after the
// MaxPool: the Q still moves (the MaxPool goes after it, so the order stays
// topological) and the Conv folds with an INT8 output.
TEST(FoldQdq, QuantizeMovesBackWhenItsScaleIsAConstantNodeAfterTheMaxPool) {
  Network original = qdqConvPoolNetwork();
  Graph& g = original.graph;
  Node scale = node("Constant", {}, {"y_scale_c"}, "y_scale_const");
  Attribute value;
  value.kind = Attribute::Kind::kTensor;
  value.t = scalar(DataType::kFloat32, 0.02);
  scale.attributes["value"] = value;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == "q_r") {
      g.nodes[i].inputs[1] = "y_scale_c";
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), scale);
      break;
    }
  Network folded = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(folded, 1, {}, &applied).isOk());
  const Node* layer = nullptr;
  for (const Node& n : folded.graph.nodes)
    if (isQuantizedLayer(n)) layer = &n;
  ASSERT_NE(layer, nullptr);
  EXPECT_TRUE(layer->hasInput(kQuantYScale));
  expectFoldedMatchesSimulation(original, folded, Shape{2, 5, 3, 3}, 13);
}

// A layer rule 3 does not fold (float weights outside a calibrated build) keeps the Q
// after the MaxPool: moved, the Q would read the unpooled tensor for nothing, and the
// MaxPool would leave float (a precision rule on it could no longer hold).
TEST(FoldQdq, QuantizeStaysWhenTheLayerDoesNotFold) {
  Network original = qdqConvPoolNetwork();
  Graph& g = original.graph;
  Tensor w(DataType::kFloat32, {5, 4, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * ((i * 37) % 255 - 127);
  g.initializers["w_float"] = w;
  for (Node& n : g.nodes)
    if (n.name == "conv") n.inputs[1] = "w_float";
  Network folded = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(folded, 1, {}, &applied).isOk());
  std::map<std::string, std::string> writer;  // value -> the op type writing it
  for (const Node& n : folded.graph.nodes) {
    EXPECT_FALSE(isQuantizedLayer(n)) << n.displayName();
    for (const std::string& out : n.outputs) writer[out] = n.opType;
  }
  int pools = 0;
  for (const Node& n : folded.graph.nodes)
    if (n.opType == "MaxPool") {
      ++pools;
      EXPECT_EQ(writer[n.inputs[0]], "FusedConv");  // pools the layer's floats
    }
  EXPECT_EQ(pools, 1);
}

// ---- the ONNX Runtime QDQ model ----------------------------------------------------

TEST(QdqModel, ImportsFoldsAndMatchesOnnxRuntime) {
  auto network = loadModel("small_cnn_qdq.onnx");
  Plan plan = build(network, baseConfig());
  const BuildRecord& record = plan.record;
  for (const char* layer : {"conv0", "conv1", "conv2", "conv3", "dwconv4", "fc6"}) {
    const LayerRecord* l = layerFrom(record, layer);
    ASSERT_NE(l, nullptr) << layer;
    EXPECT_EQ(l->precision, DataType::kInt8) << layer;
    EXPECT_NE(l->precisionReason.find("explicit Q/DQ"), std::string::npos) << l->precisionReason;
    EXPECT_EQ(l->tactic.rfind("cpu.int8.", 0), 0u) << l->tactic;
  }
  const LayerRecord* gap = layerFrom(record, "gap5");
  ASSERT_NE(gap, nullptr);
  EXPECT_NE(gap->precisionReason.find("no INT8 implementation for GlobalAveragePool"),
            std::string::npos)
      << gap->precisionReason;
  // MaxPool commutes with DQ: it runs on the int8 values.
  const LayerRecord* pool = layerFrom(record, "pool0");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->inputs.at(0).type, DataType::kInt8);

  auto input = readNpyFile(kQuantDir + "/qdq_input.npy");
  auto expected = readNpyFile(kQuantDir + "/qdq_expected.npy");
  ASSERT_TRUE(input.isOk() && expected.isOk());
  const std::map<std::string, Tensor> inputs = {{"input", *input}};
  const float logitsScale = network->graph.initializers.at("logits_scale").data<float>()[0];
  for (const auto& [what, out] : {std::pair{"int8 plan", runPlan(plan, inputs)[0].tensor},
                                  std::pair{"float simulation", run(*network, inputs)[0].tensor}}) {
    ASSERT_EQ(out.shape(), expected->shape());
    for (int64_t i = 0; i < out.numel(); ++i)
      EXPECT_NEAR(out.data<float>()[i], expected->data<float>()[i], 2.01 * logitsScale)
          << what << " element " << i;
  }
}

TEST(QdqModel, ObeyedRuleCannotTakeAQuantizedLayerOutOfInt8) {
  BuilderConfig config = baseConfig();
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = {{"conv1", DataType::kFloat16}};
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(loadModel("small_cnn_qdq.onnx"), config, *backend);
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("'conv1:fp16' cannot hold"), std::string::npos)
      << plan.status().message();
}

// ---- implicit INT8 from a calibration ----------------------------------------------

TEST(ImplicitInt8, SmallCnnStaysCloseToFp32) {
  auto network = loadModel("small_cnn.onnx");
  const CalibrationTable table = calibrate(*network, CalibrationMethod::kEntropy);
  BuilderConfig config = int8Config(table);
  Plan plan = build(network, config);
  for (const char* layer : {"conv0", "conv1", "conv2", "conv3", "dwconv4", "fc6"}) {
    const LayerRecord* l = layerFrom(plan.record, layer);
    ASSERT_NE(l, nullptr) << layer;
    EXPECT_EQ(l->precision, DataType::kInt8) << layer;
    EXPECT_NE(l->precisionReason.find("calibrated"), std::string::npos) << l->precisionReason;
  }
  const LayerRecord* gap = layerFrom(plan.record, "gap5");
  ASSERT_NE(gap, nullptr);
  EXPECT_NE(gap->precisionReason.find("not int8: no INT8 implementation"), std::string::npos);

  // The calibration data plus held-out random inputs, FP32 reference vs INT8 plan.
  std::vector<std::map<std::string, Tensor>> inputs = calibrationBatches(4);
  inputs.push_back({{"input", randomInputTensor(DataType::kFloat32, {4, 3, 16, 16}, 5)}});
  std::vector<std::vector<NamedTensor>> reference, quantized;
  for (const auto& in : inputs) {
    reference.push_back(run(*network, in));
    quantized.push_back(runPlan(plan, in));
  }
  auto stats = compare::compareOutputRuns(quantized, reference,
                                          compare::defaultTolerance(DataType::kFloat32), 1);
  ASSERT_TRUE(stats.isOk()) << stats.status().toString();
  const compare::ErrorStats& logits = stats->at(0);
  double refMax = 0;
  for (const auto& outs : reference)
    for (int64_t i = 0; i < outs[0].tensor.numel(); ++i)
      refMax = std::max(refMax, std::fabs(static_cast<double>(outs[0].tensor.data<float>()[i])));
  // The stated INT8 error bound (docs/quantization.md): cosine >= 0.999, max abs error
  // within 10% of the largest logit, top-1 agreement >= 90% of the rows.
  EXPECT_GE(logits.cosine, 0.999) << compare::formatAccuracySummary(*stats);
  EXPECT_LE(logits.maxAbs, 0.1 * refMax) << compare::formatAccuracySummary(*stats);
  EXPECT_GT(logits.maxAbs, 0.0);  // the plan really computed in INT8
  EXPECT_EQ(logits.topRows, 12);
  EXPECT_GE(logits.top1Agreement, 0.9) << compare::formatAccuracySummary(*stats);
}

TEST(ImplicitInt8, PlanFileKeepsTheInt8Layers) {
  auto network = loadModel("small_cnn.onnx");
  const CalibrationTable table = calibrate(*network, CalibrationMethod::kMinMax);
  BuilderConfig config = int8Config(table);
  config.calibrationCachePath = "small_cnn.cache";
  Plan plan = build(network, config);
  auto bytes = serializePlan(plan);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  auto loaded = deserializePlan(*bytes, "mem");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_TRUE(loaded->record.config.int8);
  const auto in = calibrationBatches(8)[0];
  const Tensor a = runPlan(plan, in)[0].tensor;
  const Tensor b = runPlan(*loaded, in)[0].tensor;
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]);
}

TEST(ImplicitInt8, RulesPinsAndMissingRangesFallBackWithReasons) {
  auto network = loadModel("small_cnn.onnx");
  CalibrationTable table = calibrate(*network, CalibrationMethod::kMinMax);
  table.tensors["r1"].pinned = DataType::kFloat16;  // conv2 reads r1
  table.tensors.erase("r2");                        // conv3 reads r2
  BuilderConfig config = int8Config(table);
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = {{"conv1", DataType::kFloat32}};
  Plan plan = build(network, config);
  const LayerRecord* conv1 = layerFrom(plan.record, "conv1");
  const LayerRecord* conv2 = layerFrom(plan.record, "conv2");
  const LayerRecord* conv3 = layerFrom(plan.record, "conv3");
  const LayerRecord* conv0 = layerFrom(plan.record, "conv0");
  ASSERT_TRUE(conv0 && conv1 && conv2 && conv3);
  EXPECT_EQ(conv0->precision, DataType::kInt8);
  EXPECT_EQ(conv1->precision, DataType::kFloat32);
  EXPECT_NE(conv1->precisionReason.find("'conv1:fp32' keeps it out of INT8"), std::string::npos)
      << conv1->precisionReason;
  EXPECT_EQ(conv2->precision, DataType::kFloat16);
  EXPECT_NE(conv2->precisionReason.find("pinned"), std::string::npos) << conv2->precisionReason;
  EXPECT_NE(conv3->precision, DataType::kInt8);
  EXPECT_NE(conv3->precisionReason.find("no range for its input 'r2'"), std::string::npos)
      << conv3->precisionReason;
}

// A backend whose INT8 convolutions are slow on few channels (CUDA: 8) keeps conv0,
// which reads the 3-channel image, float and says why; a rule 'conv0:int8' under obey
// still makes it INT8. No wider or grouped layer falls back for its channels.
TEST(ImplicitInt8, FewInputChannelsStayFloatUnlessARuleAsksForInt8) {
  auto network = loadModel("small_cnn.onnx");
  CalibrationTable table = calibrate(*network, CalibrationMethod::kMinMax);
  BuilderConfig config = int8Config(table);
  Network copy = *network;
  build::Int8Decisions decisions;
  ASSERT_TRUE(build::insertCalibratedQdq(copy, config, &decisions, 8).isOk());
  ASSERT_EQ(decisions.fallbacks.count("conv0"), 1u);
  EXPECT_NE(decisions.fallbacks["conv0"].find("3 channel(s):"), std::string::npos)
      << decisions.fallbacks["conv0"];
  for (const auto& [layer, why] : decisions.fallbacks)
    if (layer != "conv0") EXPECT_EQ(why.find("channel(s):"), std::string::npos) << layer;
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = {{"conv0", DataType::kInt8}};
  copy = *network;
  decisions = {};
  ASSERT_TRUE(build::insertCalibratedQdq(copy, config, &decisions, 8).isOk());
  EXPECT_EQ(decisions.fallbacks.count("conv0"), 0u);
}

// The scale QuantizedConv `layer` quantizes its input with.
float inputScaleOf(const Plan& plan, const std::string& onnxNode) {
  for (const Node& n : plan.network->graph.nodes) {
    if (!isQuantizedLayer(n)) continue;
    for (const std::string& s : n.attrStrings(kSourceNodesAttribute))
      if (s == onnxNode)
        return plan.network->graph.initializers.at(n.inputs[kQuantXScale]).data<float>()[0];
  }
  ADD_FAILURE() << "no INT8 layer from " << onnxNode;
  return 0;
}

TEST(ImplicitInt8, AnEditedRangeReachesTheEngine) {
  auto network = loadModel("small_cnn.onnx");
  CalibrationTable table = calibrate(*network, CalibrationMethod::kMinMax);
  BuilderConfig config = int8Config(table);
  Plan before = build(network, config);
  // Through the text file, as a person edits it.
  std::string text = formatCalibrationCache(table);
  const double widened = table.find("r1")->amax * 4;
  auto edited = parseCalibrationCache(text + "tensor r1 " + std::to_string(widened) + "\n", "e");
  ASSERT_TRUE(edited.isOk()) << edited.status().toString();
  config.calibration = &edited.value();
  Plan after = build(network, config);
  EXPECT_FLOAT_EQ(inputScaleOf(before, "conv2"), static_cast<float>(table.find("r1")->amax / 127));
  EXPECT_FLOAT_EQ(inputScaleOf(after, "conv2"), static_cast<float>(widened / 127));
  const auto in = calibrationBatches(8)[0];
  const Tensor a = runPlan(before, in)[0].tensor;
  const Tensor b = runPlan(after, in)[0].tensor;
  double diff = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    diff = std::max(diff, std::fabs(static_cast<double>(a.data<float>()[i] - b.data<float>()[i])));
  EXPECT_GT(diff, 0.0);
}

TEST(ImplicitInt8, Int8WithoutCalibrationOrQdqIsAClearError) {
  BuilderConfig config = baseConfig();
  config.int8 = true;
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(loadModel("small_cnn.onnx"), config, *backend);
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("needs a calibration cache"), std::string::npos)
      << plan.status().message();
}

}  // namespace
}  // namespace kiln
