// The cuDNN backend-API building blocks of the convolution layers (declared in cudnn_conv.h):
// descriptors, data types, tensors, convolution geometry, convolution and pointwise
// operations, operation graphs. Engine configurations and plans: cudnn_plans.cpp.
#include "backends/cuda/ops/cudnn_conv.h"

#include <algorithm>
#include <sstream>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/cudnn_graph_ops.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace kiln::cuda {

CudnnDescriptor::~CudnnDescriptor() {
  if (m_desc) cudnnBackendDestroyDescriptor(m_desc);
}

Status CudnnDescriptor::create(cudnnBackendDescriptorType_t type) {
  KILN_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &m_desc));
  return Status::ok();
}

cudnnDataType_t cudnnTypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return CUDNN_DATA_HALF;
    case DataType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    case DataType::kFloat64:
      return CUDNN_DATA_DOUBLE;
    case DataType::kInt8:
      return CUDNN_DATA_INT8;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

Status makeCudnnTensor(CudnnDescriptor* desc, cudnnDataType_t type,
                       const std::vector<int64_t>& dims, int64_t uid, bool isVirtual,
                       bool channelsLast) {
  CudnnTensorSpec spec{type, dims, rowMajorStrides(dims), uid, isVirtual};
  if (channelsLast && dims.size() == 4)  // [N, C, H, W] stored [N, H, W, C]
    spec.strides = {dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1]};
  return makeCudnnStridedTensor(desc, spec);
}

ConvAttributes readConvAttributes(const Node& node, size_t spatial, const Shape& w) {
  ConvAttributes a;
  a.kernel = node.attrInts("kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  a.strides = node.attrInts("strides", std::vector<int64_t>(spatial, 1));
  a.dilations = node.attrInts("dilations", std::vector<int64_t>(spatial, 1));
  a.pads = node.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  a.outputPadding = node.attrInts("output_padding", std::vector<int64_t>(spatial, 0));
  a.outputShape = node.attrInts("output_shape");
  a.autoPad = node.attrString("auto_pad", "NOTSET");
  a.group = node.attrInt("group", 1);
  return a;
}

Status forwardConvGeometry(const GpuKernelContext& ctx, const DeviceTensor& x,
                           const DeviceTensor& w, ConvGeometry* g) {
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank())
    return ctx.unsupported(ctx.node().opType + " of rank " + std::to_string(x.rank()));
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  ConvAttributes a = readConvAttributes(ctx.node(), spatial, w.shape);
  if (a.group < 1 || x.shape[1] != w.shape[1] * a.group || w.shape[0] % a.group != 0) {
    return ctx.error("channels do not match: X " + shapeToString(x.shape) + ", W " +
                     shapeToString(w.shape) + ", group " + std::to_string(a.group));
  }
  if (a.kernel.size() != spatial || a.strides.size() != spatial || a.dilations.size() != spatial ||
      a.pads.size() != 2 * spatial)
    return ctx.error("kernel_shape, strides, dilations or pads do not match the rank of X");
  g->type = x.type;
  g->tf32 = x.type == DataType::kFloat32 && ctx.options().allowTf32;
  g->x = x.shape;
  g->w = w.shape;
  g->strides = a.strides;
  g->dilations = a.dilations;
  g->y = {x.shape[0], w.shape[0]};
  for (size_t d = 0; d < spatial; ++d) {
    int64_t in = x.shape[2 + d], k = (a.kernel[d] - 1) * a.dilations[d] + 1, s = a.strides[d];
    int64_t begin = a.pads[d], end = a.pads[d + spatial];
    if (a.autoPad == "SAME_UPPER" || a.autoPad == "SAME_LOWER") {
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
      begin = a.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    } else if (a.autoPad == "VALID") {
      begin = end = 0;
    }
    int64_t out = (in + begin + end - k) / s + 1;
    if (out <= 0) return ctx.error("output would be empty along spatial dim " + std::to_string(d));
    g->pre.push_back(begin);
    g->post.push_back(end);
    g->y.push_back(out);
  }
  return Status::ok();
}

std::vector<int64_t> promoteDims(std::vector<int64_t> dims, size_t rank) {
  if (rank == 3 && dims.size() == 3) dims.insert(dims.begin() + 2, 1);
  return dims;
}

ConvGeometry promoteTo2d(ConvGeometry g) {
  if (g.strides.size() != 1) return g;
  g.x = promoteDims(g.x, 3);
  g.w = promoteDims(g.w, 3);
  g.y = promoteDims(g.y, 3);
  g.pre.insert(g.pre.begin(), 0);
  g.post.insert(g.post.begin(), 0);
  g.strides.insert(g.strides.begin(), 1);
  g.dilations.insert(g.dilations.begin(), 1);
  return g;
}

