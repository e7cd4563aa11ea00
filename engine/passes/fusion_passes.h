// The passes, one factory each (one file each); pipeline.cpp lists them in order.
#pragma once

#include <memory>

#include "passes/pass.h"

namespace kiln::passes {

std::unique_ptr<Pass> makeFoldBatchNorm();
// fold_batch_norm's arithmetic: the weights `w` and bias `b` of Conv/ConvTranspose `conv`
// with the inference-mode BatchNormalization `bn` that reads its output folded in; false
// when the pair does not qualify (non-constant or non-float32 parameters, training mode,
// a group that does not divide W). The Q/DQ export (onnx/qdq_export.cpp) folds before it
// quantizes weights, as an implicit INT8 build does.
bool foldBatchNormWeights(const Node& conv, const Node& bn, const GraphIndex& index, Tensor* w,
                          Tensor* b);
std::unique_ptr<Pass> makeFoldMatMulBatchNorm();
std::unique_ptr<Pass> makeFuseConvBiasActivation();
std::unique_ptr<Pass> makeFuseMatMulBiasActivation();
std::unique_ptr<Pass> makeFuseSoftmaxScaleMask();
std::unique_ptr<Pass> makeFuseAttention();
std::unique_ptr<Pass> makeFoldAttentionViews();
std::unique_ptr<Pass> makeFoldSequenceFirstTransposes();
std::unique_ptr<Pass> makeFoldSplitViews();
std::unique_ptr<Pass> makeFuseAddLayerNorm();
// Add(FusedMatMul(A, W, b), Z) -> FusedMatMul(A, W, b, Z): fuse_matmul_residual.cpp.
std::unique_ptr<Pass> makeFuseMatMulResidual();
// The same where a norm and the next residual read the sum (pre-norm blocks), before
// fuse_add_layer_norm: fuse_matmul_residual.cpp.
std::unique_ptr<Pass> makeFusePrenormResidual();
std::unique_ptr<Pass> makeRemoveDeadNodes();
std::unique_ptr<Pass> makeFoldConstants();
std::unique_ptr<Pass> makeInlineConstantIf();
std::unique_ptr<Pass> makeChannelsLastLayout();
std::unique_ptr<Pass> makeFoldQdq();
std::unique_ptr<Pass> makeFusePointwiseChain();
std::unique_ptr<Pass> makeRemoveNoOpNodes();
std::unique_ptr<Pass> makeFoldExpandIntoBroadcast();
std::unique_ptr<Pass> makeSinkBroadcastCopies();
std::unique_ptr<Pass> makeLiftFlattenedHeadAttention();
std::unique_ptr<Pass> makeLiftTransposedAttention();
std::unique_ptr<Pass> makeMaskedFillAsAdditiveMask();
std::unique_ptr<Pass> makeFoldTransposesAroundLinear();
// MatMul(Add(X, c), W) -> MatMul(X, W) + c W: fold_shift_into_matmul.cpp.
std::unique_ptr<Pass> makeFoldShiftIntoMatMul();
// Add(X, C) -> [Transpose]* -> Softmax, C constant along its axes -> the Add removed:
// drop_softmax_invariant_add.cpp.
std::unique_ptr<Pass> makeDropSoftmaxInvariantAdd();
std::unique_ptr<Pass> makeMergeAdditiveMasks();
std::unique_ptr<Pass> makePermuteTiledConstant();
std::unique_ptr<Pass> makeRecurrentBatchFirst();
std::unique_ptr<Pass> makeNarrowGatheredMatMul();
// Two-input Einsum -> Transpose / Reshape / MatMul: einsum_as_matmul.cpp.
std::unique_ptr<Pass> makeEinsumAsMatMul();
// ScatterND of a box's meshgrid indices -> its updates, or Concats of slices around them:
// scatter_box_as_concat.cpp.
std::unique_ptr<Pass> makeScatterBoxAsConcat();
// Split along an axis with only dims of 1 before it -> a StridedCopy a part; a Split of a
// Transpose whose read parts hold <= 3/4 of it -> a StridedCopy of the Transpose's input a
// part: split_parts_as_views.cpp.
std::unique_ptr<Pass> makeSplitPartsAsViews();
// Mul(MatMul(A, B), c) with c a per-row scale -> MatMul(Mul(A, c), B):
// row_scale_before_product.cpp.
std::unique_ptr<Pass> makeRowScaleBeforeProduct();
// Concat(Slice(X, s:d), Slice(X, 0:s)) -> Roll(X), Rolls merged: fold_slices_into_roll.cpp.
std::unique_ptr<Pass> makeFoldSlicesIntoRoll();
// Transpose(StridedCopy) -> one StridedCopy: fold_transpose_into_strided_copy.cpp.
std::unique_ptr<Pass> makeFoldTransposeIntoStridedCopy();
// Reshape(Reshape(S) + biases) -> S + one mask: scores_bias_as_mask.cpp.
std::unique_ptr<Pass> makeScoresBiasAsMask();
std::unique_ptr<Pass> makeFuseMaskedFillSoftmax();
std::unique_ptr<Pass> makeReduceAsGlobalPool();
std::unique_ptr<Pass> makeFoldViewChains();
std::unique_ptr<Pass> makeFoldCastIntoQuantize();
std::unique_ptr<Pass> makeFoldCastIntoInt8Output();
std::unique_ptr<Pass> makeMergeDuplicateNodes();
std::unique_ptr<Pass> makeFoldReshapeTranspose();
std::unique_ptr<Pass> makeMergeTransposes();
// The same rewrite under its own name, run after channels_last_layout.
std::unique_ptr<Pass> makeMergeLayoutTransposes();
std::unique_ptr<Pass> makeSinkTransposes();
std::unique_ptr<Pass> makeMergeReshapes();
std::unique_ptr<Pass> makeFoldPadIntoConvPool();
std::unique_ptr<Pass> makeFuseGelu();
std::unique_ptr<Pass> makeSinkReshapeBelowActivation();
// ReduceSum over a stacked axis -> a sum of the branches: sum_stacked_branches.cpp.
std::unique_ptr<Pass> makeSumStackedBranches();
// Norm(Reshape(Add, s)) with the last dim kept -> Reshape(Norm(Add), s):
// sink_reshape_below_norm.cpp.
std::unique_ptr<Pass> makeSinkReshapeBelowNorm();
std::unique_ptr<Pass> makeFoldScaleIntoMatMul();
std::unique_ptr<Pass> makePatchConvAsMatMul();
std::unique_ptr<Pass> makeMergeParallelMatMuls();
std::unique_ptr<Pass> makeFuseLayerNorm();
std::unique_ptr<Pass> makeFuseRmsNorm();
std::unique_ptr<Pass> makeFuseConvMaxPool();
std::unique_ptr<Pass> makeBatchNormAsScaleShift();

// The chain fuse_softmax_scale_mask rewrites, matched at the Softmax node `at`:
// Softmax(last axis) of X * c [+ M] or X + M, every intermediate read by the next
// node alone. Fills its nodes (unsorted), X, M ("" when none) and c; false when
// node `at` does not start such a chain. fuse_attention reuses it.
struct SoftmaxChain {
  std::vector<int> nodes;
  std::string x, mask;
  double scale = 1.0;
};
bool matchSoftmaxChain(const Graph& graph, const GraphIndex& index, int at, SoftmaxChain* chain);

}  // namespace kiln::passes
