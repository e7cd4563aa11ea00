#include "backends/cuda/ops/cudnn_attention.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

#include "backends/cuda/ops/cudnn_graph_ops.h"
#include "backends/cuda/ops/fused_attention_impl.h"

namespace kiln::cuda {
namespace {

// Unique ids of the graph's tensors: the bound ones, then the virtual ones.
enum AttentionUid : int64_t {
  kUidQ = 1,
  kUidK = 2,
  kUidV = 3,
  kUidO = 4,
  kUidScale = 5,
  kUidMask = 6,
  kUidScores = 100,  // virtual tensors from here
};

constexpr int64_t kMaxCudnnHeadSize = 256;

// The [B, H, S, D] view of one operand over its strides (the feature stride is 1).
std::vector<int64_t> operandStrides(const AttentionStrides& s) {
  return {s.batch, s.head, s.seq, 1};
}

// The mask as a [B, Hm, Sq, Sk] tensor: batch and query dims broadcast by stride 0 (as
// PyTorch's expand() hands a broadcast bias to cuDNN), heads by a dim of 1.
CudnnTensorSpec maskSpec(const AttentionOperands& a) {
  const FusedAttentionGeometry& g = a.geometry;
  const int64_t heads = g.mask[1] != 0 ? g.heads : 1;
  return {cudnnTypeOf(a.type),
          {g.batch, heads, g.seqQ, g.seqK},
          {g.mask[0], g.mask[1] != 0 ? g.mask[1] : g.seqK, g.mask[2], g.mask[3]},
          kUidMask};
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// "" when the operand's pointer and strides allow the engines' 16-byte accesses.
std::string alignmentUnsupported(const char* name, const void* p, const AttentionStrides& s) {
  if (!aligned16(p)) return std::string(name) + " is not 16-byte aligned";
  for (int64_t stride : {s.batch, s.head, s.seq})
    if (stride % 8 != 0)
      return std::string(name) + "'s strides [" + std::to_string(s.batch) + ", " +
             std::to_string(s.head) + ", " + std::to_string(s.seq) +
             "] are not all multiples of 8 elements";
  return "";
}

// The graph's tensors, kept alive until the graph is finalized.
struct AttentionTensors {
  CudnnDescriptor q, k, v, o, scale, mask;
  std::vector<CudnnDescriptor> virtuals;
  int64_t nextUid = kUidScores;

  // A new float (or `type`) virtual tensor of `dims`, row-major.
  Result<cudnnBackendDescriptor_t> makeVirtual(const std::vector<int64_t>& dims,
                                               cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    virtuals.emplace_back();
    KILN_RETURN_IF_ERROR(makeCudnnStridedTensor(
        &virtuals.back(), {type, dims, rowMajorStrides(dims), nextUid++, /*isVirtual=*/true}));
    return virtuals.back().get();
  }
};

Status makeBoundTensors(const AttentionOperands& a, AttentionTensors* t) {
  const FusedAttentionGeometry& g = a.geometry;
  const cudnnDataType_t io = cudnnTypeOf(a.type);
  const std::vector<int64_t> kStrides = {g.k.batch, g.k.head, 1, g.k.seq};  // K^T
  KILN_RETURN_IF_ERROR(makeCudnnStridedTensor(
      &t->q, {io, {g.batch, g.heads, g.seqQ, g.headDim}, operandStrides(g.q), kUidQ}));
  KILN_RETURN_IF_ERROR(
      makeCudnnStridedTensor(&t->k, {io, {g.batch, g.heads, g.headDim, g.seqK}, kStrides, kUidK}));
  KILN_RETURN_IF_ERROR(makeCudnnStridedTensor(
      &t->v, {io, {g.batch, g.heads, g.seqK, g.valueDim}, operandStrides(g.v), kUidV}));
  KILN_RETURN_IF_ERROR(makeCudnnStridedTensor(
      &t->o, {io, {g.batch, g.heads, g.seqQ, g.valueDim}, operandStrides(g.y), kUidO}));
  KILN_RETURN_IF_ERROR(makeCudnnStridedTensor(
      &t->scale, {CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, kUidScale, false, true}));
  if (a.mask) KILN_RETURN_IF_ERROR(makeCudnnStridedTensor(&t->mask, maskSpec(a)));
  return Status::ok();
}

// Appends op(x[, b]) -> a new virtual tensor of `dims` to `ops`; returns that tensor.
Result<cudnnBackendDescriptor_t> pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                           cudnnBackendDescriptor_t b,
                                           const std::vector<int64_t>& dims, AttentionTensors* t,
                                           std::vector<CudnnDescriptor>* ops) {
  KILN_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t y, t->makeVirtual(dims));
  ops->emplace_back();
  KILN_RETURN_IF_ERROR(makePointwiseOp(mode, x, b, y, &ops->back()));
  return y;
}

Result<cudnnBackendDescriptor_t> reduce(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                                        const std::vector<int64_t>& dims, AttentionTensors* t,
                                        std::vector<CudnnDescriptor>* ops) {
  KILN_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t y, t->makeVirtual(dims));
  ops->emplace_back();
  KILN_RETURN_IF_ERROR(makeReductionOp(mode, x, y, &ops->back()));
  return y;
}

