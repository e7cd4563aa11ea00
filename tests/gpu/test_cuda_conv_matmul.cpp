// Cross-backend tests for cuDNN convolutions and cuBLASLt GEMMs: CUDA engine vs CPU
// reference on random data. Tolerances: fp32 runs with TF32 off and differs only in
// summation order (1e-4); 16-bit storage rounds inputs and outputs. Then ai.kiln
// FusedMatMul: every activation at each precision, a one-column output, a residual, the
// layer's implementation text, and Gemm + activation fused through the pipeline.
#include <cstdlib>
#include <iostream>

#include "backends/cuda/ops/gemm.h"
#include "gpu/gpu_op_test.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

std::vector<PrecisionTolerance> gemmTolerances() {
  return {{cuda::Precision::kFloat32, 1e-4, 1e-4},
          {cuda::Precision::kFloat16, 1e-2, 1e-2},
          {cuda::Precision::kBFloat16, 6e-2, 6e-2}};
}

TEST(CudaConv, PaddedStridedWithBias) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Conv", 11)
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .attr("strides", std::vector<int64_t>{2, 2})
      .input(randomFloats({2, 8, 17, 15}, 1))
      .constant(randomFloats({16, 8, 3, 3}, 2))
      .constant(randomFloats({16}, 3))
      .check(gemmTolerances());
}

TEST(CudaConv, DepthwiseDilatedAsymmetricPads) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Conv", 11)
      .attr("group", int64_t{12})
      .attr("dilations", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{2, 1, 2, 3})
      .input(randomFloats({1, 12, 20, 20}, 4))
      .constant(randomFloats({12, 1, 3, 3}, 5))
      .check(gemmTolerances());
}

TEST(CudaConv, AutoPadSameUpperOneD) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Conv", 11)
      .attr("auto_pad", std::string("SAME_UPPER"))
      .attr("strides", std::vector<int64_t>{2})
      .input(randomFloats({3, 4, 33}, 6))
      .constant(randomFloats({6, 4, 5}, 7))
      .constant(randomFloats({6}, 8))
      .check(gemmTolerances());
}

TEST(CudaConv, ThreeD) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Conv", 11)
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1})
      .input(randomFloats({1, 3, 6, 7, 8}, 9))
      .constant(randomFloats({4, 3, 3, 3, 3}, 10))
      .check(gemmTolerances());
}

TEST(CudaConv, WeightsAsRuntimeInput) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Conv", 11)
      .input(randomFloats({2, 3, 9, 9}, 11))
      .input(randomFloats({5, 3, 1, 1}, 12))
      .check(gemmTolerances());
}

