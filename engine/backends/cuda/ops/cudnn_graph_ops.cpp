#include "backends/cuda/ops/cudnn_graph_ops.h"

namespace kiln::cuda {

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

Status makeCudnnStridedTensor(CudnnDescriptor* desc, const CudnnTensorSpec& spec) {
  if (spec.dims.size() != spec.strides.size())
    return Status(StatusCode::kInternal, "a cuDNN tensor needs one stride per dim");
  KILN_RETURN_IF_ERROR(desc->create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  const int64_t alignment = 16;
  cudnnBackendDescriptor_t d = desc->get();
  KILN_CUDNN_SET(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &spec.type);
  KILN_CUDNN_SET(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, spec.dims.size(),
                 spec.dims.data());
  KILN_CUDNN_SET(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, spec.strides.size(),
                 spec.strides.data());
  KILN_CUDNN_SET(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &spec.uid);
  KILN_CUDNN_SET(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  if (spec.isVirtual)
    KILN_CUDNN_SET(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &spec.isVirtual);
  if (spec.byValue)
    KILN_CUDNN_SET(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &spec.byValue);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(d));
  return Status::ok();
}

Status makeMatmulOp(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                    cudnnBackendDescriptor_t c, CudnnDescriptor* op) {
  CudnnDescriptor matmul;
  KILN_RETURN_IF_ERROR(matmul.create(CUDNN_BACKEND_MATMUL_DESCRIPTOR));
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  KILN_CUDNN_SET(matmul.get(), CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(matmul.get()));
  cudnnBackendDescriptor_t md = matmul.get();
  constexpr auto kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR));
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_MATMUL_ADESC, kDesc, 1, &a);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_MATMUL_BDESC, kDesc, 1, &b);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_MATMUL_CDESC, kDesc, 1, &c);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_MATMUL_DESC, kDesc, 1, &md);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(op->get()));
  return Status::ok();
}

Status makeReductionOp(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                       cudnnBackendDescriptor_t y, CudnnDescriptor* op) {
  CudnnDescriptor reduction;
  KILN_RETURN_IF_ERROR(reduction.create(CUDNN_BACKEND_REDUCTION_DESCRIPTOR));
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  KILN_CUDNN_SET(reduction.get(), CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
                 1, &mode);
  KILN_CUDNN_SET(reduction.get(), CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                 &compute);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(reduction.get()));
  cudnnBackendDescriptor_t rd = reduction.get();
  constexpr auto kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR));
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_REDUCTION_XDESC, kDesc, 1, &x);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_REDUCTION_YDESC, kDesc, 1, &y);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_REDUCTION_DESC, kDesc, 1, &rd);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(op->get()));
  return Status::ok();
}

}  // namespace kiln::cuda