namespace {

Status makeConvolutionDescriptor(const ConvGeometry& g, CudnnDescriptor* conv) {
  KILN_RETURN_IF_ERROR(conv->create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  int64_t spatial = static_cast<int64_t>(g.strides.size());
  // int8 convolutions accumulate in int32 (cuDNN's INT8 engines), the rest in float
  // (double for float64).
  const cudnnDataType_t compute = g.type == DataType::kFloat64 ? CUDNN_DATA_DOUBLE
                                  : g.type == DataType::kInt8  ? CUDNN_DATA_INT32
                                                               : CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
                 &mode);
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial,
                 g.pre.data());
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial,
                 g.post.data());
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial,
                 g.dilations.data());
  KILN_CUDNN_SET(conv->get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial,
                 g.strides.data());
  KILN_CUDNN_CHECK(cudnnBackendFinalize(conv->get()));
  return Status::ok();
}

// alpha = 1, beta = 0 in the compute type's scalar type.
template <class S>
Status setScales(const ConvGeometry& g, cudnnBackendDescriptor_t op,
                 cudnnBackendAttributeType_t t) {
  S alpha = 1, beta = 0;
  if (!g.transpose) {
    KILN_CUDNN_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, t, 1, &alpha);
    KILN_CUDNN_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, t, 1, &beta);
  } else {
    KILN_CUDNN_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, t, 1, &alpha);
    KILN_CUDNN_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, t, 1, &beta);
  }
  return Status::ok();
}

}  // namespace

Status makeConvolutionOp(const ConvGeometry& g, cudnnBackendDescriptor_t x,
                         cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y,
                         CudnnDescriptor* op) {
  CudnnDescriptor conv;
  KILN_RETURN_IF_ERROR(makeConvolutionDescriptor(g, &conv));
  cudnnBackendDescriptor_t cd = conv.get();
  constexpr auto kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  if (!g.transpose) {
    KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, kDesc, 1, &x);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, kDesc, 1, &w);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, kDesc, 1, &y);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, kDesc, 1, &cd);
  } else {
    KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR));
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, kDesc, 1, &x);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, kDesc, 1, &w);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, kDesc, 1, &y);
    KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, kDesc, 1, &cd);
  }
  if (g.type == DataType::kFloat64) {
    KILN_RETURN_IF_ERROR(setScales<double>(g, op->get(), CUDNN_TYPE_DOUBLE));
  } else {
    KILN_RETURN_IF_ERROR(setScales<float>(g, op->get(), CUDNN_TYPE_FLOAT));
  }
  KILN_CUDNN_CHECK(cudnnBackendFinalize(op->get()));
  return Status::ok();
}

Status makePointwiseOp(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                       cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y,
                       CudnnDescriptor* op) {
  CudnnDescriptor pw;
  KILN_RETURN_IF_ERROR(pw.create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
  cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  KILN_CUDNN_SET(pw.get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  KILN_CUDNN_SET(pw.get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
  if (mode == CUDNN_POINTWISE_SWISH_FWD) {
    const double beta = 1.0;  // SiLU
    KILN_CUDNN_SET(pw.get(), CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &beta);
  }
  KILN_CUDNN_CHECK(cudnnBackendFinalize(pw.get()));
  cudnnBackendDescriptor_t pwd = pw.get();
  constexpr auto kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, kDesc, 1, &pwd);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, kDesc, 1, &x);
  if (b) KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, kDesc, 1, &b);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, kDesc, 1, &y);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(op->get()));
  return Status::ok();
}

bool cudnnActivationMode(EpilogueActivation activation, cudnnPointwiseMode_t* mode) {
  switch (activation) {
    case EpilogueActivation::kRelu:
      *mode = CUDNN_POINTWISE_RELU_FWD;
      return true;
    case EpilogueActivation::kSigmoid:
      *mode = CUDNN_POINTWISE_SIGMOID_FWD;
      return true;
    case EpilogueActivation::kTanh:
      *mode = CUDNN_POINTWISE_TANH_FWD;
      return true;
    case EpilogueActivation::kSilu:
      *mode = CUDNN_POINTWISE_SWISH_FWD;
      return true;
    case EpilogueActivation::kGeluErf:
      *mode = CUDNN_POINTWISE_GELU_FWD;
      return true;
    case EpilogueActivation::kGeluTanh:
      *mode = CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
      return true;
    default:
      return false;
  }
}

bool activationNeedsRuntimeFusion(EpilogueActivation activation) {
  cudnnPointwiseMode_t mode;
  return activation != EpilogueActivation::kRelu && cudnnActivationMode(activation, &mode);
}

Status makeOperationGraph(cudnnHandle_t handle, const std::vector<cudnnBackendDescriptor_t>& ops,
                          CudnnDescriptor* graph) {
  KILN_RETURN_IF_ERROR(graph->create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  KILN_CUDNN_SET(graph->get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 ops.size(), ops.data());
  KILN_CUDNN_SET(graph->get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(graph->get()));
  return Status::ok();
}

}  // namespace kiln::cuda
