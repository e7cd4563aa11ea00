// The INT8 layers on the GPU against the CPU reference: ai.kiln QuantizedConv and
// QuantizedMatMul (float or int8 inputs, int8/uint8 zero points, groups, K padded to
// a multiple of 4, float and requantized outputs), and the ONNX Runtime QDQ fixture
// built on the CUDA backend against the CPU INT8 plan; channels-last (NHWC) INT8
// convolutions through cuDNN's fused INT8 graph, with and without a residual, float and
// requantized outputs. Without a device every test skips and says why.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gpu/gpu_op_test.h"
#include "gpu/int8_conv_test.h"
#include "ir/quantized_layers.h"
#include "kiln/builder.h"
#include "kiln/cuda_build_backend.h"
#include "kiln/cuda_runtime.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "kiln/tensor_io.h"

namespace kiln::test {
namespace {

std::string testDataDir() {
  const char* dir = std::getenv("KILN_TEST_DATA_DIR");
  return dir ? dir : KILN_TEST_DATA_DIR;
}

// Float outputs differ by the epilogue's float (GPU) vs double (CPU) arithmetic and,
// rarely, by one quantization step of the input at a rounding tie.
std::vector<PrecisionTolerance> floatOutput() {
  return {{cuda::Precision::kFloat32, 2e-3, 2e-3}};
}
// Requantized outputs: at most one step apart.
std::vector<PrecisionTolerance> int8Output() {
  return {{cuda::Precision::kFloat32, 1, 0}};
}

GpuOpTest quantizedConv(const Tensor& x, int64_t group, const Tensor& xZero) {
  const int64_t channels = x.dim(1), out = 16;
  GpuOpTest t(kQuantizedConvOp, 1, kKilnDomain);
  t.attr("kernel_shape", std::vector<int64_t>{3, 3})
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .attr("group", group)
      .attr("activation", std::string("relu"))
      .input(x)
      .constant(int8Weights({out, channels / group, 3, 3}, 2))
      .constant(randomTensor(DataType::kFloat32, {out}, 3))
      .missingInput()
      .constant(scalar(DataType::kFloat32, 0.02))
      .constant(xZero)
      .constant(channelScales(out, 4));
  return t;
}

TEST(CudaInt8, ConvFloatInputInt8ZeroPoint) {
  KILN_REQUIRE_GPU();
  quantizedConv(randomTensor(DataType::kFloat32, {2, 8, 9, 9}, 1), 1, scalar(DataType::kInt8, -3))
      .check(floatOutput());
}

TEST(CudaInt8, ConvFloatInputUint8ZeroPointGrouped) {
  KILN_REQUIRE_GPU();
  quantizedConv(randomTensor(DataType::kFloat32, {2, 8, 7, 7}, 5), 8, scalar(DataType::kUInt8, 120))
      .check(floatOutput());
}

TEST(CudaInt8, ConvInt8InputRequantizedOutput) {
  KILN_REQUIRE_GPU();
  GpuOpTest t = quantizedConv(int8Weights({1, 12, 6, 6}, 6), 1, scalar(DataType::kInt8, 0));
  t.constant(scalar(DataType::kFloat32, 0.05)).constant(scalar(DataType::kInt8, -10));
  t.check(int8Output());
}

TEST(CudaInt8, MatMulPaddedDepthPerChannelRelu) {
  KILN_REQUIRE_GPU();
  for (int64_t depth : {20, 18}) {  // 18: K padded to 20 for IMMA
    GpuOpTest(kQuantizedMatMulOp, 1, kKilnDomain)
        .attr("activation", std::string("relu"))
        .input(randomTensor(DataType::kFloat32, {3, 5, depth}, 7))
        .constant(int8Weights({depth, 12}, 8))
        .constant(randomTensor(DataType::kFloat32, {12}, 9))
        .missingInput()
        .constant(scalar(DataType::kFloat32, 0.01))
        .constant(scalar(DataType::kInt8, 4))
        .constant(channelScales(12, 10))
        .check(floatOutput());
  }
}

TEST(CudaInt8, ChannelsLastConvRunsOnCudnn) {
  KILN_REQUIRE_GPU();
  for (Residual residual : {Residual::kNone, Residual::kFloat, Residual::kInt8}) {
    SCOPED_TRACE(residual == Residual::kNone    ? "no Z"
                 : residual == Residual::kFloat ? "float Z"
                                                : "int8 Z");
    // Float output: fp32 engine, and fp16 storage (the output rounded once more).
    channelsLastInt8Conv(false, residual)
        .check({{cuda::Precision::kFloat32, 2e-3, 2e-3}, {cuda::Precision::kFloat16, 2e-2, 1e-2}});
    // Requantized output: at most one step apart.
    channelsLastInt8Conv(true, residual).check(int8Output());
  }
}

// float_output_type (a strongly typed model's Cast to float16 / bfloat16 folded into the
// layer): in an fp32 engine the float Y is stored in that type on every CUDA path (the
// GEMM epilogue of MatMul and NCHW Conv, cuDNN's channels-last graph), rounded once, as
// the CPU reference rounds it.
TEST(CudaInt8, FloatOutputTypeOfItsOwnOnEveryPath) {
  KILN_REQUIRE_GPU();
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dataTypeName(type));
    const int64_t code = static_cast<int64_t>(type);
    const double tolerance = type == DataType::kFloat16 ? 4e-3 : 2e-2;
    GpuOpTest(kQuantizedMatMulOp, 1, kKilnDomain)
        .attr(kFloatOutputTypeAttribute, code)
        .input(randomTensor(DataType::kFloat32, {3, 5, 20}, 7))
        .constant(int8Weights({20, 12}, 8))
        .constant(randomTensor(DataType::kFloat32, {12}, 9))
        .missingInput()
        .constant(scalar(DataType::kFloat32, 0.01))
        .constant(scalar(DataType::kInt8, 4))
        .constant(channelScales(12, 10))
        .check({{cuda::Precision::kFloat32, tolerance, tolerance}});
    quantizedConv(randomTensor(DataType::kFloat32, {2, 8, 9, 9}, 1), 1, scalar(DataType::kInt8, -3))
        .attr(kFloatOutputTypeAttribute, code)
        .check({{cuda::Precision::kFloat32, tolerance, tolerance}});
    channelsLastInt8Conv(false, Residual::kFloat)
        .attr(kFloatOutputTypeAttribute, code)
        .check({{cuda::Precision::kFloat32, tolerance, tolerance}});
  }
}

