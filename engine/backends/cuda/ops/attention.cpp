// Attention on the GPU, with the opset ranges, attributes, defaults and error messages
// of the CPU kernel (backends/cpu/ops/attention.cpp). The host half: layouts, attributes,
// the mask's broadcast, outputs, the workspace and the two cuBLASLt GEMMs; the head copy
// and the softmax kernels are attention_impl.cu's (contract: attention_impl.h).
// RotaryEmbedding, once here, is rotary_embedding.cpp.
//
// Contract:
// - Attention (opsets 23-25): 3-D (packed, q_num_heads / kv_num_heads) and 4-D Q, K, V;
//   grouped-query heads; past_key / past_value concatenation with present_key /
//   present_value outputs; attn_mask bool or additive (rank 1..4, right-aligned, a
//   short last axis padded with -inf); is_causal; scale; softcap; opset 24's
//   nonpad_kv_seqlen and opset 25's left/right windows; the qk_matmul_output output at
//   every qk_matmul_output_mode; softmax_precision float16 / bfloat16 rounding.
//   Per group of query heads sharing a KV head: S = scale * Q K^T by one strided batched
//   runGemm (the group's query rows folded into M) into workspace scores of the storage
//   type, a row kernel that applies softcap, the mask / causal / window / padding bias
//   and the softmax in float (fully masked rows become zeros, as on the CPU), then
//   Y = P V by a second runGemm. Q, K, V keep their 16-bit storage; scores are stored in
//   the storage type between the kernels (the GEMM's output type), so 16-bit results
//   differ from the CPU's float scores by one rounding of S. Packed 3-D operands are
//   first copied to (batch, heads, seq, head_size) and Y is copied back.
//   Q, K, V (and past, additive mask) must share one float storage type; a mask of
//   another type (integers) runs through the host. The score scratch is processed in
//   chunks of (batch, KV head) pairs of at most workspaceLimitBytes.
//   Scratch (packed Q / Y copies, K / V with the past when present_* are not wanted, the
//   scores chunk) is carved from the one ctx.workspace() buffer; runGemm's cuBLASLt
//   workspace is the separate libraryWorkspace().
//   nonpad_kv_seqlen is read on the device: it is not validated against the key count
//   (the CPU does not either).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/attention_impl.h"
#include "backends/cuda/ops/gemm.h"
#include "backends/cuda/ops/op_common.h"
#include "ops/attention_params.h"

