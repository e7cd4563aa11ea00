// Cross-backend tests for the pool family: CUDA engine vs CPU reference.
// Pooling (windowed and global), Resize / Upsample, DepthToSpace / SpaceToDepth,
// Trilu and the generators (Range, ConstantOfShape, EyeLike, OneHot).
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "gpu/gpu_op_test.h"

namespace kiln::test {
namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

// ------------------------------------------------------------------ windowed pooling

TEST(CudaPool, MaxPool2dStrided) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MaxPool", 12)
      .attr("kernel_shape", Ints{3, 3})
      .attr("strides", Ints{2, 2})
      .input(randomFloats({2, 3, 9, 11}, 1))
      .check();
}

// int8 and uint8 MaxPool (fold_qdq pools quantized values: DQ forward, Q backward
// through MaxPool), padded, with indices for int8.
TEST(CudaPool, MaxPoolOnInt8AndUint8) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MaxPool", 12)
      .attr("kernel_shape", Ints{3, 3})
      .attr("strides", Ints{2, 2})
      .attr("pads", Ints{1, 1, 1, 1})
      .input(randomTensor(DataType::kInt8, {2, 3, 9, 11}, 41, -128, 127))
      .outputs(2)
      .check(fp32Only());
  GpuOpTest("MaxPool", 12)
      .attr("kernel_shape", Ints{2, 2})
      .input(randomTensor(DataType::kUInt8, {1, 4, 7, 6}, 42, 0, 255))
      .check(fp32Only());
}

// Placement needs no device: the engine runs a node on the GPU only when its kernel's
// support predicate admits the input types, otherwise on the host (slow, and no CUDA
// graph). int8 / uint8 MaxPool has device kernels (NCHW and channels-last); the other
// pools of 8-bit data have none.
TEST(CudaPool, Int8MaxPoolIsPlacedOnTheDevice) {
  auto reason = [](const char* op, DataType type) {
    const cuda::GpuKernelEntry* entry = cuda::builtinGpuKernels().find("", op, 12);
    if (!entry || !entry->supports) return std::string("no kernel or no predicate");
    Node node;
    node.opType = op;
    node.opset = 12;
    return entry->supports(node, {type});
  };
  EXPECT_EQ(reason("MaxPool", DataType::kInt8), "");
  EXPECT_EQ(reason("MaxPool", DataType::kUInt8), "");
  EXPECT_EQ(reason("MaxPool", DataType::kFloat16), "");
  EXPECT_NE(reason("MaxPool", DataType::kInt32), "");
  EXPECT_NE(reason("AveragePool", DataType::kInt8), "");
  EXPECT_NE(reason("LpPool", DataType::kUInt8), "");
  EXPECT_NE(reason("GlobalMaxPool", DataType::kInt8), "");
}

TEST(CudaPool, MaxPoolPadsStridesDilationsCeilModeWithIndices) {
  KILN_REQUIRE_GPU();
  // H: window 5, padded 14, ceil gives one more output than floor.
  GpuOpTest("MaxPool", 12)
      .attr("kernel_shape", Ints{3, 2})
      .attr("strides", Ints{2, 3})
      .attr("pads", Ints{1, 0, 2, 1})
      .attr("dilations", Ints{2, 1})
      .attr("ceil_mode", int64_t{1})
      .input(randomFloats({2, 3, 11, 9}, 2))
      .outputs(2)
      .check();
}

TEST(CudaPool, MaxPool1dSameUpper) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MaxPool", 12)
      .attr("kernel_shape", Ints{4})
      .attr("strides", Ints{3})
      .attr("auto_pad", std::string("SAME_UPPER"))
      .input(randomFloats({2, 4, 17}, 3))
      .outputs(2)
      .check();
}

TEST(CudaPool, MaxPool3dSameLowerWithIndices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MaxPool", 12)
      .attr("kernel_shape", Ints{2, 3, 2})
      .attr("strides", Ints{2, 2, 1})
      .attr("auto_pad", std::string("SAME_LOWER"))
      .input(randomFloats({1, 2, 5, 6, 7}, 4))
      .outputs(2)
      .check();
}