// Runs `t` with KILN_INT8_CONV=`which` and checks that the layer took `expect` and
// matches the CPU reference within one step. The output checked is a second run's,
// poisoned again: the first run times cuDNN's plan in place before the forced kernel,
// which would leave a right answer wherever that kernel writes nothing.
void expectInt8EpilogueConv(GpuOpTest& t, const std::string& which, const std::string& expect) {
  setenv("KILN_INT8_CONV", which.c_str(), 1);
  std::vector<cuda::LayerInfo> layers;
  auto out = runCudaPoisoned(t.network(), t.feeds(), cuda::Precision::kFloat16, "out0", &layers,
                             /*runAgain=*/true);
  unsetenv("KILN_INT8_CONV");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_NE(layers[0].implementation.find(expect), std::string::npos) << layers[0].implementation;
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(t.network()).run(t.feeds(), &expected).isOk());
  const Tensor want = castTensor(expected[0].tensor, DataType::kFloat32);
  expectTensorNear(out.value(), want, 1, 0);
  int saturated = 0, zero = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    saturated += want.data<float>()[i] == 127.f;
    zero += want.data<float>()[i] == 0.f;
  }
  EXPECT_LT(saturated + zero, want.numel() * 3 / 4) << saturated << " saturated, " << zero;
}

// A 1x1 layer on cuBLASLt's INT8 GEMM with everything in its epilogue
// (int8_pointwise_gemm.h; KILN_INT8_CONV takes it even when cuDNN is faster):
// per-channel alpha, bias, int8 residual, ReLU, int8 output; 70 pixels, C 128, K 256.
TEST(CudaInt8, PointwiseConvOnTheGemm) {
  KILN_REQUIRE_GPU();
  for (bool residual : {false, true}) {
    SCOPED_TRACE(residual ? "int8 Z" : "no Z");
    GpuOpTest t =
        int8EpilogueConv({2, 5, 7, 128}, {256, 1, 1, 128}, 1, 0, residual, {2, 5, 7, 256});
    expectInt8EpilogueConv(t, "gemm", "cublasLt int8 GEMM");
  }
}

