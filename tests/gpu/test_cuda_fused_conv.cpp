// ai.kiln FusedConv on the CUDA engine against the CPU reference: each path (cuDNN
// fused graph, conv + Kiln epilogue, and the timed choice between them) at fp32
// (TF32 off), fp16 and bf16; every activation; with and without B and Z; epilogue
// packs that straddle 7x7 channel planes and element-wise tails; 1-D and depthwise;
// then a ResNet bottleneck tail (Conv -> BN -> Add -> Relu) through the pipeline;
// a channels-last 3-channel stem with its channels zero-padded (pad_channels 4, 8,
// auto, never), and the pad's implementation text; Kiln's channels-last depthwise kernel
// forced (3x3, 5x5, 7x7, strides 1 and 2, every slice width) and timed beside cuDNN.
//
// Tolerances (as the plain convolution's): fp32 1e-4 (summation order; cuDNN may
// pick Winograd or FFT engines), fp16 1e-2 and bf16 6e-2: the inputs are rounded
// first, and the epilogue path rounds the convolution's output once more before the
// bias, residual and activation (the unfused graph rounds as often).
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/ops/layer_choice.h"
#include "backends/cuda/ops/nvrtc_module.h"
#include "gpu/gpu_op_test.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

// FusedConv(x, w, b, z; pads 1, relu) on a ResNet stage-3 shape, built by hand so
// the test can read the layer's implementation and placement.
Network residualConv(const std::string& path, cuda::Precision precision) {
  Network net;
  net.irVersion = 8;
  net.opsets[""] = 17;
  net.opsets[kKilnDomain] = 1;
  Graph& g = net.graph;
  const Shape x = {4, 64, 14, 14};
  for (const char* name : {"x", "z"}) {
    ValueInfo info{name, DataType::kFloat32, true, {}};
    for (int64_t d : x) info.shape.push_back(DimExpr(d));
    g.inputs.push_back(info);
  }
  g.initializers["w"] = roundTo(randomFloats({64, 64, 3, 3}, 2), precision);
  g.initializers["b"] = roundTo(randomFloats({64}, 3), precision);
  Node node;
  node.name = "fused";
  node.opType = "FusedConv";
  node.domain = kKilnDomain;
  node.opset = 1;
  node.inputs = {"x", "w", "b", "z"};
  node.outputs = {"y"};
  node.attributes["pads"].kind = Attribute::Kind::kInts;
  node.attributes["pads"].ints = {1, 1, 1, 1};
  node.attributes["activation"].kind = Attribute::Kind::kString;
  node.attributes["activation"].s = "relu";
  node.attributes["path"].kind = Attribute::Kind::kString;
  node.attributes["path"].s = path;
  g.nodes.push_back(node);
  g.outputs.push_back({"y", DataType::kFloat32, false, {}});
  return net;
}

struct CudaRun {
  Tensor output;
  cuda::LayerInfo layer;
};

// `choices`: the layers' recorded choices, as an engine made from a plan gets them.
Result<CudaRun> runOnCuda(const Network& net, const std::map<std::string, Tensor>& feeds,
                          cuda::Precision precision,
                          const std::map<std::string, std::string>& choices = {}) {
  cuda::EngineOptions options;
  options.precision = precision;
  options.allowTf32 = false;
  options.layerChoices = choices;
  KILN_ASSIGN_OR_RETURN(auto engine, cuda::Engine::create(std::make_shared<Network>(net), options));
  KILN_ASSIGN_OR_RETURN(auto context, engine->createContext());
  for (const auto& [name, t] : feeds) {
    KILN_RETURN_IF_ERROR(context->setInputShape(name, t.shape()));
    KILN_RETURN_IF_ERROR(context->setInput(name, t));
  }
  KILN_RETURN_IF_ERROR(context->execute());
  CudaRun run;
  KILN_ASSIGN_OR_RETURN(run.output, context->getOutput(net.graph.outputs[0].name));
  for (const cuda::LayerInfo& layer : context->layers())
    if (layer.opType == "FusedConv") run.layer = layer;
  return run;
}

