#include "ir/channels_last.h"

#include <cstring>

namespace kiln {

bool isChannelsLast(const Node& node) { return node.attrInt(kChannelsLastAttribute, 0) == 1; }

ChannelsLastRoles channelsLastRoles(const Node& node) {
  ChannelsLastRoles roles;
  roles.activationInputs.push_back(0);
  roles.activationOutputs.push_back(0);
  if (node.opType == "FusedConv") {
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

Tensor permute4d(const Tensor& t, const int (&perm)[4]) {
  const Shape& in = t.shape();
  const Shape out = {in[perm[0]], in[perm[1]], in[perm[2]], in[perm[3]]};
  Tensor result(t.type(), out);
  const size_t element = dataTypeSize(t.type());
  int64_t inStrides[4];
  inStrides[3] = 1;
  for (int d = 2; d >= 0; --d) inStrides[d] = inStrides[d + 1] * in[d + 1];
  int64_t step[4];  // input stride of each output axis
  for (int d = 0; d < 4; ++d) step[d] = inStrides[perm[d]];
  const auto* src = static_cast<const unsigned char*>(t.rawData());
  auto* dst = static_cast<unsigned char*>(result.rawData());
  int64_t o = 0;
  for (int64_t a = 0; a < out[0]; ++a)
    for (int64_t b = 0; b < out[1]; ++b)
      for (int64_t c = 0; c < out[2]; ++c)
        for (int64_t d = 0; d < out[3]; ++d, ++o) {
          const int64_t i = a * step[0] + b * step[1] + c * step[2] + d * step[3];
          std::memcpy(dst + o * element, src + i * element, element);
        }
  return result;
}

}  // namespace kiln
