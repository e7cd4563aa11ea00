// ai.kiln FusedConvMaxPool (ir/conv_max_pool.h) on Kiln's stem kernel
// (backends/cuda/ops/conv_max_pool_impl.cu) against the CPU reference: Conv, bias, ReLU,
// MaxPool, QuantizeLinear composed. X and the filter are rounded to the engine's
// 16-bit type first, so the GPU and the reference multiply the same values; the kernel
// also rounds the conv output to that type before the pool (as a FusedConv's output
// is), and sums in another order: an int8 output is at most one step apart, a float
// output within the convolution tolerances.
//
// Cases: ResNet-50's stem (3 channels, 7x7/2 pad 3, 3x3/2 pad 1 pool) on a size whose
// pooled output ends in partial 8x8 tiles both ways, with an even width (the kernel's
// 32-bit loads) and an odd one (16-bit loads); enough images that most persistent
// blocks run two tiles (640 tiles against 132 SMs x 3 blocks); a 4-channel
// 5x5 filter with asymmetric pads, no activation, a 2x2 ceil-mode pool (20 filter rows
// of 8 taps: the depth ends inside a 16-deep step); a small y_scale that saturates
// many outputs; float output (no y_scale).
#include <string>
#include <vector>

#include "gpu/gpu_op_test.h"
#include "ir/channels_last.h"
#include "ir/conv_max_pool.h"
#include "kiln/reference_backend.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

Tensor scalar(DataType type, double v) {
  return castTensor(Tensor::fromVector(DataType::kFloat64, {}, std::vector<double>{v}), type);
}

struct StemCase {
  const char* name;
  Shape x, w;
  std::vector<int64_t> pads, poolKernel, poolStrides, poolPads;
  bool relu = true, ceil = false;
  double scale = 0.006;  // y_scale: most values strictly inside (0, 127)
};

GpuOpTest stemNode(const StemCase& c, cuda::Precision precision, bool quantized) {
  GpuOpTest t(kFusedConvMaxPoolOp, 1, kKilnDomain);
  t.attr(kChannelsLastAttribute, int64_t{1})
      .attr("kernel_shape", std::vector<int64_t>{c.w[2], c.w[3]})
      .attr("strides", std::vector<int64_t>{2, 2})
      .attr("pads", c.pads)
      .attr("activation", std::string(c.relu ? "relu" : "none"))
      .attr("pool_kernel_shape", c.poolKernel)
      .attr("pool_strides", c.poolStrides)
      .attr("pool_pads", c.poolPads)
      .attr("pool_ceil_mode", int64_t{c.ceil ? 1 : 0})
      .input(roundTo(randomFloats(c.x, 41), precision))
      .constant(roundTo(randomFloats(c.w, 42, -0.12, 0.12), precision))
      .constant(randomFloats({c.w[0]}, 43, -0.2, 0.2));
  if (quantized)
    t.constant(scalar(DataType::kFloat32, c.scale)).constant(scalar(DataType::kInt8, 0));
  return t;
}

void expectStem(const StemCase& c, cuda::Precision precision, bool quantized) {
  GpuOpTest t = stemNode(c, precision, quantized);
  std::vector<cuda::LayerInfo> layers;
  auto out = runCudaPoisoned(t.network(), t.feeds(), precision, "out0", &layers);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_NE(layers[0].implementation.find("kiln stem kernel"), std::string::npos)
      << layers[0].implementation;
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(t.network()).run(t.feeds(), &expected).isOk());
  const Tensor want = castTensor(expected[0].tensor, DataType::kFloat32);
  ASSERT_EQ(out.value().shape(), want.shape());
  if (quantized) {
    expectTensorNear(out.value(), want, 1, 0);
    // One step apart only where the fp16 conv output sits at a rounding boundary: a
    // kernel that truncated instead of rounding would be a step off about half the time.
    int64_t stepOff = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      stepOff += out.value().data<float>()[i] != want.data<float>()[i];
    EXPECT_LT(stepOff, want.numel() / 10) << stepOff << " of " << want.numel() << " a step off";
    int64_t saturated = 0, zero = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      saturated += want.data<float>()[i] == 127.f;
      zero += want.data<float>()[i] == 0.f;
    }
    if (c.scale >= 0.006)  // most values strictly inside (0, 127): the check has teeth
      EXPECT_LT(saturated + zero, want.numel() / 2) << saturated << " saturated, " << zero;
    else  // the saturation is exercised
      EXPECT_GT(saturated, want.numel() / 20) << saturated << " of " << want.numel();
  } else {
    expectTensorNear(out.value(), want, precision == cuda::Precision::kFloat16 ? 1e-2 : 6e-2,
                     precision == cuda::Precision::kFloat16 ? 1e-2 : 6e-2);
  }
}

