// The contract between the host half of ONNX Attention (attention.cpp: attributes, layouts,
// the mask's broadcast, outputs, workspace carving and the two cuBLASLt GEMMs) and its
// device half (attention_impl.cu: the head copy and the masked softmax kernels). Plain C++,
// included by both compilers.
//
// launchAttentionHeadCopy copies (batch, heads, seq, head_size) rows, the past first, on
// `stream`; launchAttentionSoftmax turns a chunk of score rows into probabilities in place
// on `stream`. Both assume the host half checked the type (kAttentionDeviceTypes; another
// gives a kUnsupported "data type X" status, or, for the copy, one not of 1, 2, 4 or 8
// bytes), that every pointer holds the elements the parameters describe, and return a
// failed launch's status by kernel name. Nothing is launched for an empty copy or an
// empty chunk.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_type_sets.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

// Q, K, V, the past, an additive mask, Y and the scores: one float storage type.
constexpr uint32_t kAttentionDeviceTypes = device_types::kStorageFloats;

// (batch, heads, seq, head_size) copy: rows s < pastLen come from `past` (4-D), the rest
// from `cur` (4-D or packed 3-D (batch, seq, heads * head_size)); the destination is 4-D
// or packed 3-D.
struct AttentionHeadCopy {
  int64_t batch = 0, heads = 0, seq = 0, headSize = 0, pastLen = 0;
  bool srcPacked = false, dstPacked = false;
};

// dst = the copy `c` describes of `past` (nullptr when c.pastLen is 0) and `cur`, elements
// of `type` moved as words of its size.
Status launchAttentionHeadCopy(DataType type, const void* past, const void* cur, void* dst,
                               const AttentionHeadCopy& c, cudaStream_t stream);

enum AttentionMaskKind : int {
  kAttentionMaskNone = 0,
  kAttentionMaskBool = 1,
  kAttentionMaskAdditive = 2
};
// softmax_precision: the probabilities (and the biased scores) rounded to float16 or
// bfloat16, or kept in float.
enum AttentionRoundKind : int {
  kAttentionRoundNone = 0,
  kAttentionRoundHalf = 1,
  kAttentionRoundBFloat16 = 2
};

// One chunk of score rows, rows of (batch, q_head, q_seq) flattened, `total` keys each.
struct AttentionSoftmaxParams {
  int64_t rows = 0;     // rows of this chunk
  int64_t rowBase = 0;  // global index of the chunk's first row
  int64_t qSeq = 0, qHeads = 0, total = 0, pastLen = 0;
  float softcap = 0.f;
  int qkMode = -1;  // -1: no qk_matmul_output
  int round = kAttentionRoundNone;
  bool causal = false;
  int64_t leftWindow = -1, rightWindow = -1;
  int maskKind = kAttentionMaskNone;
  const void* mask = nullptr;                            // bool (one byte) or the scores' type
  int64_t maskB = 0, maskH = 0, maskI = 0, maskLen = 0;  // element strides, keys
  const void* nonpad = nullptr;  // nonpad_kv_seqlen on the device, or nullptr
  bool nonpad64 = true;          // int64, else int32
};

// One block per row of `scores` (p.rows rows of p.total elements of `type`): softcap, the
// mask / causal / window / padding bias, the softmax in float (a fully masked row becomes
// zeros) and the probabilities written back in place. `qk` (nullptr when not wanted) is
// the whole qk_matmul_output tensor, written at mode p.qkMode for the chunk's rows.
Status launchAttentionSoftmax(DataType type, void* scores, void* qk,
                              const AttentionSoftmaxParams& p, cudaStream_t stream);

}  // namespace kiln::cuda
