// cuBLASLt, cuDNN and NVRTC through the dlopen shim (engine/backends/cuda/
// lazy_libraries.h) on a machine without a GPU: each library loads from the folder the
// build found it in, reports the major version the build was compiled against, and
// host-only calls with arguments pass through the forwarders and come back (an NVRTC
// compilation to a cubin, cuBLASLt descriptors, a finalized cuDNN tensor descriptor).
// The missing-library path is the install test's (tests/packaging/install_test.sh).
#include <cublasLt.h>
#include <cudnn.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <array>
#include <string>

#include "backends/cuda/lazy_libraries.h"
#include "kiln/cuda_build_versions.h"

namespace kiln::cuda {
namespace {

TEST(CudaLazyLibraries, EachLoadsWithTheBuildsMajorVersion) {
  const std::vector<CudaRuntimeLibrary> libraries = cudaRuntimeLibraries();
  ASSERT_EQ(libraries.size(), 3u);
  const std::array<std::string, 3> names = {"cuBLASLt", "cuDNN", "NVRTC"};
  const std::array<int, 3> majors = {CUBLAS_VER_MAJOR, CUDNN_MAJOR, CUDART_VERSION / 1000};
  for (size_t i = 0; i < libraries.size(); ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(libraries[i].name, names[i]);
    ASSERT_TRUE(libraries[i].found) << libraries[i].error;
    EXPECT_EQ(libraries[i].error, "");
    EXPECT_NE(libraries[i].path.find(libraries[i].soname), std::string::npos) << libraries[i].path;
    EXPECT_EQ(libraries[i].version / 10000, majors[i]) << libraries[i].version;
  }
  EXPECT_EQ(missingCudaLibraries(), "");
  EXPECT_EQ(lazySymbol(LazyLibrary::kCudnn, "noSuchEntryPoint"), nullptr);
}

TEST(CudaLazyLibraries, NvrtcCompilesThroughTheForwarders) {
  const char* source = "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.f; }";
  nvrtcProgram program = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&program, source, "twice.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  const char* options[] = {"--gpu-architecture=sm_90"};
  const nvrtcResult compiled = nvrtcCompileProgram(program, 1, options);
  size_t logSize = 0;
  ASSERT_EQ(nvrtcGetProgramLogSize(program, &logSize), NVRTC_SUCCESS);
  std::string log(logSize, '\0');
  ASSERT_EQ(nvrtcGetProgramLog(program, log.data()), NVRTC_SUCCESS);
  ASSERT_EQ(compiled, NVRTC_SUCCESS) << nvrtcGetErrorString(compiled) << ": " << log;
  size_t cubinSize = 0;
  ASSERT_EQ(nvrtcGetCUBINSize(program, &cubinSize), NVRTC_SUCCESS);
  ASSERT_GT(cubinSize, 64u);
  std::string cubin(cubinSize, '\0');
  ASSERT_EQ(nvrtcGetCUBIN(program, cubin.data()), NVRTC_SUCCESS);
  EXPECT_EQ(cubin.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(nvrtcDestroyProgram(&program), NVRTC_SUCCESS);
  EXPECT_EQ(program, nullptr);
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_ERROR_INVALID_INPUT), "NVRTC_ERROR_INVALID_INPUT");
}

TEST(CudaLazyLibraries, CublasLtDescriptorsThroughTheForwarders) {
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16F, 64, 32, 64), CUBLAS_STATUS_SUCCESS);
  const int32_t batch = 3;
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                             sizeof(batch)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const cublasOperation_t transpose = CUBLAS_OP_T;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                           sizeof(transpose)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
  EXPECT_STREQ(cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED),
               "the requested functionality is not supported");
}

TEST(CudaLazyLibraries, CudnnBackendDescriptorThroughTheForwarders) {
  cudnnBackendDescriptor_t tensor = nullptr;
  ASSERT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &tensor),
            CUDNN_STATUS_SUCCESS);
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  const int64_t dims[] = {1, 8, 4, 4}, strides[] = {128, 16, 4, 1}, uid = 7, alignment = 16;
  ASSERT_EQ(
      cudnnBackendSetAttribute(tensor, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type),
      CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(
      cudnnBackendSetAttribute(tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims),
      CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(
      cudnnBackendSetAttribute(tensor, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides),
      CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(
      cudnnBackendSetAttribute(tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid),
      CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnBackendSetAttribute(tensor, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                                     &alignment),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnBackendFinalize(tensor), CUDNN_STATUS_SUCCESS);
  int64_t count = 0, got[4] = {};
  ASSERT_EQ(cudnnBackendGetAttribute(tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4,
                                     &count, got),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(count, 4);
  EXPECT_EQ(got[1], 8);
  EXPECT_EQ(cudnnBackendDestroyDescriptor(tensor), CUDNN_STATUS_SUCCESS);
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
}

}  // namespace
}  // namespace kiln::cuda
