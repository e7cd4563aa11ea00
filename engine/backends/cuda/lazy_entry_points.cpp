// The 37 entry points of cuBLASLt, cuDNN and NVRTC that Kiln calls (nm -D
// --undefined-only of a build that linked them), defined here with the real headers'
// signatures and forwarding to the library lazy_libraries.cpp loads on first use. A
// definition that does not match its header does not compile (it redeclares an
// extern "C" function). With the library missing, each returns the library's own
// failure status (cuBLAS/cuDNN "not initialized", NVRTC "internal error") and the
// error-string functions say which library is missing and why, so every
// KILN_*_CHECK turns it into a Status naming it.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cuda_runtime_api.h>
#include <library_types.h>

#include "backends/cuda/lazy_libraries.h"

// Hidden visibility for everything these headers declare, so for the definitions
// below: they satisfy Kiln's own calls but are never exported, so a library loaded
// beside Kiln (PyTorch's cuDNN, the real cuBLASLt itself) cannot bind to them.
#pragma GCC visibility push(hidden)
#include <cublasLt.h>
#include <cudnn.h>
#include <nvrtc.h>
#pragma GCC visibility pop

namespace {

using kiln::cuda::LazyLibrary;

// What an error-string function says when its library is missing, or loaded without
// the symbol.
const char* missingText(LazyLibrary library) {
  const std::string& error = kiln::cuda::lazyLibraryError(library);
  return error.empty() ? "the loaded CUDA library lacks this entry point" : error.c_str();
}

constexpr LazyLibrary kLt = LazyLibrary::kCublasLt;
constexpr LazyLibrary kDnn = LazyLibrary::kCudnn;
constexpr LazyLibrary kRtc = LazyLibrary::kNvrtc;
constexpr cublasStatus_t kLtMissing = CUBLAS_STATUS_NOT_INITIALIZED;
constexpr cudnnStatus_t kDnnMissing = CUDNN_STATUS_NOT_INITIALIZED;
constexpr nvrtcResult kRtcMissing = NVRTC_ERROR_INTERNAL_ERROR;

}  // namespace