TEST(CudaPool, MaxPoolColumnMajorIndices) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MaxPool", 12)
      .attr("kernel_shape", Ints{2, 3})
      .attr("strides", Ints{2, 2})
      .attr("pads", Ints{0, 1, 1, 1})
      .attr("storage_order", int64_t{1})
      .input(randomFloats({2, 2, 7, 8}, 5))
      .outputs(2)
      .check();
}

TEST(CudaPool, MaxPoolValidOld) {
  KILN_REQUIRE_GPU();
  GpuOpTest("MaxPool", 8)
      .attr("kernel_shape", Ints{2, 2})
      .attr("auto_pad", std::string("VALID"))
      .input(randomFloats({1, 3, 6, 7}, 6))
      .check();
}

TEST(CudaPool, AveragePoolExcludePad) {
  KILN_REQUIRE_GPU();
  GpuOpTest("AveragePool", 11)
      .attr("kernel_shape", Ints{3, 3})
      .attr("strides", Ints{2, 2})
      .attr("pads", Ints{1, 1, 1, 1})
      .attr("count_include_pad", int64_t{0})
      .input(randomFloats({2, 3, 10, 11}, 7))
      .check();
}

TEST(CudaPool, AveragePoolIncludePadCeilMode) {
  KILN_REQUIRE_GPU();
  GpuOpTest("AveragePool", 11)
      .attr("kernel_shape", Ints{3, 2})
      .attr("strides", Ints{2, 2})
      .attr("pads", Ints{1, 0, 1, 1})
      .attr("count_include_pad", int64_t{1})
      .attr("ceil_mode", int64_t{1})
      .input(randomFloats({2, 3, 10, 11}, 8))
      .check();
}

TEST(CudaPool, AveragePoolDilations) {
  KILN_REQUIRE_GPU();
  for (int64_t includePad : {0, 1}) {
    SCOPED_TRACE("count_include_pad " + std::to_string(includePad));
    GpuOpTest("AveragePool", 19)
        .attr("kernel_shape", Ints{2, 3})
        .attr("dilations", Ints{2, 2})
        .attr("pads", Ints{1, 1, 0, 1})
        .attr("count_include_pad", includePad)
        .input(randomFloats({1, 4, 9, 10}, 9))
        .check();
  }
}

TEST(CudaPool, AveragePool1dAnd3d) {
  KILN_REQUIRE_GPU();
  GpuOpTest("AveragePool", 11)
      .attr("kernel_shape", Ints{5})
      .attr("strides", Ints{2})
      .attr("auto_pad", std::string("SAME_UPPER"))
      .input(randomFloats({2, 3, 19}, 10))
      .check();
  GpuOpTest("AveragePool", 11)
      .attr("kernel_shape", Ints{2, 2, 3})
      .attr("strides", Ints{1, 2, 2})
      .attr("pads", Ints{0, 1, 1, 1, 0, 1})
      .attr("count_include_pad", int64_t{1})
      .input(randomFloats({1, 3, 4, 6, 7}, 11))
      .check();
}

TEST(CudaPool, LpPool) {
  KILN_REQUIRE_GPU();
  for (int64_t p : {1, 2, 3}) {
    SCOPED_TRACE("p " + std::to_string(p));
    GpuOpTest("LpPool", 18)
        .attr("kernel_shape", Ints{3, 3})
        .attr("strides", Ints{2, 2})
        .attr("pads", Ints{1, 1, 1, 1})
        .attr("p", p)
        .input(randomFloats({2, 3, 8, 9}, 12))
        .check();
  }
}

// ------------------------------------------------------------------ global pooling

TEST(CudaPool, GlobalAveragePool) {
  KILN_REQUIRE_GPU();
  // A warp per plane (ResNet's 7x7), a block per plane, and three spatial axes.
  GpuOpTest("GlobalAveragePool", 1).input(randomFloats({2, 64, 7, 7}, 13)).check();
  GpuOpTest("GlobalAveragePool", 1).input(randomFloats({2, 3, 40, 41}, 14)).check();
  GpuOpTest("GlobalAveragePool", 1).input(randomFloats({1, 4, 3, 5, 6}, 15)).check();
}

