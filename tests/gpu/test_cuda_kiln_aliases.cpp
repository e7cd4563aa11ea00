// The ONNX ops the graph passes write into models importing an older opset, under
// ai.kiln (Gelu, LayerNormalization, RMSNormalization): on the CUDA engine they run
// the ONNX ops' GPU kernels (check() fails on a host fallback) and match the CPU
// reference's ai.kiln registrations.
//
// Tolerances: Gelu the standard ones; the normalizations 5e-5 in fp32 (mean and
// variance in float on the GPU, in double on the CPU), 4e-3 / 3e-2 in fp16 / bf16.
#include "gpu/gpu_op_test.h"
#include "kiln/passes.h"

namespace kiln::test {
namespace {

std::vector<PrecisionTolerance> normTolerances() {
  return {{cuda::Precision::kFloat32, 5e-5, 5e-5},
          {cuda::Precision::kFloat16, 4e-3, 4e-3},
          {cuda::Precision::kBFloat16, 3e-2, 3e-2}};
}

TEST(CudaKilnAliases, GeluBothApproximations) {
  KILN_REQUIRE_GPU();
  GpuOpTest("Gelu", 1, kKilnDomain).input(randomFloats({4, 7, 96}, 1, -4.0, 4.0)).check();
  GpuOpTest("Gelu", 1, kKilnDomain)
      .attr("approximate", std::string("tanh"))
      .input(randomFloats({3, 1000}, 2, -4.0, 4.0))
      .check();
}

TEST(CudaKilnAliases, LayerNormalizationLastAxis) {
  KILN_REQUIRE_GPU();
  GpuOpTest("LayerNormalization", 1, kKilnDomain)
      .attr("axis", int64_t{-1})
      .attr("epsilon", 1e-5f)
      .input(randomFloats({2, 25, 120}, 3, -2.0, 3.0))
      .constant(randomFloats({120}, 4, 0.5, 1.5))
      .constant(randomFloats({120}, 5))
      .check(normTolerances());
}

TEST(CudaKilnAliases, RMSNormalizationLastAxis) {
  KILN_REQUIRE_GPU();
  GpuOpTest("RMSNormalization", 1, kKilnDomain)
      .attr("axis", int64_t{-1})
      .attr("epsilon", 1e-6f)
      .input(randomFloats({2, 9, 256}, 6, -2.0, 3.0))
      .constant(randomFloats({256}, 7, 0.5, 1.5))
      .check(normTolerances());
}

}  // namespace
}  // namespace kiln::test