// One forwarder: `Ret name params` calls `name`'s target in `library` with `args`,
// resolved once (a function-local static, so thread-safe); `failure` when the library
// or the symbol is missing.
#define KILN_FORWARD(Ret, name, library, failure, params, args)                      \
  Ret name params {                                                                  \
    static auto* const real =                                                        \
        reinterpret_cast<decltype(&::name)>(kiln::cuda::lazySymbol(library, #name)); \
    if (!real) return failure;                                                       \
    return real args;                                                                \
  }

extern "C" {

// --- cuBLASLt -----------------------------------------------------------------------
KILN_FORWARD(cublasStatus_t, cublasLtCreate, kLt, kLtMissing, (cublasLtHandle_t * handle), (handle))
KILN_FORWARD(cublasStatus_t, cublasLtDestroy, kLt, kLtMissing, (cublasLtHandle_t handle), (handle))
KILN_FORWARD(const char*, cublasLtGetStatusString, kLt, missingText(kLt), (cublasStatus_t status),
             (status))
KILN_FORWARD(size_t, cublasLtGetVersion, kLt, 0, (void), ())
KILN_FORWARD(cublasStatus_t, cublasLtMatmul, kLt, kLtMissing,
             (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
              cublasLtMatrixLayout_t aDesc, const void* b, cublasLtMatrixLayout_t bDesc,
              const void* beta, const void* c, cublasLtMatrixLayout_t cDesc, void* d,
              cublasLtMatrixLayout_t dDesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
              size_t workspaceBytes, cudaStream_t stream),
             (handle, desc, alpha, a, aDesc, b, bDesc, beta, c, cDesc, d, dDesc, algo, workspace,
              workspaceBytes, stream))
KILN_FORWARD(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic, kLt, kLtMissing,
             (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t aDesc,
              cublasLtMatrixLayout_t bDesc, cublasLtMatrixLayout_t cDesc,
              cublasLtMatrixLayout_t dDesc, cublasLtMatmulPreference_t preference, int requested,
              cublasLtMatmulHeuristicResult_t results[], int* returned),
             (handle, desc, aDesc, bDesc, cDesc, dDesc, preference, requested, results, returned))
KILN_FORWARD(cublasStatus_t, cublasLtMatmulDescCreate, kLt, kLtMissing,
             (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
             (desc, compute, scale))
KILN_FORWARD(cublasStatus_t, cublasLtMatmulDescDestroy, kLt, kLtMissing,
             (cublasLtMatmulDesc_t desc), (desc))
KILN_FORWARD(cublasStatus_t, cublasLtMatmulDescSetAttribute, kLt, kLtMissing,
             (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
              const void* buffer, size_t bytes),
             (desc, attribute, buffer, bytes))
KILN_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceCreate, kLt, kLtMissing,
             (cublasLtMatmulPreference_t * preference), (preference))
KILN_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceDestroy, kLt, kLtMissing,
             (cublasLtMatmulPreference_t preference), (preference))
KILN_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute, kLt, kLtMissing,
             (cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
              const void* buffer, size_t bytes),
             (preference, attribute, buffer, bytes))
KILN_FORWARD(cublasStatus_t, cublasLtMatrixLayoutCreate, kLt, kLtMissing,
             (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols,
              int64_t ld),
             (layout, type, rows, cols, ld))
KILN_FORWARD(cublasStatus_t, cublasLtMatrixLayoutDestroy, kLt, kLtMissing,
             (cublasLtMatrixLayout_t layout), (layout))
KILN_FORWARD(cublasStatus_t, cublasLtMatrixLayoutSetAttribute, kLt, kLtMissing,
             (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute,
              const void* buffer, size_t bytes),
             (layout, attribute, buffer, bytes))

// --- cuDNN (the backend descriptor API and the handle) --------------------------------
KILN_FORWARD(cudnnStatus_t, cudnnBackendCreateDescriptor, kDnn, kDnnMissing,
             (cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* descriptor),
             (type, descriptor))
KILN_FORWARD(cudnnStatus_t, cudnnBackendDestroyDescriptor, kDnn, kDnnMissing,
             (cudnnBackendDescriptor_t descriptor), (descriptor))
KILN_FORWARD(cudnnStatus_t, cudnnBackendExecute, kDnn, kDnnMissing,
             (cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
              cudnnBackendDescriptor_t variantPack),
             (handle, plan, variantPack))
KILN_FORWARD(cudnnStatus_t, cudnnBackendFinalize, kDnn, kDnnMissing,
             (cudnnBackendDescriptor_t descriptor), (descriptor))
KILN_FORWARD(cudnnStatus_t, cudnnBackendGetAttribute, kDnn, kDnnMissing,
             (cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,
              cudnnBackendAttributeType_t type, int64_t requested, int64_t* count, void* elements),
             (descriptor, name, type, requested, count, elements))
KILN_FORWARD(cudnnStatus_t, cudnnBackendSetAttribute, kDnn, kDnnMissing,
             (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
              cudnnBackendAttributeType_t type, int64_t count, const void* elements),
             (descriptor, name, type, count, elements))
KILN_FORWARD(cudnnStatus_t, cudnnCreate, kDnn, kDnnMissing, (cudnnHandle_t * handle), (handle))
KILN_FORWARD(cudnnStatus_t, cudnnDestroy, kDnn, kDnnMissing, (cudnnHandle_t handle), (handle))
KILN_FORWARD(const char*, cudnnGetErrorString, kDnn, missingText(kDnn), (cudnnStatus_t status),
             (status))
void cudnnGetLastErrorString(char* message, size_t size) {
  static auto* const real = reinterpret_cast<decltype(&::cudnnGetLastErrorString)>(
      kiln::cuda::lazySymbol(kDnn, "cudnnGetLastErrorString"));
  if (real) return real(message, size);
  if (size == 0) return;
  std::strncpy(message, missingText(kDnn), size - 1);
  message[size - 1] = '\0';
}
KILN_FORWARD(size_t, cudnnGetVersion, kDnn, 0, (void), ())
KILN_FORWARD(cudnnStatus_t, cudnnSetStream, kDnn, kDnnMissing,
             (cudnnHandle_t handle, cudaStream_t stream), (handle, stream))

// --- NVRTC ----------------------------------------------------------------------------
KILN_FORWARD(nvrtcResult, nvrtcCompileProgram, kRtc, kRtcMissing,
             (nvrtcProgram program, int count, const char* const* options),
             (program, count, options))
KILN_FORWARD(nvrtcResult, nvrtcCreateProgram, kRtc, kRtcMissing,
             (nvrtcProgram * program, const char* source, const char* name, int headerCount,
              const char* const* headers, const char* const* includeNames),
             (program, source, name, headerCount, headers, includeNames))
KILN_FORWARD(nvrtcResult, nvrtcDestroyProgram, kRtc, kRtcMissing, (nvrtcProgram * program),
             (program))
KILN_FORWARD(nvrtcResult, nvrtcGetCUBIN, kRtc, kRtcMissing, (nvrtcProgram program, char* cubin),
             (program, cubin))
KILN_FORWARD(nvrtcResult, nvrtcGetCUBINSize, kRtc, kRtcMissing,
             (nvrtcProgram program, size_t* size), (program, size))
KILN_FORWARD(const char*, nvrtcGetErrorString, kRtc, missingText(kRtc), (nvrtcResult result),
             (result))
KILN_FORWARD(nvrtcResult, nvrtcGetNumSupportedArchs, kRtc, kRtcMissing, (int* count), (count))
KILN_FORWARD(nvrtcResult, nvrtcGetProgramLog, kRtc, kRtcMissing, (nvrtcProgram program, char* log),
             (program, log))
KILN_FORWARD(nvrtcResult, nvrtcGetProgramLogSize, kRtc, kRtcMissing,
             (nvrtcProgram program, size_t* size), (program, size))
KILN_FORWARD(nvrtcResult, nvrtcGetSupportedArchs, kRtc, kRtcMissing, (int* architectures),
             (architectures))
KILN_FORWARD(nvrtcResult, nvrtcVersion, kRtc, kRtcMissing, (int* major, int* minor), (major, minor))

}  // extern "C"