TEST(CudaFusedConv, EachPathAgainstTheReference) {
  KILN_REQUIRE_GPU();
  for (const PrecisionTolerance& tol : convTolerances()) {
    for (const char* path : {"kiln_epilogue", "cudnn_graph", "auto"}) {
      SCOPED_TRACE(std::string(path) + " at " + cuda::precisionName(tol.precision));
      const Network net = residualConv(path, tol.precision);
      const std::map<std::string, Tensor> feeds = {
          {"x", roundTo(randomFloats({4, 64, 14, 14}, 1), tol.precision)},
          {"z", roundTo(randomFloats({4, 64, 14, 14}, 4), tol.precision)}};
      std::vector<NamedTensor> expected;
      ASSERT_TRUE(ReferenceBackend(net).run(feeds, &expected).isOk());
      auto run = runOnCuda(net, feeds, tol.precision);
      ASSERT_TRUE(run.isOk()) << run.status().toString();
      const cuda::LayerInfo& layer = run->layer;
      std::cout << "  " << path << " " << cuda::precisionName(tol.precision) << ": "
                << cuda::layerPlacementName(layer.placement) << " " << layer.implementation
                << (layer.note.empty() ? "" : " (" + layer.note + ")") << "\n";
      expectTensorNear(run->output, expected[0].tensor, tol.atol, tol.rtol);
      if (std::string(path) == "cudnn_graph" && layer.placement != cuda::LayerPlacement::kGpu) {
        // cuDNN may have no engine for this graph (NCHW); the reason must say so.
        EXPECT_NE(layer.note.find("fused graph"), std::string::npos) << layer.note;
        continue;
      }
      EXPECT_EQ(layer.placement, cuda::LayerPlacement::kGpu) << layer.note;
      if (std::string(path) == "kiln_epilogue")
        EXPECT_NE(layer.implementation.find("kiln epilogue (packs of"), std::string::npos);
      if (std::string(path) == "cudnn_graph")
        EXPECT_NE(layer.implementation.find("cudnn fused graph"), std::string::npos);
    }
  }
}

GpuOpTest fusedConv(const std::string& activation, float alpha = 0.f, float beta = 0.f) {
  GpuOpTest op("FusedConv", 1, kKilnDomain);
  op.attr("activation", activation).attr("activation_alpha", alpha).attr("activation_beta", beta);
  return op;
}

TEST(CudaFusedConv, EveryActivation) {
  KILN_REQUIRE_GPU();
  const std::vector<std::tuple<const char*, float, float>> cases = {
      {"none", 0.f, 0.f},           {"relu", 0.f, 0.f},       {"leaky_relu", 0.1f, 0.f},
      {"clip", -0.5f, 0.75f},       {"sigmoid", 0.f, 0.f},    {"tanh", 0.f, 0.f},
      {"hard_sigmoid", 0.2f, 0.5f}, {"hard_swish", 0.f, 0.f}, {"silu", 0.f, 0.f},
      {"gelu_erf", 0.f, 0.f},       {"gelu_tanh", 0.f, 0.f}};
  for (const auto& [activation, alpha, beta] : cases) {
    SCOPED_TRACE(activation);
    fusedConv(activation, alpha, beta)
        .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
        .input(randomFloats({2, 8, 9, 9}, 5))
        .constant(randomFloats({16, 8, 3, 3}, 6))
        .constant(randomFloats({16}, 7))
        .input(randomFloats({2, 16, 9, 9}, 8))
        .check(convTolerances());
  }
}

