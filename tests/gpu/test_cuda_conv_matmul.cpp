// Cross-backend tests for cuDNN convolutions and cuBLASLt GEMMs: CUDA engine vs CPU
// reference on random data. Tolerances: fp32 runs with TF32 off and differs only in
// summation order (1e-4); 16-bit storage rounds inputs and outputs.
#include "gpu/gpu_op_test.h"

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

// ai.kiln FusedMatMul (bias and activation in the cuBLASLt epilogue, GELU after it).
TEST(CudaFusedMatMul, BiasReluAndGeluMatchTheReference) {
  KILN_REQUIRE_GPU();
  for (const char* activation : {"none", "relu", "gelu_erf"}) {
    SCOPED_TRACE(activation);
    GpuOpTest("FusedMatMul", 1, "ai.kiln")
        .attr("activation", std::string(activation))
        .input(randomFloats({3, 17, 40}, 40))
        .constant(randomFloats({40, 24}, 41))
        .constant(randomFloats({24}, 42))
        .check(gemmTolerances());
  }
}

TEST(CudaFusedMatMul, OneColumnOutputBroadcastsItsBias) {
  KILN_REQUIRE_GPU();
  GpuOpTest("FusedMatMul", 1, "ai.kiln")
      .attr("activation", std::string("gelu_erf"))
      .input(randomFloats({9, 16}, 43))
      .constant(randomFloats({16, 1}, 44))
      .constant(randomFloats({1}, 45))
      .check(gemmTolerances());
}

}  // namespace
}  // namespace kiln::test
