#include "backends/cuda/ops/int8_pointwise_gemm.h"

#include <cublasLt.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/libraries.h"
#include "backends/cuda/ops/gemm.h"

namespace kiln::cuda {

// describeInt8TnGemm's layout with int8 D: D^T's columns are Y's rows (NHWC); C (the
// residual) has D's layout.
struct Int8PointwiseGemm : LtMatmulDescriptors {  // a: W, b: X, d: Y and Z
  LtAlgorithm algorithm;
  bool residual = false;
};

Result<std::shared_ptr<Int8PointwiseGemm>> planInt8PointwiseGemm(GpuKernelContext& ctx,
                                                                 int64_t rows, int64_t channels,
                                                                 int64_t outChannels, bool residual,
                                                                 bool relu, const float* bias,
                                                                 std::string* why) {
  if (channels % 4 != 0 || outChannels % 4 != 0) {
    *why = "C and K must be multiples of 4";
    return std::shared_ptr<Int8PointwiseGemm>();
  }
  auto g = std::make_shared<Int8PointwiseGemm>();
  g->residual = residual;
  KILN_RETURN_IF_ERROR(
      describeInt8TnGemm(g.get(), CUDA_R_32F, CUDA_R_8I, rows, outChannels, channels));
  const cublasLtPointerMode_t vectorAlpha = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
  KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_POINTER_MODE,
                                                   &vectorAlpha, sizeof(vectorAlpha)));
  const cublasLtEpilogue_t epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                   sizeof(epilogue)));
  const cudaDataType_t biasType = CUDA_R_32F;
  KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                   &biasType, sizeof(biasType)));
  KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                   sizeof(bias)));
  KILN_ASSIGN_OR_RETURN(g->algorithm, firstLtAlgorithm(ctx, g->op, g->a, g->b, g->d));
  if (!g->algorithm.found) {
    *why = "cuBLASLt has no int8-output algorithm with a per-channel alpha (status " +
           std::to_string(static_cast<int>(g->algorithm.status)) + ")";
    return std::shared_ptr<Int8PointwiseGemm>();
  }
  return g;
}

Status runInt8PointwiseGemm(GpuKernelContext& ctx, const Int8PointwiseGemm& g, const void* x,
                            const void* w, const float* alpha, float beta, const void* z, void* y) {
  void* workspace = nullptr;
  if (g.algorithm.workspace > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, ctx.libraryWorkspace(g.algorithm.workspace));
  }
  KILN_ASSIGN_OR_RETURN(cublasLtHandle_t handle, ctx.libraries().cublasLt());
  const float noResidual = 0.f;
  const float* betaValue = g.residual ? &beta : &noResidual;
  KILN_CUBLAS_CHECK(cublasLtMatmul(handle, g.op, alpha, w, g.a, x, g.b, betaValue,
                                   g.residual ? z : y, g.d, y, g.d, &g.algorithm.algo, workspace,
                                   g.algorithm.workspace, ctx.stream()));
  return Status::ok();
}

}  // namespace kiln::cuda