// wav2vec2's feature convolutions: 1-D, no bias, GELU (fuse_conv_bias_activation makes the
// rank-3 FusedConv), stride 2 and 5, at each precision against the reference.
TEST(CudaFusedConv, OneDimensionalWithGelu) {
  KILN_REQUIRE_GPU();
  for (int64_t stride : {int64_t{2}, int64_t{5}}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    fusedConv("gelu_erf")
        .attr("strides", std::vector<int64_t>{stride})
        .input(randomFloats({2, 32, 203}, 130))
        .constant(randomFloats({48, 32, 3}, 131))
        .check(convTolerances());
  }
}

TEST(CudaFusedConv, OptionalInputsPacksAndTails) {
  KILN_REQUIRE_GPU();
  // 7x7 planes: fp16 packs of 8 straddle the channel planes (bias index per element).
  fusedConv("relu")
      .input(randomFloats({2, 32, 7, 7}, 9))
      .constant(randomFloats({16, 32, 1, 1}, 10))
      .constant(randomFloats({16}, 11))
      .input(randomFloats({2, 16, 7, 7}, 12))
      .check(convTolerances());
  // 5 x 5 x 5 = 125 elements: no whole packs, element by element. No Z.
  fusedConv("sigmoid")
      .input(randomFloats({1, 3, 7, 7}, 13))
      .constant(randomFloats({5, 3, 3, 3}, 14))
      .constant(randomFloats({5}, 15))
      .check(convTolerances());
  // No B, a residual only.
  fusedConv("none")
      .attr("strides", std::vector<int64_t>{2, 2})
      .input(randomFloats({2, 4, 16, 16}, 16))
      .constant(randomFloats({8, 4, 3, 3}, 17))
      .missingInput()
      .input(randomFloats({2, 8, 7, 7}, 18))
      .check(convTolerances());
  // 1-D (run as 2-D of height 1) and depthwise.
  fusedConv("tanh")
      .input(randomFloats({3, 4, 33}, 19))
      .constant(randomFloats({6, 4, 5}, 20))
      .constant(randomFloats({6}, 21))
      .check(convTolerances());
  fusedConv("relu")
      .attr("group", int64_t{12})
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .input(randomFloats({1, 12, 20, 20}, 22))
      .constant(randomFloats({12, 1, 3, 3}, 23))
      .constant(randomFloats({12}, 24))
      .check(convTolerances());
}

TEST(CudaFusedConv, WrongResidualIsAnError) {
  KILN_REQUIRE_GPU();
  auto out = fusedConv("relu")
                 .input(randomFloats({1, 3, 8, 8}, 25))
                 .constant(randomFloats({4, 3, 1, 1}, 26))
                 .constant(randomFloats({4}, 27))
                 .input(randomFloats({1, 4, 8, 7}, 28))
                 .runCuda();
  ASSERT_FALSE(out.isOk());
  EXPECT_NE(out.status().message().find("input Z"), std::string::npos) << out.status().message();
}