// A grouped 16-bit convolution (wav2vec2's positional one in miniature: 1-D, 4 groups, 9
// taps, padded) also offers cuDNN's float32 engines on cast copies ("cudnn_float32 ..."); an
// engine given one as its plan's choice runs it untimed, casting in and out, and matches the
// reference. An ungrouped one offers none.
TEST(CudaConv, GroupedHalfOffersFloat32EnginesOnCastCopies) {
  KILN_REQUIRE_GPU();
  auto conv = [](int64_t groups) {
    return GpuOpTest("Conv", 11)
        .attr("group", groups)
        .attr("pads", std::vector<int64_t>{4, 4})
        .input(randomFloats({2, 48, 50}, 9))
        .constant(randomFloats({48, 48 / groups, 9}, 10))
        .constant(randomFloats({48}, 11));
  };
  auto run = [](const GpuOpTest& test, const std::map<std::string, std::string>& choices)
      -> Result<std::pair<Tensor, cuda::LayerInfo>> {
    cuda::EngineOptions options;
    options.precision = cuda::Precision::kFloat16;
    options.allowTf32 = false;
    options.layerChoices = choices;
    const Network net = test.network();
    KILN_ASSIGN_OR_RETURN(auto engine,
                          cuda::Engine::create(std::make_shared<Network>(net), options));
    KILN_ASSIGN_OR_RETURN(auto context, engine->createContext());
    for (const auto& [name, t] : test.feeds()) {
      KILN_RETURN_IF_ERROR(context->setInputShape(name, t.shape()));
      KILN_RETURN_IF_ERROR(context->setInput(name, roundTo(t, cuda::Precision::kFloat16)));
    }
    KILN_RETURN_IF_ERROR(context->execute());
    KILN_ASSIGN_OR_RETURN(Tensor out, context->getOutput(net.graph.outputs[0].name));
    for (const cuda::LayerInfo& layer : context->layers())
      if (layer.opType == "Conv") return std::make_pair(out, layer);
    return Status(StatusCode::kInternal, "no Conv layer");
  };
  const GpuOpTest grouped = conv(4);
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, t] : grouped.feeds()) feeds[name] = roundTo(t, cuda::Precision::kFloat16);
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(grouped.network()).run(feeds, &expected).isOk());
  auto first = run(grouped, {});
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  const cuda::LayerInfo& raced = first->second;
  std::cout << "  raced: " << raced.implementation << "\n";
  expectTensorNear(first->first, expected[0].tensor, 1e-2, 1e-2);
  std::string float32Choice;
  for (const std::string& c : raced.offeredChoices)
    if (c.rfind("cudnn_float32 ", 0) == 0 && float32Choice.empty()) float32Choice = c;
  ASSERT_FALSE(float32Choice.empty()) << "no float32 engine offered";
  auto replayed = run(grouped, {{raced.name, float32Choice}});
  ASSERT_TRUE(replayed.isOk()) << replayed.status().toString();
  const std::string& text = replayed->second.implementation;
  EXPECT_NE(text.find("cuDNN float32 engine on 16-bit X, W and Y"), std::string::npos) << text;
  EXPECT_NE(text.find("(the plan's choice: " + float32Choice + ")"), std::string::npos) << text;
  EXPECT_EQ(replayed->second.choice, float32Choice);
  expectTensorNear(replayed->first, expected[0].tensor, 1e-2, 1e-2);
  auto ungrouped = run(conv(1), {});
  ASSERT_TRUE(ungrouped.isOk()) << ungrouped.status().toString();
  for (const std::string& c : ungrouped->second.offeredChoices)
    EXPECT_NE(c.rfind("cudnn_float32 ", 0), 0u) << c;
}

TEST(CudaConvTranspose, StridedWithOutputPaddingAndBias) {
  KILN_REQUIRE_GPU();
  GpuOpTest("ConvTranspose", 11)
      .attr("strides", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .attr("output_padding", std::vector<int64_t>{1, 1})
      .input(randomFloats({2, 6, 7, 9}, 13))
      .constant(randomFloats({6, 4, 3, 3}, 14))
      .constant(randomFloats({4}, 15))
      .check(gemmTolerances());
}

TEST(CudaMatMul, TwoD) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MatMul", 13)
      .input(randomFloats({37, 64}, 20))
      .input(randomFloats({64, 19}, 21))
      .check(gemmTolerances());
}

TEST(CudaMatMul, BatchedSameBatch) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MatMul", 13)
      .input(randomFloats({2, 3, 16, 24}, 22))
      .input(randomFloats({2, 3, 24, 8}, 23))
      .check(gemmTolerances());
}

TEST(CudaMatMul, BatchTimesSharedWeights) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MatMul", 13)
      .input(randomFloats({4, 10, 32}, 24))
      .constant(randomFloats({32, 48}, 25))
      .check(gemmTolerances());
}

TEST(CudaMatMul, BroadcastLeftMatrix) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MatMul", 13)
      .input(randomFloats({12, 20}, 26))
      .input(randomFloats({3, 20, 7}, 27))
      .check(gemmTolerances());
}

TEST(CudaMatMul, VectorOperands) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MatMul", 13)
      .input(randomFloats({20}, 28))
      .input(randomFloats({3, 20, 7}, 29))
      .check(gemmTolerances());
  GpuOpTest("MatMul", 13)
      .input(randomFloats({2, 5, 20}, 30))
      .input(randomFloats({20}, 31))
      .check(gemmTolerances());
}

