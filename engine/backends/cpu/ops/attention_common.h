// Pieces shared by the softmax-attention kernels (Attention, FlexAttention):
// head layouts, conversion of Q/K/V into contiguous compute buffers, rounding to
// a reduced precision, and the row softmax.
//
// Float16/bfloat16 inputs compute in float, as everywhere in the CPU backend, but
// the points where the ONNX reference rounds to the storage type (Q*sqrt(scale),
// the probabilities fed to P@V) round here too, so results track the reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/attention_params.h"
#include "backends/cpu/ops/nn_common.h"

namespace kiln::cpu::attention {

// A tensor read as (batch, heads, seq, headSize): a 4-D tensor in that order, or a
// packed 3-D (batch, seq, heads * headSize) tensor.
struct HeadLayout : ops::AttentionHeadLayout {
  HeadLayout() = default;
  HeadLayout(int64_t b, int64_t h, int64_t s, int64_t d, bool isPacked)
      : ops::AttentionHeadLayout{b, h, s, d, isPacked} {}
  HeadLayout(const ops::AttentionHeadLayout& l) : ops::AttentionHeadLayout(l) {}  // NOLINT

  // Element offset of (b, h, s, 0).
  int64_t offset(int64_t b, int64_t h, int64_t s) const {
    return packed ? (b * seq + s) * heads * headSize + h * headSize
                  : ((b * heads + h) * seq + s) * headSize;
  }
  Shape shape4() const { return {batch, heads, seq, headSize}; }
};

// v rounded to the precision of storage type T (identity for float and double).
template <class T, class C>
inline C roundThrough(C v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<C>(static_cast<float>(T(static_cast<float>(v))));
  } else {
    return v;
  }
}

// Rounds n values to the precision of `type` when it is narrower than C.
template <class C>
void roundBuffer(C* p, int64_t n, DataType type) {
  if (std::is_same_v<C, double> && type == DataType::kFloat32) {
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<C>(static_cast<float>(p[i]));
  } else if (type == DataType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) p[i] = roundThrough<Half>(p[i]);
  } else if (type == DataType::kBFloat16) {
    for (int64_t i = 0; i < n; ++i) p[i] = roundThrough<BFloat16>(p[i]);
  }
}

// Copies `t`, read through `from`, into dst as contiguous (B, H, S, D) values of
// compute type C, each multiplied by `factor` in t's own precision.
template <class C>
Status gatherHeads(const Tensor& t, const HeadLayout& from, double factor, C* dst) {
  return dispatchFloatTypes(t.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const C f = roundThrough<T>(static_cast<C>(factor));
    const T* src = t.data<T>();
    const int64_t d = from.headSize;
    for (int64_t b = 0; b < from.batch; ++b) {
      for (int64_t h = 0; h < from.heads; ++h) {
        for (int64_t s = 0; s < from.seq; ++s) {
          const T* in = src + from.offset(b, h, s);
          C* out = dst + ((b * from.heads + h) * from.seq + s) * d;
          for (int64_t i = 0; i < d; ++i) {
            out[i] = roundThrough<T>(static_cast<C>(static_cast<ComputeType<T>>(in[i])) * f);
          }
        }
      }
    }
    return Status::ok();
  });
}

// All elements of a float tensor as compute type C.
template <class C>
Status readAll(const Tensor& t, C* dst) {
  return dispatchFloatTypes(t.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    convertToBuffer(t.data<T>(), t.numel(), dst);
    return Status::ok();
  });
}

// Writes n compute values into a float tensor's storage starting at element `at`.
template <class C>
Status writeAll(const C* src, int64_t n, Tensor* t, int64_t at = 0) {
  return dispatchFloatTypes(t->type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    convertFromBuffer(src, n, t->data<T>() + at);
    return Status::ok();
  });
}

// In-place softmax of n values, evaluated in A. A row whose maximum is -inf (no
// attendable key) becomes `maskedRow` everywhere (0 for Attention; NaN, as 0/0, for
// plain softmax semantics).
template <class A, class C>
void softmaxRow(C* row, int64_t n, C maskedRow = C(0)) {
  if (n <= 0) return;
  A maxValue = static_cast<A>(row[0]);
  for (int64_t i = 1; i < n; ++i) maxValue = std::max(maxValue, static_cast<A>(row[i]));
  if (maxValue == -std::numeric_limits<A>::infinity()) {
    std::fill(row, row + n, maskedRow);
    return;
  }
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const A e = std::exp(static_cast<A>(row[i]) - maxValue);
    row[i] = static_cast<C>(e);
    sum += static_cast<double>(e);
  }
  const A inv = static_cast<A>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) row[i] = static_cast<C>(static_cast<A>(row[i]) * inv);
}

}  // namespace kiln::cpu::attention
