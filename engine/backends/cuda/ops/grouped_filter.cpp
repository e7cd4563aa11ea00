// The host half of the dense block-diagonal form of grouped convolutions
// (grouped_filter.h; the filter expansion itself is grouped_filter.cu).
#include "backends/cuda/ops/grouped_filter.h"

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/cudnn_conv.h"

namespace kiln::cuda {

// The groups of `g` when its dense block-diagonal form is worth timing: 2..64 groups of a
// forward convolution whose dense filter stays under 32 MiB; else 0.
int64_t denseCandidateGroups(const ConvGeometry& g) {
  if (g.transpose || g.w.size() < 3 || g.w[1] <= 0 || g.x[1] % g.w[1] != 0) return 0;
  const int64_t groups = g.x[1] / g.w[1];
  if (groups < 2 || groups > 64 || g.w[0] % groups != 0) return 0;
  int64_t elements = g.w[0] * g.x[1];
  for (size_t d = 2; d < g.w.size(); ++d) elements *= g.w[d];
  return elements * static_cast<int64_t>(dataTypeSize(g.type)) <= (int64_t{32} << 20) ? groups : 0;
}

int64_t filterTaps(const ConvGeometry& g) {
  int64_t taps = 1;
  for (size_t d = 2; d < g.w.size(); ++d) taps *= g.w[d];
  return taps;
}

// The dense filter of grouped `g` written into the context's workspace.
Result<void*> denseFilter(GpuKernelContext& ctx, const ConvGeometry& g, const void* w,
                          int64_t groups) {
  const size_t bytes = static_cast<size_t>(g.w[0] * g.x[1] * filterTaps(g)) * dataTypeSize(g.type);
  KILN_ASSIGN_OR_RETURN(void* dense, ctx.workspace(bytes));
  KILN_RETURN_IF_ERROR(expandGroupedFilter(w, dense, g.type, g.w[0], g.x[1], groups, filterTaps(g),
                                           g.channelsLast, ctx.stream()));
  return dense;
}

}  // namespace kiln::cuda
