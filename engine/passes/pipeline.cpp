// The pass pipeline: one ordered list. Order matters where one pass creates what
// the next matches; each entry says why it stands where it does.
#include <algorithm>
#include <set>

#include "passes/fusion_passes.h"

namespace kiln {
namespace {

std::vector<std::unique_ptr<passes::Pass>> pipeline() {
  std::vector<std::unique_ptr<passes::Pass>> list;
  // Constants first: every later pass then sees a weight computed from weights (a
  // Transpose or Cast of an initializer, a fixed-shape model's shape arithmetic) as
  // the initializer it is, e.g. the [K, N] matrix the GEMM fusion expects.
  list.push_back(passes::makeFoldConstants());
  // An If whose condition just folded (a fixed shape's test) is the branch it takes: right
  // after the fold that makes the condition constant; it folds the inlined branch again.
  list.push_back(passes::makeInlineConstantIf());
  // No-op nodes out first: an Identity, an inference Dropout or a same-type Cast that
  // an exporter left between two ops of a pattern hides it from every pass below.
  list.push_back(passes::makeRemoveNoOpNodes());
  // A broadcast that only copies (an And with an all-true constant: transformers 5's SDPA
  // mask at a fixed shape; an Expand) moves below the elementwise ops reading it, so the
  // broadcast fold below drops it where a later reader broadcasts anyway: right after the
  // constant fold, which makes the identity constant, before merge_duplicate_nodes (each
  // layer's copy of the mask's Where moves alike, then merges).
  list.push_back(passes::makeSinkBroadcastCopies());
  // An Expand read only by ops that broadcast anyway (F.normalize's divisor) and a mean
  // over every spatial axis (timm's squeeze-excitation pool) take the forms the fusions
  // and the channels-last region know: no copy, a global pool.
  list.push_back(passes::makeFoldExpandIntoBroadcast());
  // A sum over the axis that stacked its branches (selective-kernel convolutions) as the sum of
  // the branches, each times its weight: before reduce_as_global_pool, which then sees the
  // attention's pool on a 4-D sum, and before the channels-last region, which holds no 5-D stack.
  list.push_back(passes::makeSumStackedBranches());
  list.push_back(passes::makeReduceAsGlobalPool());
  // A Transpose of a tiled weight (DeBERTa's position keys, tiled to every batch) as the
  // tile of the transposed weight: after the constant fold, which makes the weight a
  // constant; one copy at run time instead of two.
  list.push_back(passes::makePermuteTiledConstant());
  // A GEMM read only by a gather of its columns at constant indices (DeBERTa's relative
  // positions) computes the columns they reach: after the broadcast fold, which turns the
  // gather of expanded indices into one of constant ones, and the tile permute, which leaves
  // the GEMM's right side a Tile of a constant; before the GEMM fusion.
  list.push_back(passes::makeNarrowGatheredMatMul());
  // A two-input Einsum (MViTv2's relative positions) as the Transposes, Reshapes and batched
  // MatMul it is, which the GPU runs as a GEMM: after the constant fold (a table gathered at
  // constant positions is then a constant), before the transpose and reshape merges, which
  // join its copies with the model's own, and the GEMM fusion, which may give it a bias.
  list.push_back(passes::makeEinsumAsMatMul());
  // A ScatterND writing a box in index order (a slice assignment's export: MViTv2's relative
  // positions) as its updates, or Concats of slices around them: after the constant fold, which
  // turns the meshgrids' Ranges and Expand shapes into constants; before the fusions, which
  // then see the scores flow from the MatMul to the softmax.
  list.push_back(passes::makeScatterBoxAsConcat());
  // A batch_first recurrent layer's export (the layout-0 op between Transposes) as the layout-1
  // op: before the transpose and reshape merges, which then meet its output Transposes with
  // the model's own permutes back to batch-major.
  list.push_back(passes::makeRecurrentBatchFirst());
  // A strongly typed export's Cast to float32 in front of a QuantizeLinear (opset < 19 Q
  // takes no float16) goes next, for the same reason: the Cast sits between a layer and
  // the Q that fold_qdq and fuse_conv_max_pool fold into it.
  list.push_back(passes::makeFoldCastIntoQuantize());
  // Common subexpressions once (the per-layer copies of the attention mask's Where):
  // after the constant fold, which leaves only values computed from inputs, and before
  // every fusion, whose patterns then read one value where the exporter wrote several.
  list.push_back(passes::makeMergeDuplicateNodes());
  // Transpose and reshape chains next, for the same reason (a Transpose pair may
  // compose to nothing); fuse_attention accepts the merged key transpose. A transpose
  // spelled Reshape -> Transpose -> Reshape (the dynamo exporter's K^T) first becomes the
  // Transpose it is, which merge_transposes then joins with the head transpose before it.
  list.push_back(passes::makeFoldReshapeTranspose());
  list.push_back(passes::makeMergeTransposes());
  list.push_back(passes::makeMergeReshapes());
  // An explicit Pad into the Conv or pooling after it: before fold_batch_norm and
  // fuse_conv_bias_activation, which match the Conv and would otherwise see a Pad
  // in front of it (and FusedConv is not matched here).
  list.push_back(passes::makeFoldPadIntoConvPool());
  // BatchNormalization into the Conv before it: weight algebra only, and it must
  // come before any pass that would fuse the Conv with what follows the BN.
  list.push_back(passes::makeFoldBatchNorm());
  // A patch embedding (a Conv whose stride is its kernel, read into tokens) as the GEMM it
  // is: after the BN fold (a BN after it is then in its weights), before the conv fusion,
  // which would take the Conv and its bias, and the GEMM fusion, which gives the new
  // MatMul its bias.
  list.push_back(passes::makePatchConvAsMatMul());
  // The same algebra for a BN over a MatMul's output features (through the Flatten and
  // Reshape of timm's LinearNorm): before fuse_matmul_bias_activation takes the Add.
  list.push_back(passes::makeFoldMatMulBatchNorm());
  // A scalar scale after a GEMM (attention's query scaling) into its weights and bias.
  list.push_back(passes::makeFoldScaleIntoMatMul());
  // A constant row added to a GEMM's input (ResMLP's affine shift before a channel Linear) into
  // the GEMM's bias: before the GEMM fusion, which then takes that bias into the epilogue.
  list.push_back(passes::makeFoldShiftIntoMatMul());
  // Q, K and V projections of one input as one GEMM and a Split: after the scale fold
  // (Whisper's query scale is then in its weights, not a Mul between the GEMM and the head
  // split), before the GEMM fusion, which gives the merged GEMM its bias, and before
  // fuse_attention and fold_attention_views (fold_split_views where no attention fused), which
  // turn the Split into strided reads.
  list.push_back(passes::makeMergeParallelMatMuls());
  // Bias, residual Add and activation into the Conv: after the BN fold, which turns
  // Conv -> BN -> Relu into Conv(bias) -> Relu; before fuse_add_layer_norm, so an Add
  // right after a Conv rides the convolution's epilogue instead of a row kernel.
  list.push_back(passes::makeFuseConvBiasActivation());
  // The exporters' GELU chains (erf and tanh forms, every association) as one Gelu
  // node: before the GEMM fusion, which then takes MatMul + bias + Gelu of either
  // form into one FusedMatMul (the chains after a LayerNorm, a residual or a bias
  // that is no constant stay Gelu nodes). A chain starts at its input x, so it
  // never takes the bias Add that writes x.
  list.push_back(passes::makeFuseGelu());
  // A Linear over an inner axis between a Transpose and its inverse (gMLP's gating unit,
  // MLP-Mixer's token mixing, CaiT's talking heads) as MatMul(W^T, X) in place: after
  // fuse_gelu (the activation between Mixer's two Linears is one node), before the GEMM
  // fusion, which would take each MatMul with its bias in the transposed layout.
  // A constant that is the same along a softmax's axes, added to its input (CaiT's head-mixing
  // bias), removed: before fold_transposes_around_linear and the GEMM fusion, which would keep it
  // as a column bias Add or in the GEMM's epilogue.
  list.push_back(passes::makeDropSoftmaxInvariantAdd());
  list.push_back(passes::makeFoldTransposesAroundLinear());
  // A GEMM's output reshaped before its activation (GPT-2's Conv1D: addmm on rows,
  // view, GELU): the activation moves above the Reshape, onto the GEMM's output.
  list.push_back(passes::makeSinkReshapeBelowActivation());
  // Bias and activation into the GEMM (MatMul + bias, Gemm): before the other
  // pointwise fusions, which would otherwise swallow the bias Add and the activation.
  list.push_back(passes::makeFuseMatMulBiasActivation());
  // Attention over [B*H, S, D] with a [B, H, S, Sk] softmax (BLOOM's baddbmm and bmm) in the
  // [B, H, S, D] form: before the mask passes and the attention fusion, which then take it.
  list.push_back(passes::makeLiftFlattenedHeadAttention());
  // Attention on transposed heads (Q^T K, then V P^T: LeViT's conv mode) in the [B, H, S, D]
  // form: before the softmax and attention fusions, which then take it.
  list.push_back(passes::makeLiftTransposedAttention());
  // A per-head scale between Q K^T and the softmax (SwinV2's cosine attention's logit scale)
  // onto Q, so the scores' MatMul feeds the softmax as the softmax and attention fusions
  // match it: after the GEMM fusion (the products it moves past have no constant weights).
  list.push_back(passes::makeRowScaleBeforeProduct());
  // masked_fill(finfo.min) of attention scores as the additive mask it equals (GPT-Neo's
  // causal where): before merge_additive_masks, which then adds it to the padding mask, and
  // before fuse_masked_fill_softmax, which would take a Where right before the softmax.
  list.push_back(passes::makeMaskedFillAsAdditiveMask());
  // Biases added to a view of the scores with more dims (MViTv2's decomposed relative
  // positions) as one additive mask on the scores: after the GEMM fusion (the Adds are then no
  // bias candidates), before merge_additive_masks and the softmax and attention fusions,
  // which then see S + M.
  list.push_back(passes::makeScoresBiasAsMask());
  // Two additive masks on attention scores (MPNet's position bias, then the padding mask) as
  // one: after the GEMM fusion, whose bias Adds are then no candidates; before the softmax and
  // attention fusions, which take one mask.
  list.push_back(passes::makeMergeAdditiveMasks());
  // A softmax of masked_fill scores (Where before it) as one row kernel whose mask replaces
  // the masked scores: before fuse_softmax_scale_mask, which would otherwise see a Where.
  list.push_back(passes::makeFuseMaskedFillSoftmax());
  // Attention's scale, mask add and softmax into one row kernel: after the GEMM
  // fusion, which must keep a bias Add that a mask match could otherwise take.
  list.push_back(passes::makeFuseSoftmaxScaleMask());
  // The whole attention block (both batched MatMuls, the softmax, the head transposes
  // and the head merge) into one flash-style layer: after fuse_softmax_scale_mask, so
  // its six scale/mask forms arrive as one ScaledMaskedSoftmax node (the raw forms
  // still match when that pass is disabled); after the GEMM fusion, which leaves the
  // Q/K/V projections as FusedMatMul layers feeding the head split; before
  // remove_dead_nodes, which drops the head merge's shape computation it leaves unread.
  list.push_back(passes::makeFuseAttention());
  // The head split's copies (timm's packed-QKV Transpose and Split, nn.MultiheadAttention's
  // Gathers and head Transposes) into the FusedAttention's strided reads: right after
  // fuse_attention, which makes the node; before remove_dead_nodes.
  list.push_back(passes::makeFoldAttentionViews());
  // nn.MultiheadAttention(batch_first=True)'s copies to and from sequence-first order: its
  // in-projection GEMM reads the block's input as it is and the attention's strided views
  // absorb the order (they exist only after fold_attention_views); the attention writes
  // batch-first and the out-projection's rows follow. Before remove_dead_nodes, which drops
  // the shape computation of the Reshape whose target it replaces.
  list.push_back(passes::makeFoldSequenceFirstTransposes());
  // The head split after a Split no attention took (the merged Q/K/V GEMM's Split, then each
  // head's Reshape and Transpose into DeBERTa's disentangled attention) as one strided copy of
  // the GEMM's output per head: after merge_parallel_matmuls, which makes the Split, and after
  // fuse_attention and fold_attention_views, so a fused attention keeps reading its operands
  // through strides instead of through a copy; before remove_dead_nodes.
  list.push_back(passes::makeFoldSplitViews());
  // The Splits left that cut contiguous runs (unbind(0) of a packed Q/K/V whose parts no
  // attention reads through strides) as a StridedCopy a part, which the CUDA runtime makes a
  // view: after fold_split_views, which folds the parts read through copying view chains.
  list.push_back(passes::makeSplitPartsAsViews());
  // An export's torch.roll (Slice, Slice, Concat along one axis; Swin's cyclic window shift) as
  // one Roll, the rolls of consecutive axes merged: each moves its input once.
  list.push_back(passes::makeFoldSlicesIntoRoll());
  // Decomposed LayerNormalization, then RMSNormalization: LayerNorm first, since its
  // tail (d / sqrt(mean(d^2) + eps) of d = x - mean(x)) is an RMSNorm of d; both
  // before fuse_add_layer_norm, which takes a residual Add into the LayerNormalization.
  // Their Adds and Muls never start at a MatMul, so the GEMM fusion takes none of them.
  list.push_back(passes::makeFuseLayerNorm());
  list.push_back(passes::makeFuseRmsNorm());
  // A norm over a residual sum's row view (OPT's pre-norm blocks: the stream viewed [B * S,
  // H] before the LayerNorm) moves above the Reshape: after the norm fusions, which make the
  // norms; before fuse_add_layer_norm, which then sees the Add right before the norm.
  list.push_back(passes::makeSinkReshapeBelowNorm());
  // A pre-norm block's residual Add after a GEMM into the GEMM's epilogue (the sum read by
  // the norm and the next residual): before fuse_add_layer_norm, which would take it.
  list.push_back(passes::makeFusePrenormResidual());
  // Residual add + LayerNormalization: after the GEMM fusion for the same reason
  // (LayerNormalization(MatMul + bias) is a GEMM epilogue, not a residual add), so
  // the Add it takes is the one between two layers.
  list.push_back(passes::makeFuseAddLayerNorm());
  // Q/DQ pairs into INT8 layers (explicit quantization, and the pairs an implicit
  // INT8 build inserts from its calibration cache): after every fusion, so a fused
  // conv or GEMM folds with its epilogue as one INT8 layer, the Q after its
  // activation becomes its INT8 output and a residual Add's DQ input (fused as the
  // conv's Z, the DQ no obstacle) its int8 Z; before remove_dead_nodes, which drops the
  // Q/DQ nodes and float weights the folds leave without readers.
  list.push_back(passes::makeFoldQdq());
  // A Cast to float16 after an INT8 layer's float output (strongly typed exports) into the
  // layer's output type: right after fold_qdq, which makes the layers, before the pointwise
  // grouping, which would take the Cast into a chain.
  list.push_back(passes::makeFoldCastIntoInt8Output());
  // A residual Add after a GEMM into the GEMM's epilogue: after fuse_add_layer_norm, which
  // keeps the Adds a norm reads, and after fold_qdq, whose INT8 patterns see the export's
  // GEMM and Add; before the pointwise grouping, which would take the Add into a chain.
  list.push_back(passes::makeFuseMatMulResidual());
  // A BatchNormalization no convolution or GEMM took, as the Mul and Add it is: after
  // every fusion that matches BN (the folds above) or could misread its Mul and Add as
  // a bias or a scale, right before the pointwise grouping that joins them with the
  // activation after them (level 2, as that grouping).
  list.push_back(passes::makeBatchNormAsScaleShift());
  // Whatever elementwise ops remain, grouped into generated kernels (PointwiseChain,
  // level 2+): after every specific fusion, which must keep priority (a bias Add and
  // an activation ride a GEMM's or a convolution's epilogue for free, and a residual
  // Add belongs to AddLayerNorm), and after fold_qdq, whose patterns would otherwise
  // lose their float ops; before remove_dead_nodes, which drops the Constant nodes
  // whose scalars the chains inline.
  list.push_back(passes::makeFusePointwiseChain());
  // Last: fusions leave the constants of their patterns without readers.
  list.push_back(passes::makeRemoveDeadNodes());
  // A stem's FusedConv -> MaxPool -> QuantizeLinear as one layer: after fold_qdq, which
  // leaves the Q after the stem's MaxPool (the float stem does not fold, so rule 4 does
  // not move the Q before the pool) and turns the DQ -> Conv after it into the
  // QuantizedConv that reads the Q's int8 output; right before channels_last_layout,
  // which then gives the layer an NHWC output that starts the INT8 region without a
  // reformat. Only for a half-precision channels-last build (runPasses' halfPrecision
  // and channelsLast) whose layout pass runs: its one kernel is a CUDA fp16/bf16
  // tensor-core kernel that writes channels-last.
  list.push_back(passes::makeFuseConvMaxPool());
  // After every fusion, which all match channels-first patterns; only when the
  // backend asks for it (runPasses' channelsLast), so a CPU build never sees it.
  list.push_back(passes::makeChannelsLastLayout());
  // Elementwise nodes between the model's permute and the layout's reformat back (ConvNeXt's
  // layer scale and residual Add) compute in the reformat's layout, and both permutes go:
  // after the layout pass, which makes the reformats; before merge_layout_transposes, which
  // then joins what is left.
  list.push_back(passes::makeSinkTransposes());
  // The layout's reformats against the model's own permutes (a reformat to NCHW read by
  // a Transpose back to NHWC is no copy at all): after the layout pass, which makes them.
  list.push_back(passes::makeMergeLayoutTransposes());
  // A reformat to NHWC after the model's own tokens-to-image Transpose and Reshape (and
  // back) moves nothing at all: one Reshape; a channel shuffle between two reformats moves
  // each element once: one Transpose.
  list.push_back(passes::makeFoldViewChains());
  // A Transpose left reading a StridedCopy (a reformat to NHWC after MViTv2's q / k / v
  // extraction into NCHW) is that copy with its dims permuted: last, after every pass that
  // makes, merges or drops the reformats.
  list.push_back(passes::makeFoldTransposeIntoStridedCopy());
  return list;
}

}  // namespace

std::vector<PassInfo> listPasses() {
  std::vector<PassInfo> out;
  for (const auto& pass : pipeline()) out.push_back(pass->info());
  return out;
}

Status runPasses(Network& network, int optimizationLevel, const std::vector<std::string>& disabled,
                 std::vector<PassApplication>* applied, bool channelsLast, bool halfPrecision,
                 const FusionTarget* target) {
  auto runs = [&](const PassInfo& info) {
    return optimizationLevel >= info.minimumLevel &&
           std::find(disabled.begin(), disabled.end(), info.name) == disabled.end() &&
           (info.name != kChannelsLastPass || channelsLast);
  };
  std::set<std::string> known;
  std::string names;
  bool layoutRuns = false;
  for (const PassInfo& info : listPasses()) {
    known.insert(info.name);
    names += (names.empty() ? "" : ", ") + info.name;
    if (info.name == kChannelsLastPass) layoutRuns = runs(info);
  }
  for (const std::string& name : disabled) {
    if (!known.count(name))
      return invalidArgument("unknown pass '" + name + "' (passes: " + names + ")");
  }
  for (const auto& pass : pipeline()) {
    const PassInfo info = pass->info();
    if (!runs(info)) continue;
    // The stem layer's kernel is a half-precision one that writes NHWC: without the
    // layout pass after it (level, --disable-pass) the layer would fall back to the host.
    if (info.name == kConvMaxPoolPass && !(halfPrecision && layoutRuns)) continue;
    KILN_RETURN_IF_ERROR_CTX(pass->applyFor(network, applied, target), "pass " + info.name);
  }
  return Status::ok();
}

}  // namespace kiln