// Many small products take Kiln's kernel (small_batched_matmul.h): VOLO's outlook products
// (9 x 9 by 9 x 32, pairs of columns at 16 bits), an odd n (a column a thread), a left
// matrix shared by every product, and each asserting the implementation that ran.
TEST(CudaMatMul, ManySmallProductsOnKilnsKernel) {
  KILN_REQUIRE_GPU();
  struct Case {
    Shape a, b;
  };
  for (const Case& c : {Case{{2, 1100, 9, 9}, {2, 1100, 9, 32}}, Case{{2300, 5, 12}, {2300, 12, 7}},
                        Case{{4, 6}, {2100, 6, 16}}}) {
    SCOPED_TRACE(shapeToString(c.a) + " x " + shapeToString(c.b));
    GpuOpTest test("MatMul", 13);
    test.input(randomFloats(c.a, 34)).input(randomFloats(c.b, 35));
    test.check(gemmTolerances());
    for (cuda::Precision precision : {cuda::Precision::kFloat32, cuda::Precision::kFloat16}) {
      std::vector<cuda::LayerInfo> layers;
      auto out = runCudaPoisoned(test.network(), test.feeds(), precision, "out0", &layers);
      ASSERT_TRUE(out.isOk()) << out.status().toString();
      bool small = false;
      for (const cuda::LayerInfo& layer : layers)
        small =
            small || layer.implementation.find("kiln small batched MatMul") != std::string::npos;
      EXPECT_TRUE(small) << cuda::precisionName(precision);
    }
  }
}

TEST(CudaMatMul, PartialBatchBroadcastFallsBackCorrectly) {
  KILN_REQUIRE_GPU();
  // Partially broadcast batch dims are not a strided batch: the kernel declines at run
  // time and the node runs on the host, still matching the reference.
  GpuOpTest("MatMul", 13)
      .input(randomFloats({2, 1, 6, 8}, 32))
      .input(randomFloats({1, 3, 8, 5}, 33))
      .allowHostFallback()
      .check(gemmTolerances());
}

TEST(CudaGemm, TransposesWithBiasRow) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Gemm", 13)
      .attr("transA", int64_t{1})
      .attr("transB", int64_t{1})
      .attr("alpha", 0.5f)
      .input(randomFloats({24, 9}, 34))
      .constant(randomFloats({13, 24}, 35))
      .constant(randomFloats({13}, 36))
      .check(gemmTolerances());
}

TEST(CudaGemm, FullMatrixCWithBeta) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Gemm", 13)
      .attr("beta", 0.25f)
      .input(randomFloats({7, 11}, 37))
      .input(randomFloats({11, 5}, 38))
      .input(randomFloats({7, 1}, 39))
      .check(gemmTolerances());
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// ai.kiln FusedMatMul's activations (fuse_matmul_bias_activation): FusedConv's set
// and both GELU forms, with activation_alpha / activation_beta where they count.
struct MatMulActivation {
  const char* name;
  float alpha = 0.f, beta = 0.f;
};

const std::vector<MatMulActivation>& matMulActivations() {
  static const std::vector<MatMulActivation> kAll = {{"none"},
                                                     {"relu"},
                                                     {"leaky_relu", 0.1f},
                                                     {"clip", -0.5f, 0.75f},
                                                     {"sigmoid"},
                                                     {"tanh"},
                                                     {"hard_sigmoid", 0.2f, 0.5f},
                                                     {"hard_swish"},
                                                     {"silu"},
                                                     {"gelu_erf"},
                                                     {"gelu_tanh"}};
  return kAll;
}

GpuOpTest fusedMatMul(const MatMulActivation& act) {
  GpuOpTest op("FusedMatMul", 1, kKilnDomain);
  op.attr("activation", std::string(act.name))
      .attr("activation_alpha", act.alpha)
      .attr("activation_beta", act.beta);
  return op;
}

