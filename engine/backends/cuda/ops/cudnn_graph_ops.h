// cuDNN 9 backend-graph builders beyond the convolution's (cudnn_conv.h): tensors of
// any strides (by-value scalars too), matrix products and reductions, for fused graphs
// such as scaled-dot-product attention (cudnn_attention.cpp). Host code only; every
// cuDNN call returns a Status.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/ops/cudnn_conv.h"

namespace kiln::cuda {

// A finalized tensor of `dims` stored at element `strides` (one per dim; a dim of
// size 1 may take any stride), 16-byte aligned. Virtual tensors exist only inside a
// fused graph; a by-value tensor is a scalar the variant pack passes as a host
// pointer to its value (read when the plan is enqueued).
struct CudnnTensorSpec {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims, strides;
  int64_t uid = 0;
  bool isVirtual = false;
  bool byValue = false;
};
Status makeCudnnStridedTensor(CudnnDescriptor* desc, const CudnnTensorSpec& spec);

// Row-major strides of `dims` (the last dim contiguous).
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims);

// The batched matrix product c = a b with float accumulation: a [..., M, K],
// b [..., K, N], c [..., M, N] (batch dims equal or 1).
Status makeMatmulOp(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                    cudnnBackendDescriptor_t c, CudnnDescriptor* op);

// y = reduce(x) over the dims where y has size 1 (`mode` CUDNN_REDUCE_TENSOR_MAX,
// _ADD, ...), in float.
Status makeReductionOp(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                       cudnnBackendDescriptor_t y, CudnnDescriptor* op);

}  // namespace kiln::cuda
