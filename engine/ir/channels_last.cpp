#include "ir/channels_last.h"

#include <cstdint>

#include "ir/conv_max_pool.h"

namespace kiln {

bool isChannelsLast(const Node& node) {
  return node.attrInt(kChannelsLastAttribute, 0) == 1;
}

ChannelsLastRoles channelsLastRoles(const Node& node) {
  ChannelsLastRoles roles;
  roles.activationOutputs.push_back(0);
  // A stem's X (few channels) stays channels-first; its filter stays [M, C, R, S].
  if (isFusedConvMaxPool(node)) return roles;
  roles.activationInputs.push_back(0);
  if (node.opType == "FusedConv" || node.opType == "QuantizedConv") {
    roles.filterInput = 1;
    if (node.inputs.size() > 3) roles.activationInputs.push_back(3);  // the residual Z
  }
  return roles;
}

Shape toChannelsLastShape(const Shape& s) {
  if (s.size() != 4) return s;
  return {s[0], s[2], s[3], s[1]};
}

Shape toChannelsFirstShape(const Shape& s) {
  if (s.size() != 4) return s;
  return {s[0], s[3], s[1], s[2]};
}

namespace {

struct Word16 {
  uint64_t low, high;
};

// dst[o] = src[offset of output index o] over the 4-D output, for one element width.
template <class Word>
void permuteWords(const Word* src, Word* dst, const Shape& out, const int64_t (&step)[4]) {
  int64_t o = 0;
  for (int64_t a = 0; a < out[0]; ++a)
    for (int64_t b = 0; b < out[1]; ++b)
      for (int64_t c = 0; c < out[2]; ++c) {
        const Word* row = src + a * step[0] + b * step[1] + c * step[2];
        for (int64_t d = 0; d < out[3]; ++d) dst[o++] = row[d * step[3]];
      }
}

}  // namespace

Tensor permute4d(const Tensor& t, const int (&perm)[4]) {
  const Shape& in = t.shape();
  const Shape out = {in[perm[0]], in[perm[1]], in[perm[2]], in[perm[3]]};
  Tensor result(t.type(), out);
  int64_t inStrides[4];
  inStrides[3] = 1;
  for (int d = 2; d >= 0; --d) inStrides[d] = inStrides[d + 1] * in[d + 1];
  int64_t step[4];  // input stride of each output axis
  for (int d = 0; d < 4; ++d) step[d] = inStrides[perm[d]];
  const void* src = t.rawData();
  void* dst = result.rawData();
  switch (dataTypeSize(t.type())) {
    case 1:
      permuteWords(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), out, step);
      break;
    case 2:
      permuteWords(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), out, step);
      break;
    case 4:
      permuteWords(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), out, step);
      break;
    case 8:
      permuteWords(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), out, step);
      break;
    default:  // complex128
      permuteWords(static_cast<const Word16*>(src), static_cast<Word16*>(dst), out, step);
      break;
  }
  return result;
}

}  // namespace kiln