const StemCase kResNetStem{"ResNet-50 stem, partial tiles",
                           {2, 3, 60, 44},
                           {64, 3, 7, 7},
                           {3, 3, 3, 3},
                           {3, 3},
                           {2, 2},
                           {1, 1, 1, 1}};

TEST(CudaConvMaxPool, ResNetStemInt8) {
  KILN_REQUIRE_GPU();
  for (auto precision : {cuda::Precision::kFloat16, cuda::Precision::kBFloat16}) {
    SCOPED_TRACE(precision == cuda::Precision::kFloat16 ? "fp16" : "bf16");
    expectStem(kResNetStem, precision, true);
  }
  StemCase oddWidth = kResNetStem;
  oddWidth.x = {2, 3, 61, 45};
  SCOPED_TRACE("odd width");
  expectStem(oddWidth, cuda::Precision::kFloat16, true);
}

TEST(CudaConvMaxPool, SmallScaleSaturates) {
  KILN_REQUIRE_GPU();
  StemCase saturating = kResNetStem;
  saturating.scale = 0.0012;
  expectStem(saturating, cuda::Precision::kFloat16, true);
}

TEST(CudaConvMaxPool, PersistentBlocksRunManyTiles) {
  KILN_REQUIRE_GPU();
  StemCase many = kResNetStem;
  many.x = {40, 3, 128, 128};  // pooled 32x32: 16 tiles per image, 640 against 396 blocks
  expectStem(many, cuda::Precision::kFloat16, true);
}

TEST(CudaConvMaxPool, OtherGeometry) {
  KILN_REQUIRE_GPU();
  const StemCase odd{"4 channels 5x5, ceil-mode 2x2 pool",
                     {3, 4, 37, 30},
                     {64, 4, 5, 5},
                     {2, 1, 2, 2},
                     {2, 2},
                     {2, 2},
                     {0, 0, 0, 0},
                     false,
                     true};
  expectStem(odd, cuda::Precision::kFloat16, true);
}

TEST(CudaConvMaxPool, FloatOutput) {
  KILN_REQUIRE_GPU();
  for (auto precision : {cuda::Precision::kFloat16, cuda::Precision::kBFloat16}) {
    SCOPED_TRACE(precision == cuda::Precision::kFloat16 ? "fp16" : "bf16");
    expectStem(kResNetStem, precision, false);
  }
}

// A float32 engine has no stem kernel: the node runs on the host fallback, and says so.
TEST(CudaConvMaxPool, Float32FallsBackToTheHost) {
  KILN_REQUIRE_GPU();
  GpuOpTest t = stemNode(kResNetStem, cuda::Precision::kFloat32, true);
  std::vector<cuda::LayerInfo> layers;
  auto out = runCudaPoisoned(t.network(), t.feeds(), cuda::Precision::kFloat32, "out0", &layers);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].implementation.find("kiln stem kernel"), std::string::npos);
  std::vector<NamedTensor> expected;
  ASSERT_TRUE(ReferenceBackend(t.network()).run(t.feeds(), &expected).isOk());
  expectTensorNear(out.value(), castTensor(expected[0].tensor, DataType::kFloat32), 0, 0);
}

}  // namespace
}  // namespace kiln::test