// Bias (and ReLU) in the cuBLASLt epilogue, every other activation in Kiln's pass
// after it: fp32 (TF32 off), fp16 and bf16 against the reference, which applies the
// activation to the float sum before its one rounding (the GPU rounds the GEMM's
// output once more before the activation; the GEMM tolerances cover it). Sums over
// 40 products of [-1, 1] values reach every activation's bends (clip, hard_*).
TEST(CudaFusedMatMul, EveryActivationMatchesTheReference) {
  KILN_REQUIRE_GPU();
  for (const MatMulActivation& act : matMulActivations()) {
    SCOPED_TRACE(act.name);
    fusedMatMul(act)
        .input(randomFloats({3, 17, 40}, 40))
        .constant(randomFloats({40, 24}, 41))
        .constant(randomFloats({24}, 42))
        .check(gemmTolerances());
  }
}

TEST(CudaFusedMatMul, OneColumnOutputAddsItsBiasInTheKilnPass) {
  KILN_REQUIRE_GPU();
  // cuBLASLt's bias epilogue wants N > 1: the bias joins the activation pass (9
  // elements: no whole 16-byte packs, element-wise).
  for (const MatMulActivation& act : matMulActivations()) {
    SCOPED_TRACE(act.name);
    fusedMatMul(act)
        .input(randomFloats({9, 16}, 43))
        .constant(randomFloats({16, 1}, 44))
        .constant(randomFloats({1}, 45))
        .check(gemmTolerances());
  }
}

// A residual Z (fuse_matmul_residual) as cuBLASLt's C with beta 1, added before the
// activation as the reference adds it: every activation (those of cuBLASLt's epilogue and
// those of Kiln's pass after it), rows of 24 and the one-column output whose bias the pass
// adds. Z is a second input, so a plan that ignored it or read D as C would miss.
TEST(CudaFusedMatMul, ResidualAddedInTheGemmEpilogue) {
  KILN_REQUIRE_GPU();
  for (const MatMulActivation& act : matMulActivations()) {
    SCOPED_TRACE(act.name);
    fusedMatMul(act)
        .input(randomFloats({3, 17, 40}, 50))
        .constant(randomFloats({40, 24}, 51))
        .constant(randomFloats({24}, 52))
        .input(randomFloats({3, 17, 24}, 53))
        .check(gemmTolerances());
    fusedMatMul(act)
        .input(randomFloats({9, 16}, 54))
        .constant(randomFloats({16, 1}, 55))
        .constant(randomFloats({1}, 56))
        .input(randomFloats({9, 1}, 57))
        .check(gemmTolerances());
  }
}

// A residual GEMM big enough to race cuBLASLt's algorithms (2 * 512^3 flops >= 2^28):
// each raced run reads C, a buffer apart from D, so the race leaves D = A W + b + C. A
// race that read D as C would add the product once per algorithm it timed.
TEST(CudaFusedMatMul, ResidualGemmRacesItsAlgorithms) {
  KILN_REQUIRE_GPU();
  GpuOpTest op = fusedMatMul({"none", 0.f, 0.f});
  op.input(randomFloats({512, 512}, 58, -0.5, 0.5))
      .constant(randomFloats({512, 512}, 59, -0.5, 0.5))
      .constant(randomFloats({512}, 60))
      .input(randomFloats({512, 512}, 61));
  op.check({{cuda::Precision::kFloat32, 1e-4, 1e-4}, {cuda::Precision::kFloat16, 2e-2, 1e-2}});
  const Network net = op.network();
  std::vector<cuda::LayerInfo> layers;
  auto y = runCudaPoisoned(net, op.feeds(), cuda::Precision::kFloat16, net.graph.outputs[0].name,
                           &layers);
  ASSERT_TRUE(y.isOk()) << y.status().toString();
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_NE(layers[0].implementation.find("by time"), std::string::npos)
      << layers[0].implementation;
}

Tensor referenceOutput(const Network& net, const std::map<std::string, Tensor>& feeds) {
  std::vector<NamedTensor> out;
  const Status s = ReferenceBackend(net).run(feeds, &out);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out.empty() ? Tensor() : out[0].tensor;
}