TEST(CudaPool, GlobalMaxPool) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GlobalMaxPool", 1).input(randomFloats({2, 8, 9, 10}, 16)).check();
  GpuOpTest("GlobalMaxPool", 1).input(randomFloats({1, 2, 50, 50}, 17)).check();
  GpuOpTest("GlobalMaxPool", 1).input(randomFloats({3, 5, 11}, 18)).check();
}

TEST(CudaPool, GlobalLpPool) {
  KILN_REQUIRE_GPU();
  GpuOpTest("GlobalLpPool", 2).input(randomFloats({2, 6, 5, 7}, 19)).check();
  GpuOpTest("GlobalLpPool", 2)
      .attr("p", int64_t{3})
      .input(randomFloats({1, 3, 33, 40}, 20))
      .check();
}

// ------------------------------------------------------------------ Resize / Upsample

// Resize-13+ with scales (roi omitted).
GpuOpTest resizeWithScales(int opset, const Tensor& x, const Floats& scales) {
  GpuOpTest test("Resize", opset);
  test.input(x).missingInput().constant(floatTensor({static_cast<int64_t>(scales.size())}, scales));
  return test;
}

// Resize-13+ with sizes (roi and scales omitted).
GpuOpTest resizeWithSizes(int opset, const Tensor& x, const Ints& sizes) {
  GpuOpTest test("Resize", opset);
  test.input(x).missingInput().missingInput().constant(
      int64Tensor({static_cast<int64_t>(sizes.size())}, sizes));
  return test;
}

TEST(CudaPool, ResizeNearestScales) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 2, 5, 7}, 21);
  for (const char* coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                            "half_pixel_symmetric"}) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      SCOPED_TRACE(std::string(coord) + " / " + nearest);
      resizeWithScales(19, x, {1.f, 1.f, 1.6f, 2.3f})
          .attr("mode", std::string("nearest"))
          .attr("coordinate_transformation_mode", std::string(coord))
          .attr("nearest_mode", std::string(nearest))
          .check();
      resizeWithScales(19, x, {1.f, 1.f, 0.6f, 0.5f})
          .attr("mode", std::string("nearest"))
          .attr("coordinate_transformation_mode", std::string(coord))
          .attr("nearest_mode", std::string(nearest))
          .check();
    }
  }
}

TEST(CudaPool, ResizeNearestSizes) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 2, 5, 7}, 22);
  for (const char* coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
    SCOPED_TRACE(coord);
    resizeWithSizes(13, x, {1, 2, 9, 4})
        .attr("mode", std::string("nearest"))
        .attr("coordinate_transformation_mode", std::string(coord))
        .check();
  }
  // tf_half_pixel_for_nn belongs to opsets 11-12.
  GpuOpTest("Resize", 11)
      .input(x)
      .constant(Tensor(DataType::kFloat32, {0}))
      .constant(Tensor(DataType::kFloat32, {0}))
      .constant(int64Tensor({4}, {1, 2, 8, 11}))
      .attr("mode", std::string("nearest"))
      .attr("coordinate_transformation_mode", std::string("tf_half_pixel_for_nn"))
      .check();
}

TEST(CudaPool, ResizeNearestIntegerData) {
  KILN_REQUIRE_GPU();
  resizeWithScales(13, randomTensor(DataType::kInt32, {2, 3, 4, 5}, 23, -100, 100),
                   {1.f, 1.f, 2.f, 1.5f})
      .attr("mode", std::string("nearest"))
      .check(fp32Only());
}

TEST(CudaPool, ResizeLinearScales) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({2, 3, 6, 5}, 24);
  for (const char* coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                            "half_pixel_symmetric"}) {
    SCOPED_TRACE(coord);
    resizeWithScales(19, x, {1.f, 1.f, 1.7f, 2.f})
        .attr("mode", std::string("linear"))
        .attr("coordinate_transformation_mode", std::string(coord))
        .check();
    resizeWithScales(19, x, {1.f, 1.f, 0.5f, 0.8f})
        .attr("mode", std::string("linear"))
        .attr("coordinate_transformation_mode", std::string(coord))
        .check();
  }
}