// Kiln's implicit-GEMM kernel (int8_conv_mma.h), each tile shape: 1x1 with 70 pixels
// (every tile ends inside a partial row tile), two 64-channel chunks and two or four
// column tiles; 3x3 padded (taps outside the image read zeros) at stride 1 and 2; 1x1
// at stride 2 (one chunk: two stages); with and without an int8 residual. Depths of
// 128 and 64 take the epilogue's integer route to float, 576 and 1152 the conversion.
TEST(CudaInt8, ConvOnKilnsMmaKernelEveryTile) {
  KILN_REQUIRE_GPU();
  struct Case {
    const char* name;
    Shape x, w;
    int64_t stride, pad;
    Shape y;
  };
  const Case cases[] = {
      {"1x1", {2, 5, 7, 128}, {256, 1, 1, 128}, 1, 0, {2, 5, 7, 256}},
      {"3x3 stride 1", {2, 9, 11, 64}, {128, 3, 3, 64}, 1, 1, {2, 9, 11, 128}},
      {"3x3 stride 2", {1, 13, 10, 128}, {64, 3, 3, 128}, 2, 1, {1, 7, 5, 64}},
      {"1x1 stride 2", {2, 8, 8, 64}, {128, 1, 1, 64}, 2, 0, {2, 4, 4, 128}},
      {"3x3, many row tiles", {3, 14, 15, 64}, {64, 3, 3, 64}, 1, 1, {3, 14, 15, 64}},
      {"1x1, many row tiles", {4, 10, 10, 64}, {128, 1, 1, 64}, 1, 0, {4, 10, 10, 128}},
  };
  // The wgmma tiles (sm_90a code) run on compute capability 9.0 only.
  int device = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), cudaSuccess);
  // The wgmma tiles are raced only with KILN_INT8_WGMMA_TILES=1 (slower on ResNet-50).
  setenv("KILN_INT8_WGMMA_TILES", "1", 1);
  std::vector<std::string> tiles = {"128x128", "128x64", "128x128p", "128x64p"};
  if (major == 9 && minor == 0)
    tiles.insert(tiles.end(), {"wg128x128", "wg128x64", "wg128x128d"});
  else
    std::printf("[ SKIPPED  ] the wgmma tiles: compute capability %d.%d is not 9.0\n", major,
                minor);
  for (const Case& c : cases) {
    for (const std::string& tile : tiles) {
      const int64_t columns = tile.find("x64") != std::string::npos ? 64 : 128;
      if (c.w[0] % columns != 0) continue;
      for (bool residual : {false, true}) {
        SCOPED_TRACE(std::string(c.name) + ", tile " + tile + (residual ? ", int8 Z" : ", no Z"));
        GpuOpTest t = int8EpilogueConv(c.x, c.w, c.stride, c.pad, residual, c.y);
        expectInt8EpilogueConv(t, std::string("mma:") + tile,
                               std::string("kiln int8 MMA kernel ") + tile);
      }
    }
  }
  unsetenv("KILN_INT8_WGMMA_TILES");
}

// Kiln's halo kernel (int8_conv_halo.cu): 3x3 stride 1, C == K == 64, tiles of 8 x 16 output
// pixels. Cases: partial tiles in both directions (P 9, Q 11), several tiles per image
// (P 20, Q 35, N 3: 27 tiles, one per block), several tiles per block (9 x 3 images
// of two tiles, bands 0 and 8, 8 tiles per SM and 4 more: with at most 2 blocks per
// SM each block runs 4 or more, both halo buffers in turn, the next tile's halo
// copied while one computes), no padding (one exact tile); with and without an int8
// residual. Depth 576 takes the epilogue's conversion route.
TEST(CudaInt8, ConvOnKilnsHaloKernel) {
  KILN_REQUIRE_GPU();
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const int64_t images = 4 * int64_t{sms} + 2;
  struct Case {
    const char* name;
    Shape x;
    int64_t pad;
    Shape y;
  };
  const Case cases[] = {
      {"partial tiles", {2, 9, 11, 64}, 1, {2, 9, 11, 64}},
      {"many tiles", {3, 20, 35, 64}, 1, {3, 20, 35, 64}},
      {"tiles per block", {images, 9, 3, 64}, 1, {images, 9, 3, 64}},
      {"no padding", {1, 10, 18, 64}, 0, {1, 8, 16, 64}},
  };
  for (const Case& c : cases) {
    for (bool residual : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (residual ? ", int8 Z" : ", no Z"));
      GpuOpTest t = int8EpilogueConv(c.x, {64, 3, 3, 64}, 1, c.pad, residual, c.y);
      expectInt8EpilogueConv(t, "mma:halo8x16", "kiln int8 MMA kernel halo8x16");
    }
  }
}

// The NCHW INT8 path (im2col + cuBLASLt) with an int8 residual, float and int8 output.
TEST(CudaInt8, ConvInt8ResidualOnTheGemmPath) {
  KILN_REQUIRE_GPU();
  for (bool int8Out : {false, true}) {
    SCOPED_TRACE(int8Out ? "int8 output" : "float output");
    GpuOpTest t(kQuantizedConvOp, 1, kKilnDomain);
    t.attr("pads", std::vector<int64_t>{1, 1, 1, 1})
        .attr("activation", std::string("relu"))
        .input(int8Weights({2, 8, 6, 6}, 23))
        .constant(int8Weights({12, 8, 3, 3}, 24))
        .constant(randomTensor(DataType::kFloat32, {12}, 25))
        .input(int8Weights({2, 12, 6, 6}, 26))
        .constant(scalar(DataType::kFloat32, 0.02))
        .constant(scalar(DataType::kInt8, 0))
        .constant(channelScales(12, 27));
    if (int8Out)
      t.constant(scalar(DataType::kFloat32, 0.05)).constant(scalar(DataType::kInt8, 0));
    else
      t.missingInput().missingInput();
    t.constant(scalar(DataType::kFloat32, 0.03));
    t.check(int8Out ? int8Output() : floatOutput());
  }
}