// The softmax over the keys of `scores` as the frontend's composite lowering: max,
// subtract, exp, sum, log-sum statistics (unused), divide into P of type `pType`.
Status appendSoftmax(cudnnBackendDescriptor_t scores, const std::vector<int64_t>& dims,
                     cudnnDataType_t pType, cudnnBackendDescriptor_t* p, AttentionTensors* t,
                     std::vector<CudnnDescriptor>* ops) {
  const std::vector<int64_t> rowDims = {dims[0], dims[1], dims[2], 1};
  KILN_ASSIGN_OR_RETURN(auto rowMax, reduce(CUDNN_REDUCE_TENSOR_MAX, scores, rowDims, t, ops));
  KILN_ASSIGN_OR_RETURN(auto shifted, pointwise(CUDNN_POINTWISE_SUB, scores, rowMax, dims, t, ops));
  KILN_ASSIGN_OR_RETURN(auto exps, pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, dims, t, ops));
  KILN_ASSIGN_OR_RETURN(auto rowSum, reduce(CUDNN_REDUCE_TENSOR_ADD, exps, rowDims, t, ops));
  KILN_ASSIGN_OR_RETURN(auto logSum,
                        pointwise(CUDNN_POINTWISE_LOG, rowSum, nullptr, rowDims, t, ops));
  KILN_ASSIGN_OR_RETURN(auto stats,
                        pointwise(CUDNN_POINTWISE_ADD, rowMax, logSum, rowDims, t, ops));
  (void)stats;
  KILN_ASSIGN_OR_RETURN(*p, t->makeVirtual(dims, pType));
  ops->emplace_back();
  return makePointwiseOp(CUDNN_POINTWISE_DIV, exps, rowSum, *p, &ops->back());
}

}  // namespace

std::string cudnnAttentionUnsupported(const AttentionOperands& a) {
  const FusedAttentionGeometry& g = a.geometry;
  if (a.type != DataType::kFloat16 && a.type != DataType::kBFloat16)
    return std::string("cuDNN's fused attention takes float16 and bfloat16, not ") +
           dataTypeName(a.type);
  for (int64_t d : {g.headDim, g.valueDim})
    if (d % 8 != 0 || d > kMaxCudnnHeadSize)
      return "head size " + std::to_string(d) + " (cuDNN takes multiples of 8 up to 256)";
  for (const std::string& why :
       {alignmentUnsupported("Q", a.q, g.q), alignmentUnsupported("K", a.k, g.k),
        alignmentUnsupported("V", a.v, g.v), alignmentUnsupported("Y", a.y, g.y)})
    if (!why.empty()) return why;
  if (!a.mask) return "";
  if (g.maskPeriod > 0) return "a per-window mask (mask_batch_period) has no cuDNN stride form";
  if (g.mask[3] != 1) return "a mask broadcast over the keys";
  if (!aligned16(a.mask)) return "the mask is not 16-byte aligned";
  // cuDNN's engines write 0 for a row whose every key is masked with -inf (seen on an
  // H200, cuDNN 9.x: test_cuda_attention_cudnn's FullyMaskedRowGivesZero), the contract
  // of nan_to_zero = 1; without it runCudnnAttention sets those rows to NaN afterwards.
  return "";
}