// FusedMatMul(x [6, 32], w [32, 16], b [16]; activation), fp32, for the layer's text.
Network fusedMatMulNetwork(const std::string& activation) {
  const int64_t m = 6, k = 32, n = 16;
  Network net;
  net.opsets[""] = 17;
  net.opsets[kKilnDomain] = 1;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(m), DimExpr(k)}}};
  g.initializers["w"] = randomFloats({k, n}, 46);
  g.initializers["b"] = randomFloats({n}, 47);
  Node node;
  node.name = "fused";
  node.opType = "FusedMatMul";
  node.domain = kKilnDomain;
  node.opset = 1;
  node.inputs = {"x", "w", "b"};
  node.outputs = {"y"};
  node.attributes["activation"].kind = Attribute::Kind::kString;
  node.attributes["activation"].s = activation;
  g.nodes.push_back(node);
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

TEST(CudaFusedMatMul, ImplementationSaysWhereTheActivationRuns) {
  KILN_REQUIRE_GPU();
  const std::map<std::string, Tensor> feeds = {{"x", randomFloats({6, 32}, 48)}};
  for (const char* act : {"none", "relu", "silu", "gelu_tanh"}) {
    SCOPED_TRACE(act);
    const Network net = fusedMatMulNetwork(act);
    std::vector<cuda::LayerInfo> layers;
    auto y = runCudaPoisoned(net, feeds, cuda::Precision::kFloat32, "y", &layers);
    ASSERT_TRUE(y.isOk()) << y.status().toString();
    expectTensorNear(y.value(), referenceOutput(net, feeds), 1e-4, 1e-4);
    ASSERT_EQ(layers.size(), 1u);
    const std::string& text = layers[0].implementation;
    // ReLU and the tanh GELU ride cuBLASLt's epilogue; SiLU needs Kiln's pass.
    const bool pass = std::string(act) == "silu";
    const std::string epilogue = std::string(act) == "relu"        ? "relu+bias epilogue"
                                 : std::string(act) == "gelu_tanh" ? "gelu(tanh form)+bias epilogue"
                                                                   : "bias epilogue";
    EXPECT_NE(text.find(epilogue), std::string::npos) << text;
    EXPECT_EQ(
        text.find("kiln epilogue (" + std::string(act) + ", packs of 4)") != std::string::npos,
        pass)
        << text;
  }
}