// Conv -> BatchNormalization -> Add(r) -> Relu through the pipeline: one FusedConv
// on the GPU, equal to the unfused graph on the CPU.
TEST(CudaFusedConv, ResNetBottleneckTailThroughThePipeline) {
  KILN_REQUIRE_GPU();
  Network net;
  net.irVersion = 8;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  for (const char* name : {"x", "r"}) {
    ValueInfo info{name, DataType::kFloat32, true, {}};
    for (int64_t d : {2, 32, 28, 28}) info.shape.push_back(DimExpr(d));
    g.inputs.push_back(info);
  }
  g.initializers["w"] = randomFloats({32, 32, 3, 3}, 30);
  g.initializers["scale"] = randomTensor(DataType::kFloat32, {32}, 31, 0.5, 1.5);
  g.initializers["shift"] = randomFloats({32}, 32);
  g.initializers["mean"] = randomFloats({32}, 33);
  g.initializers["var"] = randomTensor(DataType::kFloat32, {32}, 34, 0.2, 2.0);
  g.nodes = {withInts(makeNode("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1}),
             makeNode("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}),
             makeNode("Add", {"bn", "r"}, {"s"}), makeNode("Relu", {"s"}, {"y"})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network fused = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
  ASSERT_EQ(fused.graph.nodes.size(), 1u);
  const std::map<std::string, Tensor> feeds = {{"x", randomFloats({2, 32, 28, 28}, 35)},
                                               {"r", randomFloats({2, 32, 28, 28}, 36)}};
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(net).run(feeds, &expected).isOk());
  auto run = runOnCuda(fused, feeds, cuda::Precision::kFloat32);
  ASSERT_TRUE(run.isOk()) << run.status().toString();
  EXPECT_EQ(run->layer.placement, cuda::LayerPlacement::kGpu) << run->layer.note;
  std::cout << "  bottleneck tail: " << run->layer.implementation << "\n";
  expectTensorNear(run->output, expected[0].tensor, 1e-4, 1e-4);
}

// A channels-last FusedConv (NHWC X, KRSC W) with 3 input channels: ResNet's stem in
// miniature (7x7, stride 2, pads 3).
GpuOpTest channelsLastStem(int64_t padChannels) {
  GpuOpTest op = fusedConv("relu");
  op.attr("kiln_channels_last", int64_t{1})
      .attr("pad_channels", padChannels)
      .attr("strides", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{3, 3, 3, 3})
      .input(randomFloats({2, 20, 20, 3}, 40))
      .constant(randomFloats({16, 7, 7, 3}, 41))
      .constant(randomFloats({16}, 42));
  return op;
}

TEST(CudaFusedConv, ChannelsLastStemWithPaddedChannels) {
  KILN_REQUIRE_GPU();
  for (int64_t pad : {int64_t{-1}, int64_t{0}, int64_t{4}, int64_t{8}}) {
    SCOPED_TRACE("pad_channels " + std::to_string(pad));
    channelsLastStem(pad).check(convTolerances());
  }
}

TEST(CudaFusedConv, PaddedChannelsAreNamedAndTimed) {
  KILN_REQUIRE_GPU();
  Network net = residualConv("auto", cuda::Precision::kFloat16);
  Graph& g = net.graph;
  g.inputs.resize(1);
  g.inputs[0].shape = {DimExpr(2), DimExpr(20), DimExpr(20), DimExpr(3)};
  g.initializers["w"] = roundTo(randomFloats({64, 3, 3, 3}, 43), cuda::Precision::kFloat16);
  Node& node = g.nodes[0];
  node.inputs = {"x", "w", "b"};
  node.attributes["kiln_channels_last"].kind = Attribute::Kind::kInt;
  node.attributes["kiln_channels_last"].i = 1;
  const Tensor x = roundTo(randomFloats({2, 20, 20, 3}, 44), cuda::Precision::kFloat16);
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(net).run({{"x", x}}, &expected).isOk());
  for (int64_t pad : {int64_t{8}, int64_t{-1}}) {
    node.attributes["pad_channels"].kind = Attribute::Kind::kInt;
    node.attributes["pad_channels"].i = pad;
    auto run = runOnCuda(net, {{"x", x}}, cuda::Precision::kFloat16);
    ASSERT_TRUE(run.isOk()) << run.status().toString();
    std::cout << "  pad_channels " << pad << ": " << run->layer.implementation << "\n";
    expectTensorNear(run->output, expected[0].tensor, 1e-2, 1e-2);
    const std::string& text = run->layer.implementation;
    EXPECT_NE(text.find("channel padding timed {"), std::string::npos) << text;
    if (pad == 8) EXPECT_NE(text.find("channels padded 3 -> 8"), std::string::npos) << text;
    if (pad == -1) EXPECT_NE(text.find("C=3="), std::string::npos) << text;  // timed unpadded
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// A channels-last depthwise FusedConv (NHWC X [n, h, w, c], W [c, k, k, 1], pads k / 2)
// for Kiln's depthwise kernel (depthwise_conv.h).
GpuOpTest channelsLastDepthwise(const std::string& path, const std::string& activation, int64_t c,
                                int64_t k, int64_t stride, int64_t h, int64_t w, bool residual,
                                uint32_t seed) {
  const int64_t pad = k / 2, ho = (h + 2 * pad - k) / stride + 1,
                wo = (w + 2 * pad - k) / stride + 1;
  GpuOpTest op = fusedConv(activation);
  op.attr("kiln_channels_last", int64_t{1})
      .attr("path", path)
      .attr("group", c)
      .attr("strides", std::vector<int64_t>{stride, stride})
      .attr("pads", std::vector<int64_t>{pad, pad, pad, pad})
      .input(randomFloats({2, h, w, c}, seed))
      .constant(randomFloats({c, k, k, 1}, seed + 1))
      .constant(randomFloats({c}, seed + 2));
  if (residual) op.input(randomFloats({2, ho, wo, c}, seed + 3));
  return op;
}

struct DepthwiseCase {
  const char* activation;
  int64_t c, k, stride, h, w;
  bool residual;
};

// ConvNeXt's 7x7 (C 96: slices of 4 packs), EfficientNet's 3x3 stride 2 with SiLU (C 24:
// one pack per slice), a 5x5 with a residual and hard-swish (C 40), a 3x3 of 64 channels
// (slices of 8 packs); widths that leave partial strips of 4 outputs and odd sizes. Slices
// of 8 packs in the padded layout: a 3x3 stride 2 with SiLU needs 49.7 KB of shared memory
// (past the default 48 KB: the launch raises the kernel's limit), a 7x7 with a residual
// 47.9 KB.
const std::vector<DepthwiseCase> kDepthwiseCases = {
    {"none", 96, 7, 1, 14, 13, false},     {"silu", 24, 3, 2, 17, 15, false},
    {"hard_swish", 40, 5, 1, 9, 11, true}, {"relu", 64, 3, 1, 8, 7, true},
    {"clip", 16, 5, 2, 10, 10, false},     {"silu", 192, 3, 2, 13, 11, false},
    {"none", 128, 7, 1, 9, 10, true}};

TEST(CudaFusedConv, KilnDepthwiseKernelAgainstTheReference) {
  KILN_REQUIRE_GPU();
  // fp16 and bf16 only: the kernel is for 16-bit storage (float32 is cuDNN's).
  const std::vector<PrecisionTolerance> tolerances = {{cuda::Precision::kFloat16, 1e-2, 1e-2},
                                                      {cuda::Precision::kBFloat16, 6e-2, 6e-2}};
  uint32_t seed = 60;
  for (const DepthwiseCase& d : kDepthwiseCases) {
    SCOPED_TRACE(std::string(d.activation) + " C " + std::to_string(d.c) + " k " +
                 std::to_string(d.k) + " stride " + std::to_string(d.stride));
    channelsLastDepthwise("kiln_depthwise", d.activation, d.c, d.k, d.stride, d.h, d.w, d.residual,
                          seed)
        .check(tolerances);
    seed += 4;
  }
}

TEST(CudaFusedConv, KilnDepthwiseIsTimedAgainstCudnnAndNamed) {
  KILN_REQUIRE_GPU();
  const GpuOpTest op =
      channelsLastDepthwise("auto", "none", 96, 7, 1, 14, 14, /*residual=*/false, 90);
  std::vector<cuda::LayerInfo> layers;
  auto out = runCudaPoisoned(op.network(), roundTo(op.feeds(), cuda::Precision::kFloat16),
                             cuda::Precision::kFloat16, "out0", &layers);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(layers.size(), 1u);
  const std::string& text = layers[0].implementation;
  std::cout << "  depthwise 7x7 C 96: " << text << "\n";
  EXPECT_NE(text.find("kiln depthwise="), std::string::npos) << text;  // timed beside cuDNN
  // A float32 layer is not a candidate.
  auto fp32 = runCudaPoisoned(op.network(), op.feeds(), cuda::Precision::kFloat32, "out0", &layers);
  ASSERT_TRUE(fp32.isOk()) << fp32.status().toString();
  EXPECT_EQ(layers[0].implementation.find("kiln depthwise"), std::string::npos)
      << layers[0].implementation;
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// A grouped convolution run as the dense block-diagonal one (grouped_filter.h), forced:
// channels-last (RegNetY's 24-channel groups in miniature, 3x3, strides 1 and 2, bias and a
// residual) and channels-first (float32 too), K = 2 C (output groups wider than input ones).
TEST(CudaFusedConv, GroupedAsDenseBlockDiagonal) {
  KILN_REQUIRE_GPU();
  for (int64_t stride : {int64_t{1}, int64_t{2}}) {
    SCOPED_TRACE("channels-last, stride " + std::to_string(stride));
    const int64_t ho = (15 + 2 - 3) / stride + 1;
    fusedConv("relu")
        .attr("kiln_channels_last", int64_t{1})
        .attr("path", std::string("dense_block_diagonal"))
        .attr("group", int64_t{3})
        .attr("strides", std::vector<int64_t>{stride, stride})
        .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
        .input(randomFloats({2, 15, 15, 72}, 70))
        .constant(randomFloats({72, 3, 3, 24}, 71))
        .constant(randomFloats({72}, 72))
        .input(randomFloats({2, ho, ho, 72}, 73))
        .check(convTolerances());
  }
  SCOPED_TRACE("channels-first, K = 2 C");
  fusedConv("silu")
      .attr("path", std::string("dense_block_diagonal"))
      .attr("group", int64_t{4})
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .input(randomFloats({2, 16, 9, 9}, 74))
      .constant(randomFloats({32, 4, 3, 3}, 75))
      .constant(randomFloats({32}, 76))
      .check(convTolerances());
}

TEST(CudaFusedConv, GroupedDenseFormIsTimedAndNamed) {
  KILN_REQUIRE_GPU();
  GpuOpTest op = fusedConv("relu");
  op.attr("kiln_channels_last", int64_t{1})
      .attr("group", int64_t{2})
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .input(randomFloats({4, 28, 28, 48}, 80))
      .constant(randomFloats({48, 3, 3, 24}, 81))
      .constant(randomFloats({48}, 82));
  std::vector<cuda::LayerInfo> layers;
  auto out = runCudaPoisoned(op.network(), roundTo(op.feeds(), cuda::Precision::kFloat16),
                             cuda::Precision::kFloat16, "out0", &layers);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(layers.size(), 1u);
  const std::string& text = layers[0].implementation;
  std::cout << "  grouped 3x3, 2 groups of 24: " << text << "\n";
  EXPECT_NE(text.find("dense block-diagonal="), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// SiLU and both GELU forms inside cuDNN's fused graph of an ungrouped channels-last
// convolution (EfficientNet's expansions and projections): only runtime-compiled engines
// take them, one of which the layer now tries (fused_conv.cpp). Forced with path
// cudnn_graph, against the reference; the text names a runtime-compiled engine.
TEST(CudaFusedConv, RuntimeFusedSiluAndGeluAgainstTheReference) {
  KILN_REQUIRE_GPU();
  uint32_t seed = 120;
  for (const char* activation : {"silu", "sigmoid"}) {
    SCOPED_TRACE(activation);
    GpuOpTest op = fusedConv(activation);
    op.attr("kiln_channels_last", int64_t{1})
        .attr("path", std::string("cudnn_graph"))
        .attr("pads", std::vector<int64_t>{0, 0, 0, 0})
        .input(randomFloats({2, 9, 11, 32}, seed))
        .constant(randomFloats({48, 1, 1, 32}, seed + 1))
        .constant(randomFloats({48}, seed + 2));
    op.check({{cuda::Precision::kFloat16, 1e-2, 1e-2}, {cuda::Precision::kBFloat16, 6e-2, 6e-2}});
    std::vector<cuda::LayerInfo> layers;
    auto out = runCudaPoisoned(op.network(), roundTo(op.feeds(), cuda::Precision::kFloat16),
                               cuda::Precision::kFloat16, "out0", &layers);
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    ASSERT_EQ(layers.size(), 1u);
    std::cout << "  " << activation << ": " << layers[0].implementation << "\n";
    EXPECT_NE(layers[0].implementation.find("cudnn fused graph"), std::string::npos);
    if (std::string(activation) == "silu")
      EXPECT_NE(layers[0].implementation.find(" rtc"), std::string::npos)
          << layers[0].implementation;
    seed += 3;
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// A layer's choice as words (layer_choice.h): what it writes reads back; a plan is
// untrusted, so anything outside the grammar is refused.
TEST(LayerChoiceText, RoundTripsAndRefusesWhatIsNotAChoice) {
  cuda::LayerChoice c;
  c.form = "fused_graph";
  c.paddedChannels = 8;
  c.hasEngine = true;
  c.engine.engine = 12;
  c.engine.runtimeCompiled = true;
  c.engine.knobs = {{3, 1}, {17, -2}};
  const std::string text = cuda::encodeLayerChoice(c);
  EXPECT_EQ(text, "fused_graph pad=8 engine=12 rtc knobs=3:1,17:-2");
  cuda::LayerChoice back;
  ASSERT_TRUE(cuda::parseLayerChoice(text, &back));
  EXPECT_EQ(back.form, c.form);
  EXPECT_EQ(back.paddedChannels, 8);
  EXPECT_TRUE(back.hasEngine);
  EXPECT_TRUE(cuda::sameEngineChoice(back.engine, c.engine));
  c.form = "dense_block_diagonal";
  c.paddedChannels = 0;
  c.groups = 4;
  c.engine.knobs.clear();
  c.engine.runtimeCompiled = false;
  ASSERT_TRUE(cuda::parseLayerChoice(cuda::encodeLayerChoice(c), &back));
  EXPECT_EQ(back.groups, 4);
  EXPECT_TRUE(back.engine.knobs.empty());
  ASSERT_TRUE(cuda::parseLayerChoice("mma:128x128", &back));
  EXPECT_EQ(back.form, "mma:128x128");
  EXPECT_FALSE(back.hasEngine);
  for (const char* bad :
       {"", " ", "Fused", "fused_graph pad=0", "fused_graph pad=5000", "fused_graph knobs=1:2",
        "fused_graph rtc", "cudnn engine=1 engine=2", "cudnn engine=1 knobs=1:2,",
        "cudnn engine=1 knobs=1", "cudnn engine=-1", "cudnn engine=99999999999",
        "cudnn engine=1 knobs=2000:1", "cudnn groups=1", "cudnn pad=8 pad=8", "cudnn colour=red",
        "cudnn engine=1 knobs=1:99999999999999999999"}) {
    SCOPED_TRACE(bad);
    cuda::LayerChoice untouched;
    untouched.form = "kept";
    EXPECT_FALSE(cuda::parseLayerChoice(bad, &untouched));
    EXPECT_EQ(untouched.form, "kept");
  }
}

// Tactics as data (issue 23): a FusedConv layer names the implementation it chose, and an
// engine given that choice (as one made from a plan is) runs it without timing, with a
// fresh process-wide plan cache, and computes the same; a choice that does not apply to
// the layer is said so and the layer times its candidates again.
TEST(CudaFusedConv, PlannedChoiceRunsWithoutTiming) {
  KILN_REQUIRE_GPU();
  struct Case {
    const char* what;
    Network net;
    std::map<std::string, Tensor> feeds;
  };
  std::vector<Case> cases;
  {
    Network net = residualConv("auto", cuda::Precision::kFloat16);
    cases.push_back(
        {"residual 3x3 nchw",
         net,
         {{"x", roundTo(randomFloats({4, 64, 14, 14}, 1), cuda::Precision::kFloat16)},
          {"z", roundTo(randomFloats({4, 64, 14, 14}, 4), cuda::Precision::kFloat16)}}});
  }
  {
    GpuOpTest stem = channelsLastStem(-1);
    cases.push_back({"channels-last stem of 3 channels", stem.network(), stem.feeds()});
  }
  {
    GpuOpTest dw = channelsLastDepthwise("auto", "silu", 96, 7, 1, 14, 13, false, 90);
    cases.push_back({"channels-last depthwise 7x7", dw.network(), dw.feeds()});
  }
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<NamedTensor> expected;
    ASSERT_TRUE(ReferenceBackend(c.net).run(c.feeds, &expected).isOk());
    auto first = runOnCuda(c.net, c.feeds, cuda::Precision::kFloat16);
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    const cuda::LayerInfo& built = first->layer;
    std::cout << "  " << c.what << ": " << built.implementation << "\n    choice '" << built.choice
              << "'\n";
    ASSERT_FALSE(built.choice.empty()) << built.implementation;
    EXPECT_NE(built.implementation.find("ms"), std::string::npos)
        << "not timed: " << built.implementation;
    expectTensorNear(first->output, expected[0].tensor, 1e-2, 1e-2);

    auto replayed =  // an engine with code of its own: no record of the first helps
        runOnCuda(c.net, c.feeds, cuda::Precision::kFloat16, {{built.name, built.choice}});
    ASSERT_TRUE(replayed.isOk()) << replayed.status().toString();
    const std::string& text = replayed->layer.implementation;
    EXPECT_NE(text.find("(the plan's choice: " + built.choice + ")"), std::string::npos) << text;
    EXPECT_EQ(text.find("timed"), std::string::npos) << text;
    EXPECT_EQ(replayed->layer.choice, built.choice);
    expectTensorNear(replayed->output, first->output, 1e-3, 1e-3);

    auto refused = runOnCuda(c.net, c.feeds, cuda::Precision::kFloat16,
                             {{built.name, "dense_block_diagonal groups=3 engine=0 knobs="}});
    ASSERT_TRUE(refused.isOk()) << refused.status().toString();
    const std::string& again = refused->layer.implementation;
    EXPECT_NE(again.find("; the plan's choice 'dense_block_diagonal groups=3 engine=0 knobs=' "
                         "does not apply here: "),
              std::string::npos)
        << again;
    EXPECT_NE(again.find("ms"), std::string::npos) << "not timed: " << again;
    expectTensorNear(refused->output, expected[0].tensor, 1e-2, 1e-2);
  }
}

// A float32 layer without TF32 records no choice and takes none: the math of a recorded
// cuDNN engine is not checked against the float32 rule, so such layers time their engines
// (which the heuristics' filter checks) at each engine's first run.
TEST(CudaFusedConv, StrictFloat32LayersRecordAndTakeNoChoice) {
  KILN_REQUIRE_GPU();
  const Network net = residualConv("auto", cuda::Precision::kFloat32);
  const std::map<std::string, Tensor> feeds = {{"x", randomFloats({4, 64, 14, 14}, 1)},
                                               {"z", randomFloats({4, 64, 14, 14}, 4)}};
  auto first = runOnCuda(net, feeds, cuda::Precision::kFloat32);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_TRUE(first->layer.choice.empty()) << first->layer.choice;
  auto given = runOnCuda(net, feeds, cuda::Precision::kFloat32,
                         {{first->layer.name, "conv_epilogue engine=0 knobs="}});
  ASSERT_TRUE(given.isOk()) << given.status().toString();
  EXPECT_EQ(given->layer.implementation.find("the plan's choice"), std::string::npos)
      << given->layer.implementation;
  EXPECT_TRUE(given->layer.choice.empty());
  expectTensorNear(given->output, first->output, 1e-4, 1e-4);
}

}  // namespace
}  // namespace kiln::test