namespace kiln::cuda {
namespace {

constexpr size_t kAlign = 256;

size_t alignUp(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

bool hasInput(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.inputCount() && ctx.hasInput(i);
}

bool wantsOutput(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.outputCount() && ctx.wantsOutput(i);
}

struct HeadLayout : ops::AttentionHeadLayout {
  HeadLayout() = default;
  HeadLayout(const ops::AttentionHeadLayout& l) : ops::AttentionHeadLayout(l) {}  // NOLINT
  int64_t numel() const { return batch * heads * seq * headSize; }
};

struct AttentionSpec {
  HeadLayout q, k, v;
  int64_t pastLen = 0, totalLen = 0, group = 1;
  double scale = 1.0;
  float softcap = 0.f;
  int64_t qkMode = 0;
  int round = kAttentionRoundNone;
  bool causal = false;
  int64_t leftWindow = -1, rightWindow = -1;
  bool nonpad = false;
};

Status readLayouts(const GpuKernelContext& ctx, AttentionSpec* s) {
  auto layouts = ops::attentionLayouts(ctx.node(), ctx.opset(), ctx.input(0).shape,
                                       ctx.input(1).shape, ctx.input(2).shape);
  if (!layouts.isOk()) return ctx.error(layouts.status().message());
  s->q = layouts->q, s->k = layouts->k, s->v = layouts->v, s->group = layouts->group;
  return Status::ok();
}

Status readCache(const GpuKernelContext& ctx, AttentionSpec* s) {
  const bool pastKey = hasInput(ctx, 4), pastValue = hasInput(ctx, 5);
  if (pastKey != pastValue) return ctx.error("past_key and past_value must be given together");
  if (pastKey) {
    auto keyLength = ops::attentionPastLength("past_key", ctx.input(4).shape, ctx.input(4).type,
                                              s->k, ctx.input(1).type);
    if (!keyLength.isOk()) return ctx.error(keyLength.status().message());
    s->pastLen = keyLength.value();
    auto valueLength = ops::attentionPastLength("past_value", ctx.input(5).shape, ctx.input(5).type,
                                                s->v, ctx.input(2).type, s->pastLen);
    if (!valueLength.isOk()) return ctx.error(valueLength.status().message());
  }
  s->totalLen = s->pastLen + s->k.seq;
  if (ctx.opset() < 24 || !hasInput(ctx, 6)) return Status::ok();
  const DeviceTensor& nonpad = ctx.input(6);
  if (pastKey) return ctx.error("nonpad_kv_seqlen cannot be combined with past_key/past_value");
  if (nonpad.rank() != 1 || nonpad.shape[0] != s->q.batch || !isIndexType(nonpad.type))
    return ctx.error("nonpad_kv_seqlen must be an int64 vector of batch size, got " + dims(nonpad));
  s->nonpad = true;
  return Status::ok();
}

Status readAttributes(const GpuKernelContext& ctx, AttentionSpec* s) {
  auto a = ops::attentionAttributes(ctx.node(), ctx.opset(), s->q.headSize);
  if (!a.isOk()) return ctx.error(a.status().message());
  // The CPU scales Q and K each by sqrt(scale); one GEMM alpha is the same product.
  const double root = std::sqrt(a->scale);
  s->scale = root * root;
  s->softcap = a->softcap;
  s->causal = a->causal;
  s->qkMode = a->qkMode;
  // float32 / float64 softmax: computed in float here (no rounding step).
  s->round = a->softmaxPrecision == 10   ? kAttentionRoundHalf
             : a->softmaxPrecision == 16 ? kAttentionRoundBFloat16
                                         : kAttentionRoundNone;
  s->leftWindow = a->leftWindow;
  s->rightWindow = a->rightWindow;
  return Status::ok();
}

// attn_mask strides against (batch, q_heads, q_seq, keys), as the CPU's readMask.
Status readMask(const GpuKernelContext& ctx, const AttentionSpec& s, AttentionSoftmaxParams* p) {
  const DeviceTensor& m = ctx.input(3);
  const int rank = m.rank();
  if (rank < 1 || rank > 4) return ctx.error("attn_mask must have rank 1..4, got " + dims(m));
  p->maskLen = m.shape.back();
  if (p->maskLen > s.totalLen)
    return ctx.error("attn_mask " + dims(m) + " has more keys than " + std::to_string(s.totalLen));
  const int64_t target[3] = {s.q.batch, s.q.heads, s.q.seq};
  int64_t* strides[3] = {&p->maskB, &p->maskH, &p->maskI};
  std::vector<int64_t> contiguous(rank, 1);
  for (int d = rank - 2; d >= 0; --d) contiguous[d] = contiguous[d + 1] * m.shape[d + 1];
  for (int d = 0; d < rank - 1; ++d) {
    const int t = 3 - (rank - 1) + d;
    if (m.shape[d] != 1 && m.shape[d] != target[t])
      return ctx.error("attn_mask " + dims(m) + " does not broadcast to (" +
                       std::to_string(target[0]) + ", " + std::to_string(target[1]) + ", " +
                       std::to_string(target[2]) + ", keys)");
    *strides[t] = m.shape[d] == 1 ? 0 : contiguous[d];
  }
  if (m.type == DataType::kBool) {
    p->maskKind = kAttentionMaskBool;
  } else if (m.type == ctx.input(0).type) {
    p->maskKind = kAttentionMaskAdditive;
  } else {
    return ctx.unsupported(std::string("attn_mask of type ") + dataTypeName(m.type));
  }
  p->mask = m.data;
  return Status::ok();
}

// One cuBLASLt plan cache per GEMM: full and last chunk of each product.
struct AttentionState {
  std::shared_ptr<void> slots[4];
};

// Workspace carving: 256-byte aligned offsets of the kernel's buffers.
struct Carve {
  size_t offset = 0;
  size_t take(size_t bytes) {
    const size_t at = offset;
    offset += alignUp(bytes);
    return at;
  }
};

// `base` advanced by `elements` elements of `es` bytes.
const void* advance(const void* base, int64_t elements, size_t es) {
  return static_cast<const unsigned char*>(base) + static_cast<size_t>(elements) * es;
}
void* advance(void* base, int64_t elements, size_t es) {
  return static_cast<unsigned char*>(base) + static_cast<size_t>(elements) * es;
}

// K or V with the past prepended, contiguous (B, H, past + S, D): output `index` when
// wanted, else workspace `scratch` (or the input itself when nothing changes).
Status makePresent(GpuKernelContext& ctx, size_t index, size_t input, size_t pastInput,
                   const HeadLayout& l, int64_t pastLen, void* scratch, const void** out) {
  const DeviceTensor& cur = ctx.input(input);
  const bool past = hasInput(ctx, pastInput);
  const bool wanted = wantsOutput(ctx, index);
  if (!wanted && !past && !l.packed) {
    *out = cur.data;
    return Status::ok();
  }
  void* dst = scratch;
  if (wanted) {
    const Shape shape{l.batch, l.heads, pastLen + l.seq, l.headSize};
    KILN_ASSIGN_OR_RETURN(DeviceTensor t, ctx.allocateOutput(index, cur.type, shape));
    dst = t.data;
  }
  AttentionHeadCopy c;
  c.batch = l.batch;
  c.heads = l.heads;
  c.seq = pastLen + l.seq;
  c.headSize = l.headSize;
  c.pastLen = past ? pastLen : 0;
  c.srcPacked = l.packed;
  KILN_RETURN_IF_ERROR(launchAttentionHeadCopy(cur.type, past ? ctx.input(pastInput).data : nullptr,
                                               cur.data, dst, c, ctx.stream()));
  *out = dst;
  return Status::ok();
}

// The two GEMMs and the softmax over chunks of (batch, KV head) pairs, for Q of a type in
// kAttentionDeviceTypes.
Status runAttention(GpuKernelContext& ctx, const AttentionSpec& s, AttentionSoftmaxParams p) {
  const DataType type = ctx.input(0).type;
  const size_t es = dataTypeSize(type);
  const int64_t batch = s.q.batch, qHeads = s.q.heads, qSeq = s.q.seq, d = s.q.headSize;
  const int64_t kvHeads = s.k.heads, total = s.totalLen, dv = s.v.headSize, group = s.group;
  const int64_t pairs = batch * kvHeads;
  const int64_t pairRows = group * qSeq;  // query rows sharing one KV head
  const size_t pairScoreBytes = static_cast<size_t>(pairRows * total) * es;
  const int64_t limit = std::max<int64_t>(ctx.options().workspaceLimitBytes, 1);
  int64_t chunk = pairs;
  if (pairScoreBytes > 0)
    chunk = std::clamp<int64_t>(limit / static_cast<int64_t>(pairScoreBytes), 1,
                                std::max<int64_t>(pairs, 1));

  // Workspace: [packed Q | K | V | packed Y | scores chunk].
  Carve carve;
  const bool pastGiven = hasInput(ctx, 4);
  const size_t qAt = s.q.packed ? carve.take(s.q.numel() * es) : 0;
  const bool kScratch = !wantsOutput(ctx, 1) && (pastGiven || s.k.packed);
  const bool vScratch = !wantsOutput(ctx, 2) && (pastGiven || s.v.packed);
  const size_t kAt = kScratch ? carve.take(static_cast<size_t>(pairs * total * d) * es) : 0;
  const size_t vAt = vScratch ? carve.take(static_cast<size_t>(pairs * total * dv) * es) : 0;
  const size_t yAt =
      s.q.packed ? carve.take(static_cast<size_t>(batch * qHeads * qSeq * dv) * es) : 0;
  const size_t scoresAt = carve.take(static_cast<size_t>(chunk) * pairScoreBytes);
  KILN_ASSIGN_OR_RETURN(void* ws, ctx.workspace(carve.offset));
  auto* base = static_cast<unsigned char*>(ws);

  const void* kData = nullptr;
  const void* vData = nullptr;
  KILN_RETURN_IF_ERROR(makePresent(ctx, 1, 1, 4, s.k, s.pastLen, base + kAt, &kData));
  KILN_RETURN_IF_ERROR(makePresent(ctx, 2, 2, 5, s.v, s.pastLen, base + vAt, &vData));

  const Shape yShape =
      s.q.packed ? Shape{batch, qSeq, qHeads * dv} : Shape{batch, qHeads, qSeq, dv};
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, type, yShape));
  void* qk = nullptr;
  if (wantsOutput(ctx, 3)) {
    const Shape qkShape{batch, qHeads, qSeq, total};
    KILN_ASSIGN_OR_RETURN(DeviceTensor t, ctx.allocateOutput(3, type, qkShape));
    qk = t.data;
  }
  if (y.numel() == 0 && (!qk || batch * qHeads * qSeq * total == 0)) return Status::ok();