// Gemm(transB, C [1, N]) + activation through the pipeline: one FusedMatMul (W
// transposed at build time) on the GPU against the unfused graph on the CPU.
TEST(CudaFusedMatMul, GemmAndItsActivationFuseThroughThePipeline) {
  KILN_REQUIRE_GPU();
  for (const char* act : {"Relu", "Sigmoid", "HardSwish"}) {
    SCOPED_TRACE(act);
    Network net;
    net.opsets[""] = 17;
    Graph& g = net.graph;
    g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(10), DimExpr(48)}}};
    g.initializers["w"] = randomFloats({20, 48}, 49);
    g.initializers["c"] = randomFloats({1, 20}, 50);
    g.nodes = {withInt(makeNode("Gemm", {"x", "w", "c"}, {"g"}), "transB", 1),
               makeNode(act, {"g"}, {"y"})};
    g.outputs = {{"y", DataType::kFloat32, false, {}}};
    Network fused = net;
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(fused, 1, {}, &applied).isOk());
    ASSERT_EQ(fused.graph.nodes.size(), 1u);
    EXPECT_EQ(fused.graph.nodes[0].opType, "FusedMatMul");
    const std::map<std::string, Tensor> feeds = {{"x", randomFloats({10, 48}, 51)}};
    auto y = runCudaPoisoned(fused, feeds, cuda::Precision::kFloat32, "y");
    ASSERT_TRUE(y.isOk()) << y.status().toString();
    expectTensorNear(y.value(), referenceOutput(net, feeds), 1e-4, 1e-4);
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// The activation inside the product: cuDNN's fused graph (matmul_epilogue_graph.h), forced
// with path cudnn_graph, at fp16 and bf16 against the reference (ConvNeXt's and ViT's erf
// GELU, which cuBLASLt's epilogues lack, and SiLU); then the auto path's text names both
// candidates' times. Shapes with K and N multiples of 8 (the graph's tensor-core kernels).
TEST(CudaFusedMatMul, CudnnFusedGraphAgainstTheReference) {
  KILN_REQUIRE_GPU();
  uint32_t seed = 130;
  for (const char* activation : {"gelu_erf", "silu"}) {
    SCOPED_TRACE(activation);
    MatMulActivation act{activation};
    GpuOpTest op = fusedMatMul(act);
    op.attr("path", std::string("cudnn_graph"))
        .input(randomFloats({3, 64, 64}, seed))
        .constant(randomFloats({64, 48}, seed + 1))
        .constant(randomFloats({48}, seed + 2));
    op.check({{cuda::Precision::kFloat16, 1e-2, 1e-2}, {cuda::Precision::kBFloat16, 6e-2, 6e-2}});
    std::vector<cuda::LayerInfo> layers;
    op.attr("path", std::string("auto"));
    auto out = runCudaPoisoned(op.network(), roundTo(op.feeds(), cuda::Precision::kFloat16),
                               cuda::Precision::kFloat16, "out0", &layers);
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    ASSERT_EQ(layers.size(), 1u);
    const std::string& text = layers[0].implementation;
    std::cout << "  " << activation << " auto: " << text << "\n";
    EXPECT_NE(text.find("timed {cublasLt + epilogue="), std::string::npos) << text;
    EXPECT_NE(text.find("fused engine"), std::string::npos) << text;
    seed += 3;
  }
}