std::string cudnnAttentionGraphText(const AttentionOperands& a) {
  const FusedAttentionGeometry& g = a.geometry;
  std::ostringstream text;
  text << "fused attention " << dataTypeName(a.type) << " B" << g.batch << " H" << g.heads << " Sq"
       << g.seqQ << " Sk" << g.seqK << " D" << g.headDim << " Dv" << g.valueDim;
  for (const AttentionStrides* s : {&g.q, &g.k, &g.v, &g.y})
    text << " [" << s->batch << "," << s->head << "," << s->seq << "]";
  if (a.mask) {
    const CudnnTensorSpec m = maskSpec(a);
    text << " mask [" << m.dims[1] << "] [" << m.strides[0] << "," << m.strides[1] << ","
         << m.strides[2] << "," << m.strides[3] << "]";
  }
  return text.str();
}

Status buildCudnnAttentionGraph(cudnnHandle_t handle, const AttentionOperands& a,
                                CudnnDescriptor* graph) {
  const FusedAttentionGeometry& g = a.geometry;
  AttentionTensors t;
  KILN_RETURN_IF_ERROR(makeBoundTensors(a, &t));
  std::vector<CudnnDescriptor> ops;
  const std::vector<int64_t> scoreDims = {g.batch, g.heads, g.seqQ, g.seqK};
  KILN_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t scores, t.makeVirtual(scoreDims));
  ops.emplace_back();
  KILN_RETURN_IF_ERROR(makeMatmulOp(t.q.get(), t.k.get(), scores, &ops.back()));
  KILN_ASSIGN_OR_RETURN(scores,
                        pointwise(CUDNN_POINTWISE_MUL, scores, t.scale.get(), scoreDims, &t, &ops));
  if (a.mask) {
    KILN_ASSIGN_OR_RETURN(
        scores, pointwise(CUDNN_POINTWISE_ADD, scores, t.mask.get(), scoreDims, &t, &ops));
  }
  cudnnBackendDescriptor_t p = nullptr;
  KILN_RETURN_IF_ERROR(appendSoftmax(scores, scoreDims, cudnnTypeOf(a.type), &p, &t, &ops));
  ops.emplace_back();
  KILN_RETURN_IF_ERROR(makeMatmulOp(p, t.v.get(), t.o.get(), &ops.back()));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const CudnnDescriptor& op : ops) raw.push_back(op.get());
  return makeOperationGraph(handle, raw, graph);
}

PlanFilter cudnnAttentionPlanFilter(const GpuKernelContext& ctx) {
  PlanFilter filter;
  filter.wanted = 3;
  filter.workspaceLimit = ctx.options().workspaceLimitBytes;
  filter.runtimeCompilation = true;
  filter.runtimeCompiledLimit = 1;
  filter.fallbackList = false;
  return filter;
}

Status runCudnnAttention(GpuKernelContext& ctx, cudnnHandle_t handle, const CudnnPlan& plan,
                         const AttentionOperands& a) {
  float scale = a.geometry.scale;  // by value: read while the plan is enqueued
  CudnnBindings bindings = {{kUidQ, const_cast<void*>(a.q)},
                            {kUidK, const_cast<void*>(a.k)},
                            {kUidV, const_cast<void*>(a.v)},
                            {kUidO, a.y},
                            {kUidScale, &scale}};
  if (a.mask) bindings.push_back({kUidMask, const_cast<void*>(a.mask)});
  KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, plan.workspace));
  KILN_RETURN_IF_ERROR(executeCudnnPlan(handle, plan, bindings, workspace));
  if (!a.mask || a.geometry.nanToZero) return Status::ok();
  // The unfused Softmax's NaN where cuDNN wrote 0: a row whose every key is -inf.
  const FusedAttentionGeometry& g = a.geometry;
  flash::FullyMaskedRowsLaunch fix;
  fix.type = a.type;
  fix.mask = a.mask;
  fix.y = a.y;
  fix.batch = g.batch;
  fix.heads = g.heads;
  fix.seqQ = g.seqQ;
  fix.seqK = g.seqK;
  fix.valueDim = g.valueDim;
  std::copy(g.mask, g.mask + 4, fix.maskStrides);
  fix.ys = g.y;
  return flash::launchNanForFullyMaskedRows(fix, ctx.stream());
}

}  // namespace kiln::cuda