TEST(CudaPool, ResizeLinearSizes) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 3, 6, 5}, 25);
  for (const char* coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
    SCOPED_TRACE(coord);
    resizeWithSizes(13, x, {1, 3, 11, 8})
        .attr("mode", std::string("linear"))
        .attr("coordinate_transformation_mode", std::string(coord))
        .check();
    // An output length of 1 takes the special cases of align_corners / pytorch_half_pixel.
    resizeWithSizes(13, x, {1, 3, 1, 9})
        .attr("mode", std::string("linear"))
        .attr("coordinate_transformation_mode", std::string(coord))
        .check();
  }
}

TEST(CudaPool, ResizeTrilinear) {
  KILN_REQUIRE_GPU();
  resizeWithScales(13, randomFloats({1, 2, 4, 5, 6}, 26), {1.f, 1.f, 1.5f, 2.f, 0.5f})
      .attr("mode", std::string("linear"))
      .check();
}

TEST(CudaPool, ResizeCubic) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 2, 7, 6}, 27);
  for (const char* coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
    SCOPED_TRACE(coord);
    resizeWithScales(13, x, {1.f, 1.f, 1.5f, 0.8f})
        .attr("mode", std::string("cubic"))
        .attr("coordinate_transformation_mode", std::string(coord))
        .check();
    resizeWithSizes(13, x, {1, 2, 10, 13})
        .attr("mode", std::string("cubic"))
        .attr("coordinate_transformation_mode", std::string(coord))
        .attr("cubic_coeff_a", -0.5f)
        .attr("exclude_outside", int64_t{1})
        .check();
  }
}

TEST(CudaPool, ResizeAntialias) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 2, 13, 11}, 28);
  for (const char* mode : {"linear", "cubic"}) {
    SCOPED_TRACE(mode);
    resizeWithScales(18, x, {1.f, 1.f, 0.4f, 0.6f})
        .attr("mode", std::string(mode))
        .attr("antialias", int64_t{1})
        .check();
  }
}

// A resize of the last two axes runs both passes in one kernel: more planes than a grid's
// z extent (65535), output rows wider than one block (128), and an antialiased shrink
// with more taps than the kernel holds (20 > 8: the separable passes) all match the CPU.
TEST(CudaPool, ResizeLastTwoAxesAcrossGridsAndTaps) {
  KILN_REQUIRE_GPU();
  resizeWithScales(19, randomFloats({3, 23500, 2, 3}, 30), {1.f, 1.f, 2.f, 1.5f})
      .attr("mode", std::string("linear"))
      .check();
  resizeWithSizes(13, randomFloats({1, 2, 5, 150}, 31), {1, 2, 9, 301})
      .attr("mode", std::string("linear"))
      .attr("coordinate_transformation_mode", std::string("align_corners"))
      .check();
  resizeWithScales(18, randomFloats({1, 2, 40, 30}, 32), {1.f, 1.f, 0.1f, 0.2f})
      .attr("mode", std::string("linear"))
      .attr("antialias", int64_t{1})
      .check();
}

// So does a resize of the two axes before kept innermost ones (NHWC storage, as
// channels_last_layout gives Resizes): adjacent threads on adjacent channels, output rows
// of more elements than a block, cubic taps, and two kept axes (rank 5) match the CPU.
TEST(CudaPool, ResizeBeforeInnermostAxes) {
  KILN_REQUIRE_GPU();
  resizeWithScales(19, randomFloats({2, 5, 6, 24}, 33), {1.f, 2.f, 1.5f, 1.f})
      .attr("mode", std::string("linear"))
      .check();
  resizeWithSizes(13, randomFloats({1, 4, 3, 40}, 34), {1, 9, 16, 40})
      .attr("mode", std::string("linear"))
      .attr("coordinate_transformation_mode", std::string("align_corners"))
      .check();
  resizeWithScales(13, randomFloats({1, 7, 6, 3}, 35), {1.f, 1.5f, 0.8f, 1.f})
      .attr("mode", std::string("cubic"))
      .check();
  resizeWithScales(13, randomFloats({1, 4, 5, 3, 2}, 36), {1.f, 2.f, 2.f, 1.f, 1.f})
      .attr("mode", std::string("linear"))
      .check();
}

