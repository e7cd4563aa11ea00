// A grouped convolution as a dense one: the filter of a convolution with `groups` groups
// written as the block-diagonal filter of the ungrouped convolution that computes the same
// output (zero where an output channel's group differs from the input channel's). cuDNN's
// grouped engines run narrow groups far below their floor (RegNetY's 24-channel groups:
// 20x), while the dense form runs at tensor-core rate on `groups` times the FLOPs; FusedConv
// times both (fused_conv.cpp) and keeps the faster.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda {

struct ConvGeometry;     // backends/cuda/ops/cudnn_conv.h
class GpuKernelContext;  // backends/cuda/gpu_kernel.h

// dense = the block-diagonal form of grouped filter `w`: channels-first W [K, C/g, taps]
// -> [K, C, taps], channels-last W [K, taps, C/g] -> [K, taps, C] (taps = R * S). Any
// 2- or 4-byte element type (bits are copied). K and C must be multiples of `groups`.
Status expandGroupedFilter(const void* w, void* dense, DataType type, int64_t k, int64_t c,
                           int64_t groups, int64_t taps, bool channelsLast, cudaStream_t stream);

// Host half (grouped_filter.cpp). The groups of `g` when its dense block-diagonal form is
// worth timing: 2..64 groups of a forward convolution whose dense filter stays under
// 32 MiB; else 0.
int64_t denseCandidateGroups(const ConvGeometry& g);
// R * S (* T): the filter's taps per input channel.
int64_t filterTaps(const ConvGeometry& g);
// The dense filter of grouped `g` written into the context's workspace (valid until the
// kernel's work on the stream completes).
Result<void*> denseFilter(GpuKernelContext& ctx, const ConvGeometry& g, const void* w,
                          int64_t groups);

}  // namespace kiln::cuda