  const void* qData = ctx.input(0).data;
  if (s.q.packed) {
    AttentionHeadCopy c{batch, qHeads, qSeq, d, 0, true, false};
    KILN_RETURN_IF_ERROR(
        launchAttentionHeadCopy(type, nullptr, qData, base + qAt, c, ctx.stream()));
    qData = base + qAt;
  }
  void* yData = s.q.packed ? static_cast<void*>(base + yAt) : y.data;
  void* scores = base + scoresAt;

  auto& state = ctx.layerState();
  if (!state) state = std::make_shared<AttentionState>();
  auto* slots = static_cast<AttentionState*>(state.get())->slots;
  const bool tf32 = type == DataType::kFloat32 && ctx.options().allowTf32;

  for (int64_t first = 0; first < pairs; first += chunk) {
    const int64_t count = std::min(chunk, pairs - first);
    const int slot = count == chunk ? 0 : 1;
    // S = scale * Q K^T for `count` (batch, KV head) pairs.
    if (d == 0) {
      KILN_CUDA_CHECK(
          cudaMemsetAsync(scores, 0, static_cast<size_t>(count) * pairScoreBytes, ctx.stream()));
    } else if (total > 0 && pairRows > 0) {
      GemmProblem qkT;
      qkT.type = type;
      qkT.m = pairRows;
      qkT.n = total;
      qkT.k = d;
      qkT.transB = true;
      qkT.batch = count;
      qkT.strideA = pairRows * d;
      qkT.strideB = total * d;
      qkT.strideD = pairRows * total;
      qkT.alpha = static_cast<float>(s.scale);
      qkT.tf32 = tf32;
      KILN_RETURN_IF_ERROR(runGemm(ctx, qkT, advance(qData, first * pairRows * d, es),
                                   advance(kData, first * total * d, es), scores, nullptr,
                                   &slots[slot]));
    }
    p.rows = count * pairRows;
    p.rowBase = first * pairRows;
    KILN_RETURN_IF_ERROR(launchAttentionSoftmax(type, scores, qk, p, ctx.stream()));
    // Y = P V.
    void* yChunk = advance(yData, first * pairRows * dv, es);
    if (total == 0) {
      KILN_CUDA_CHECK(cudaMemsetAsync(yChunk, 0, static_cast<size_t>(count * pairRows * dv) * es,
                                      ctx.stream()));
    } else if (dv > 0 && pairRows > 0) {
      GemmProblem pv;
      pv.type = type;
      pv.m = pairRows;
      pv.n = dv;
      pv.k = total;
      pv.batch = count;
      pv.strideA = pairRows * total;
      pv.strideB = total * dv;
      pv.strideD = pairRows * dv;
      pv.tf32 = tf32;
      KILN_RETURN_IF_ERROR(runGemm(ctx, pv, scores, advance(vData, first * total * dv, es), yChunk,
                                   nullptr, &slots[2 + slot]));
    }
  }
  if (s.q.packed) {
    AttentionHeadCopy c{batch, qHeads, qSeq, dv, 0, false, true};
    KILN_RETURN_IF_ERROR(launchAttentionHeadCopy(type, nullptr, yData, y.data, c, ctx.stream()));
  }
  ctx.setImplementation("cublasLt QK^T, fused masked softmax, cublasLt PV" +
                        std::string(chunk < pairs ? " (chunked)" : ""));
  return Status::ok();
}

Status attentionKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
  AttentionSpec spec;
  KILN_RETURN_IF_ERROR(readLayouts(ctx, &spec));
  KILN_RETURN_IF_ERROR(readCache(ctx, &spec));
  KILN_RETURN_IF_ERROR(readAttributes(ctx, &spec));
  const DataType type = ctx.input(0).type;
  if (ctx.input(1).type != type) return ctx.error("K type differs from Q type");
  if (ctx.input(2).type != type)
    return ctx.unsupported(std::string("V of type ") + dataTypeName(ctx.input(2).type));
  AttentionSoftmaxParams p;
  p.qSeq = spec.q.seq;
  p.qHeads = spec.q.heads;
  p.total = spec.totalLen;
  p.pastLen = spec.pastLen;
  p.softcap = spec.softcap;
  p.qkMode = wantsOutput(ctx, 3) ? static_cast<int>(spec.qkMode) : -1;
  p.round = spec.round;
  p.causal = spec.causal;
  p.leftWindow = spec.leftWindow;
  p.rightWindow = spec.rightWindow;
  if (hasInput(ctx, 3)) KILN_RETURN_IF_ERROR(readMask(ctx, spec, &p));
  if (spec.nonpad) {
    p.nonpad = ctx.input(6).data;
    p.nonpad64 = ctx.input(6).type == DataType::kInt64;
  }
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, type, kAttentionDeviceTypes));
  return runAttention(ctx, spec, p);
}

// Q, K, V, past and an additive mask in one float storage type; a bool mask; integer
// nonpad_kv_seqlen.
std::string supportsAttention(const Node&, const std::vector<DataType>& types) {
  const DataType q = typeAt(types, 0);
  if (!isFloatStorage(q)) return std::string("no GPU kernel for Q of type ") + dataTypeName(q);
  for (size_t i : {1, 2, 4, 5}) {
    const DataType t = typeAt(types, i);
    if (t != DataType::kUndefined && t != q)
      return "inputs of different types (" + std::string(dataTypeName(t)) + ")";
  }
  const DataType mask = typeAt(types, 3);
  if (mask != DataType::kUndefined && mask != DataType::kBool && mask != q)
    return std::string("no GPU kernel for attn_mask of type ") + dataTypeName(mask);
  const DataType nonpad = typeAt(types, 6);
  if (nonpad != DataType::kUndefined && !isIndexType(nonpad))
    return std::string("no GPU kernel for nonpad_kv_seqlen of type ") + dataTypeName(nonpad);
  return "";
}

}  // namespace

void registerAttentionGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Attention", 23, 1000, attentionKernel, supportsAttention);
}

}  // namespace kiln::cuda
