#include "backends/cuda/libraries.h"

namespace kiln::cuda {

Libraries::~Libraries() {
  if (m_cublasLt) cublasLtDestroy(m_cublasLt);
  if (m_cudnn) cudnnDestroy(m_cudnn);
}

Result<cublasLtHandle_t> Libraries::cublasLt() {
  if (!m_cublasLt) KILN_CUBLAS_CHECK(cublasLtCreate(&m_cublasLt));
  return m_cublasLt;
}

Result<cudnnHandle_t> Libraries::cudnn(cudaStream_t stream) {
  if (!m_cudnn) KILN_CUDNN_CHECK(cudnnCreate(&m_cudnn));
  if (stream != m_cudnnStream || !m_cudnnStream) {
    KILN_CUDNN_CHECK(cudnnSetStream(m_cudnn, stream));
    m_cudnnStream = stream;
  }
  return m_cudnn;
}

}  // namespace kiln::cuda
