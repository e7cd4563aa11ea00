// The block-diagonal filter of a grouped convolution (contract: grouped_filter.h).
#include <algorithm>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/grouped_filter.h"

namespace kiln::cuda {
namespace {

template <class Bits, bool kChannelsLast>
__global__ void expandGrouped(const Bits* w, Bits* dense, int64_t count, int64_t c, int64_t cg,
                              int64_t kg, int64_t taps) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t k, tap, ch;
    if constexpr (kChannelsLast) {  // [K, taps, C]
      ch = i % c;
      tap = (i / c) % taps;
      k = i / (c * taps);
    } else {  // [K, C, taps]
      tap = i % taps;
      ch = (i / taps) % c;
      k = i / (taps * c);
    }
    const int64_t group = k / kg;
    if (ch / cg != group) {
      dense[i] = Bits(0);
      continue;
    }
    const int64_t local = ch - group * cg;
    dense[i] = kChannelsLast ? w[(k * taps + tap) * cg + local] : w[(k * cg + local) * taps + tap];
  }
}

template <class Bits>
Status launch(const void* w, void* dense, int64_t count, int64_t c, int64_t cg, int64_t kg,
              int64_t taps, bool channelsLast, cudaStream_t stream) {
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((count + threads - 1) / threads, 4096);
  if (channelsLast)
    expandGrouped<Bits, true><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        static_cast<const Bits*>(w), static_cast<Bits*>(dense), count, c, cg, kg, taps);
  else
    expandGrouped<Bits, false><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        static_cast<const Bits*>(w), static_cast<Bits*>(dense), count, c, cg, kg, taps);
  KILN_CUDA_CHECK_LAUNCH("expandGrouped");
  return Status::ok();
}

}  // namespace

Status expandGroupedFilter(const void* w, void* dense, DataType type, int64_t k, int64_t c,
                           int64_t groups, int64_t taps, bool channelsLast, cudaStream_t stream) {
  if (groups <= 0 || k % groups != 0 || c % groups != 0 || taps <= 0)
    return invalidArgument("expandGroupedFilter: K and C must be multiples of the groups");
  const int64_t count = k * c * taps;
  if (count == 0) return Status::ok();
  const int64_t cg = c / groups, kg = k / groups;
  switch (dataTypeSize(type)) {
    case 2:
      return launch<uint16_t>(w, dense, count, c, cg, kg, taps, channelsLast, stream);
    case 4:
      return launch<uint32_t>(w, dense, count, c, cg, kg, taps, channelsLast, stream);
    default:
      return unsupported(std::string("expandGroupedFilter of ") + dataTypeName(type));
  }
}

}  // namespace kiln::cuda