TEST(CudaPool, ResizeTfCropAndResize) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 2, 6, 7}, 29);
  // Part of the crop box lies outside the input: those outputs take the extrapolation value.
  const Tensor roi = floatTensor({8}, {0.f, 0.f, -0.2f, 0.1f, 1.f, 1.f, 1.1f, 0.8f});
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    SCOPED_TRACE(mode);
    GpuOpTest("Resize", 13)
        .input(x)
        .constant(roi)
        .missingInput()
        .constant(int64Tensor({4}, {1, 2, 8, 5}))
        .attr("mode", std::string(mode))
        .attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"))
        .attr("extrapolation_value", 0.5f)
        .check();
  }
}

TEST(CudaPool, ResizeAxesKeepAspectRatio) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 2, 5, 7}, 30);
  for (const char* policy : {"stretch", "not_larger", "not_smaller"}) {
    SCOPED_TRACE(policy);
    GpuOpTest("Resize", 18)
        .input(x)
        .missingInput()
        .missingInput()
        .constant(int64Tensor({2}, {10, 10}))
        .attr("axes", Ints{2, 3})
        .attr("keep_aspect_ratio_policy", std::string(policy))
        .attr("mode", std::string("linear"))
        .check();
  }
  GpuOpTest("Resize", 18)
      .input(x)
      .missingInput()
      .constant(floatTensor({1}, {2.5f}))
      .attr("axes", Ints{-1})
      .attr("mode", std::string("nearest"))
      .check();
}

TEST(CudaPool, ResizeOpset10And11) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 2, 4, 5}, 31);
  for (const char* mode : {"nearest", "linear"}) {
    SCOPED_TRACE(mode);
    GpuOpTest("Resize", 10)
        .input(x)
        .constant(floatTensor({4}, {1.f, 1.f, 2.f, 1.5f}))
        .attr("mode", std::string(mode))
        .check();
    // Opset 11: roi is a required input, given empty.
    GpuOpTest("Resize", 11)
        .input(x)
        .constant(Tensor(DataType::kFloat32, {0}))
        .constant(floatTensor({4}, {1.f, 1.f, 2.f, 1.5f}))
        .attr("mode", std::string(mode))
        .check();
  }
}

TEST(CudaPool, Upsample) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({1, 2, 4, 5}, 32);
  GpuOpTest("Upsample", 9)
      .input(x)
      .constant(floatTensor({4}, {1.f, 1.f, 2.f, 3.f}))
      .attr("mode", std::string("nearest"))
      .check();
  GpuOpTest("Upsample", 9)
      .input(x)
      .constant(floatTensor({4}, {1.f, 1.f, 1.5f, 2.f}))
      .attr("mode", std::string("linear"))
      .check();
  GpuOpTest("Upsample", 7)
      .input(x)
      .attr("scales", Floats{1.f, 1.f, 2.f, 2.f})
      .attr("mode", std::string("linear"))
      .check();
}

// ------------------------------------------------------------------ DepthToSpace / SpaceToDepth

TEST(CudaPool, DepthToSpace) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({2, 8, 3, 4}, 33);
  for (const char* mode : {"DCR", "CRD"}) {
    SCOPED_TRACE(mode);
    GpuOpTest("DepthToSpace", 13)
        .attr("blocksize", int64_t{2})
        .attr("mode", std::string(mode))
        .input(x)
        .check();
  }
  GpuOpTest("DepthToSpace", 13)
      .attr("blocksize", int64_t{3})
      .input(randomTensor(DataType::kInt64, {1, 18, 2, 3}, 34, -1000, 1000))
      .check(fp32Only());
}

TEST(CudaPool, SpaceToDepth) {
  KILN_REQUIRE_GPU();
  GpuOpTest("SpaceToDepth", 13)
      .attr("blocksize", int64_t{2})
      .input(randomFloats({2, 3, 4, 6}, 35))
      .check();
  GpuOpTest("SpaceToDepth", 13)
      .attr("blocksize", int64_t{3})
      .input(randomTensor(DataType::kInt8, {1, 2, 6, 9}, 36, -100, 100))
      .check(fp32Only());
}

// ------------------------------------------------------------------ Trilu