// A 3-channel stem: X and W padded to 4 channels inside the layer.
TEST(CudaInt8, ChannelsLastStemPadsItsChannels) {
  KILN_REQUIRE_GPU();
  GpuOpTest t(kQuantizedConvOp, 1, kKilnDomain);
  t.attr("pads", std::vector<int64_t>{3, 3, 3, 3})
      .attr("strides", std::vector<int64_t>{2, 2})
      .attr("activation", std::string("relu"))
      .attr("kiln_channels_last", int64_t{1})
      .input(int8Weights({2, 15, 15, 3}, 19))
      .constant(int8Weights({16, 7, 7, 3}, 20))
      .constant(randomTensor(DataType::kFloat32, {16}, 21))
      .missingInput()
      .constant(scalar(DataType::kFloat32, 0.02))
      .constant(scalar(DataType::kInt8, 0))
      .constant(channelScales(16, 22))
      .check({{cuda::Precision::kFloat32, 2e-3, 2e-3}, {cuda::Precision::kFloat16, 2e-2, 1e-2}});
}

// A non-zero zero point is not cuDNN's: the node says so and runs on the host, right.
TEST(CudaInt8, ChannelsLastConvWithZeroPointFallsBackCorrectly) {
  KILN_REQUIRE_GPU();
  GpuOpTest t(kQuantizedConvOp, 1, kKilnDomain);
  t.attr("kiln_channels_last", int64_t{1})
      .input(int8Weights({1, 5, 5, 8}, 16))
      .constant(int8Weights({8, 1, 1, 8}, 17))
      .missingInput()
      .missingInput()
      .constant(scalar(DataType::kFloat32, 0.02))
      .constant(scalar(DataType::kInt8, 5))
      .constant(channelScales(8, 18))
      .allowHostFallback()
      .check(floatOutput());
}

// The ONNX Runtime QDQ fixture: a CUDA INT8 plan against the CPU INT8 plan.
TEST(CudaInt8, QdqModelOnCudaMatchesTheCpuPlan) {
  KILN_REQUIRE_GPU();
  auto network = importOnnxFile(testDataDir() + "/quant/small_cnn_qdq.onnx");
  ASSERT_TRUE(network.isOk()) << network.status().toString();
  auto shared = std::make_shared<const Network>(std::move(network.value()));
  BuilderConfig config;
  OptimizationProfile profile;
  profile.inputs["input"] = {{1, 3, 16, 16}, {4, 3, 16, 16}, {8, 3, 16, 16}};
  config.profiles = {profile};
  auto backend = cuda::createCudaBuildBackend(0, config);
  ASSERT_TRUE(backend.isOk()) << backend.status().toString();
  auto plan = buildPlan(shared, config, **backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  int int8Layers = 0;
  for (const LayerRecord& layer : plan->record.layers)
    int8Layers += layer.precision == DataType::kInt8;
  EXPECT_EQ(int8Layers, 6);
  auto input = readNpyFile(testDataDir() + "/quant/qdq_input.npy");
  auto expected = readNpyFile(testDataDir() + "/quant/qdq_expected.npy");
  ASSERT_TRUE(input.isOk() && expected.isOk());
  auto engine = cuda::Engine::create(plan->network, cuda::EngineOptions{});
  ASSERT_TRUE(engine.isOk()) << engine.status().toString();
  auto context = (*engine)->createContext();
  ASSERT_TRUE(context.isOk());
  ASSERT_TRUE((*context)->setInputShape("input", input->shape()).isOk());
  ASSERT_TRUE((*context)->setInput("input", *input).isOk());
  Status ran = (*context)->execute();
  ASSERT_TRUE(ran.isOk()) << ran.toString();
  for (const cuda::LayerInfo& layer : (*context)->layers())
    if (layer.name.find("conv") != std::string::npos)
      EXPECT_EQ(layer.placement, cuda::LayerPlacement::kGpu) << layer.name << ": " << layer.note;
  auto out = (*context)->getOutput("logits");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  const float logitsScale = shared->graph.initializers.at("logits_scale").data<float>()[0];
  for (int64_t i = 0; i < out->numel(); ++i)
    EXPECT_NEAR(out->data<float>()[i], expected->data<float>()[i], 2.01 * logitsScale) << i;
}

}  // namespace
}  // namespace kiln::test
