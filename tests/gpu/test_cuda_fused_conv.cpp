// ai.kiln FusedConv on the CUDA engine against the CPU reference: each path (cuDNN
// fused graph, conv + Kiln epilogue, and the timed choice between them) at fp32
// (TF32 off), fp16 and bf16; every activation; with and without B and Z; epilogue
// packs that straddle 7x7 channel planes and element-wise tails; 1-D and depthwise;
// then a ResNet bottleneck tail (Conv -> BN -> Add -> Relu) through the pipeline;
// a channels-last 3-channel stem with its channels zero-padded (pad_channels 4, 8,
// auto, never), and the pad's implementation text.
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

Result<CudaRun> runOnCuda(const Network& net, const std::map<std::string, Tensor>& feeds,
                          cuda::Precision precision) {
  cuda::EngineOptions options;
  options.precision = precision;
  options.allowTf32 = false;
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
      {"hard_sigmoid", 0.2f, 0.5f}, {"hard_swish", 0.f, 0.f}, {"silu", 0.f, 0.f}};
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