TEST(CudaFusedMatMul, UnknownPathIsAnError) {
  KILN_REQUIRE_GPU();
  MatMulActivation act{"gelu_erf"};
  GpuOpTest op = fusedMatMul(act);
  op.attr("path", std::string("fastest"))
      .input(randomFloats({4, 16}, 140))
      .constant(randomFloats({16, 8}, 141))
      .constant(randomFloats({8}, 142));
  auto out = op.runCuda(cuda::Precision::kFloat16);
  ASSERT_FALSE(out.isOk());
  EXPECT_NE(out.status().message().find("unknown path 'fastest'"), std::string::npos)
      << out.status().message();
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// The implementation text of a one-layer FusedMatMul network run at fp16.
std::string fusedMatMulText(GpuOpTest& op) {
  std::vector<cuda::LayerInfo> layers;
  auto out = runCudaPoisoned(op.network(), roundTo(op.feeds(), cuda::Precision::kFloat16),
                             cuda::Precision::kFloat16, "out0", &layers);
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return layers.size() == 1 ? layers[0].implementation : std::string();
}

// An erf GELU through cuBLASLt's GELU epilogue (the tanh form, within 4.7e-4 of erf):
// forced with path cublaslt_gelu_tanh it matches the erf reference at fp16 and bf16; a
// float32 product refuses it (the layer then runs on the host, its note says why); on the
// auto path it is one of the timed candidates
// unless KILN_EXACT_GELU=1; the tanh GELU itself rides the epilogue with no Kiln pass.
TEST(CudaFusedMatMul, ErfGeluThroughCublasLtTanhEpilogue) {
  KILN_REQUIRE_GPU();
  GpuOpTest forced = fusedMatMul(MatMulActivation{"gelu_erf"});
  forced.attr("path", std::string("cublaslt_gelu_tanh"))
      .input(randomFloats({2, 96, 64}, 150))
      .constant(randomFloats({64, 40}, 151))
      .constant(randomFloats({40}, 152));
  forced.check({{cuda::Precision::kFloat16, 1e-2, 1e-2}, {cuda::Precision::kBFloat16, 6e-2, 6e-2}});
  std::vector<cuda::LayerInfo> fp32Layers;
  auto fp32 = runCudaPoisoned(forced.network(), forced.feeds(), cuda::Precision::kFloat32, "out0",
                              &fp32Layers);
  ASSERT_TRUE(fp32.isOk()) << fp32.status().toString();
  ASSERT_EQ(fp32Layers.size(), 1u);
  EXPECT_NE(fp32Layers[0].placement, cuda::LayerPlacement::kGpu)
      << "the tanh form was used for a float32 erf GELU: " << fp32Layers[0].implementation;
  EXPECT_NE(fp32Layers[0].note.find("not a 16-bit product"), std::string::npos)
      << fp32Layers[0].note;

  forced.attr("path", std::string("auto"));
  const std::string raced = fusedMatMulText(forced);
  std::cout << "  gelu_erf auto: " << raced << "\n";
  EXPECT_NE(raced.find("cublasLt gelu epilogue (tanh form)="), std::string::npos) << raced;
  ASSERT_EQ(setenv("KILN_EXACT_GELU", "1", 1), 0);
  const std::string exact = fusedMatMulText(forced);
  unsetenv("KILN_EXACT_GELU");
  EXPECT_EQ(exact.find("tanh form"), std::string::npos) << exact;

  GpuOpTest tanhGelu = fusedMatMul(MatMulActivation{"gelu_tanh"});
  tanhGelu.input(randomFloats({2, 96, 64}, 153))
      .constant(randomFloats({64, 40}, 154))
      .constant(randomFloats({40}, 155));
  const std::string text = fusedMatMulText(tanhGelu);
  EXPECT_NE(text.find("gelu(tanh form)+bias epilogue"), std::string::npos) << text;
  EXPECT_EQ(text.find("kiln epilogue"), std::string::npos) << text;
}

// The algorithm race's rule (no device needed): a layer GEMM large enough races
// kGemmRaceCandidates algorithms; a plan's recorded algorithm is taken back untimed (a
// replay that timed again could keep another one and lose the plan's choice); a GEMM that
// accumulates into D (beta != 0) or a step inside another kernel takes the first.
TEST(CudaGemm, RecordedAlgorithmIsTakenBackWithoutARace) {
  cuda::GemmProblem p;
  p.type = DataType::kFloat16;
  p.m = 16384;
  p.n = 768;
  p.k = 768;
  p.raceAlgorithms = true;
  cuda::GemmAlgorithmRequest r = cuda::gemmAlgorithmRequest(p);
  EXPECT_TRUE(r.race);
  EXPECT_EQ(r.count, cuda::kGemmRaceCandidates);
  p.algorithm = 5;  // the plan's choice "algorithm:5"
  r = cuda::gemmAlgorithmRequest(p);
  EXPECT_FALSE(r.race);
  EXPECT_EQ(r.count, 6);
  p.algorithm = -1;
  p.beta = 1.f;
  EXPECT_FALSE(cuda::gemmAlgorithmRequest(p).race);
  p.beta = 0.f;
  p.m = 8;  // 2 * 8 * 768 * 768 FLOP: below kGemmRaceMinFlops
  EXPECT_FALSE(cuda::gemmAlgorithmRequest(p).race);
  EXPECT_EQ(cuda::gemmAlgorithmRequest(p).count, 1);
  p.m = 16384;
  p.raceAlgorithms = false;
  EXPECT_FALSE(cuda::gemmAlgorithmRequest(p).race);
  EXPECT_EQ(cuda::gemmAlgorithmOfChoice("algorithm:12", "algorithm:"), 12);
  EXPECT_EQ(cuda::gemmAlgorithmOfChoice("#3", "#"), 3);
  EXPECT_EQ(cuda::gemmAlgorithmOfChoice("algorithm:", "algorithm:"), -1);
  EXPECT_EQ(cuda::gemmAlgorithmOfChoice("algorithm:x1", "algorithm:"), -1);
  EXPECT_EQ(cuda::gemmAlgorithmOfChoice("cudnn_graph:engine 7", "algorithm:"), -1);
}

}  // namespace
}  // namespace kiln::test