TEST(CudaPool, Trilu) {
  KILN_REQUIRE_GPU();
  const Tensor x = randomFloats({2, 5, 6}, 37);
  GpuOpTest("Trilu", 14).input(x).check();
  GpuOpTest("Trilu", 14).attr("upper", int64_t{0}).input(x).check();
  for (int64_t k : {-2, 1, 3}) {
    SCOPED_TRACE("k " + std::to_string(k));
    GpuOpTest("Trilu", 14).input(x).constant(Tensor::scalarInt64(k)).check();
    GpuOpTest("Trilu", 14)
        .attr("upper", int64_t{0})
        .input(x)
        .constant(Tensor::scalarInt64(k))
        .check();
  }
  // k as a run-time input, integer data.
  GpuOpTest("Trilu", 14)
      .attr("upper", int64_t{0})
      .input(randomTensor(DataType::kInt32, {3, 4, 4}, 38, -50, 50))
      .input(Tensor::scalarInt64(-1))
      .check(fp32Only());
}

// ------------------------------------------------------------------ generators

// Range's inputs are fed at run time: constant ones would be folded at prepare time.
TEST(CudaPool, RangeInt64) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Range", 11)
      .input(Tensor::scalarInt64(3))
      .input(Tensor::scalarInt64(50))
      .input(Tensor::scalarInt64(4))
      .check(fp32Only());
  GpuOpTest("Range", 11)
      .input(Tensor::scalarInt64(10))
      .input(Tensor::scalarInt64(-7))
      .input(Tensor::scalarInt64(-3))
      .check(fp32Only());
}

TEST(CudaPool, RangeFloat) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Range", 11)
      .input(Tensor::scalarFloat(-2.5f))
      .input(Tensor::scalarFloat(7.25f))
      .input(Tensor::scalarFloat(0.75f))
      .check();
  GpuOpTest("Range", 11)
      .input(Tensor::scalarFloat(1.f))
      .input(Tensor::scalarFloat(-3.f))
      .input(Tensor::scalarFloat(-0.5f))
      .check();
}

TEST(CudaPool, ConstantOfShape) {
  KILN_REQUIRE_GPU();
  // The shape is a run-time input so that the node is not folded at prepare time.
  GpuOpTest("ConstantOfShape", 9).input(int64Tensor({3}, {2, 3, 4})).check();
  GpuOpTest("ConstantOfShape", 9).input(int64Tensor({2}, {0, 5})).check();
}

TEST(CudaPool, EyeLike) {
  KILN_REQUIRE_GPU();
  GpuOpTest("EyeLike", 9).attr("k", int64_t{2}).input(randomFloats({5, 7}, 39)).check();
  GpuOpTest("EyeLike", 9)
      .attr("k", int64_t{-1})
      .attr("dtype", int64_t{7})  // int64
      .input(randomFloats({6, 4}, 40))
      .check();
  GpuOpTest("EyeLike", 9).input(randomTensor(DataType::kInt32, {4, 4}, 41)).check(fp32Only());
}

TEST(CudaPool, OneHot) {
  KILN_REQUIRE_GPU();
  const Tensor values = floatTensor({2}, {0.25f, 3.f});
  // Indices in [-6, 6] against depth 5: negative ones count from the end, out-of-range
  // ones give an all-off row.
  GpuOpTest("OneHot", 11)
      .input(randomTensor(DataType::kInt64, {3, 4}, 42, -6, 6))
      .constant(Tensor::scalarInt64(5))
      .constant(values)
      .check();
  GpuOpTest("OneHot", 11)
      .attr("axis", int64_t{1})
      .input(randomTensor(DataType::kInt32, {2, 3, 2}, 43, -6, 6))
      .constant(Tensor::scalarInt64(5))
      .constant(values)
      .check();
  // Float indices truncate toward zero; int64 values.
  GpuOpTest("OneHot", 11)
      .attr("axis", int64_t{0})
      .input(randomTensor(DataType::kFloat32, {2, 3}, 44, -4, 4))
      .constant(floatTensor({1}, {4.f}))
      .constant(int64Tensor({2}, {-1, 7}))
      .check();
}

}  // namespace
}  // namespace kiln::test
