// The host/device contract of the indexed data movement (host half: gather_scatter.cpp,
// device half: gather_scatter_impl.cu): Gather, GatherElements, GatherND, the scatters and
// ReverseSequence. Plain C++, for g++ and nvcc; the launchers' common terms:
// data_movement_impl.h.
//
// Index tensors (`indices`, sequence lengths) stay on the device, int64 when `is64`, else
// int32, and are never waited on: an index outside [-dim, dim) makes a gather read zeros and
// a scatter skip it; sequence lengths are clamped to [0, steps]. The host has checked the
// ranks (checkRank) and the shapes the CPU checks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/ops/data_movement_impl.h"
#include "kiln/data_type.h"
#include "kiln/status.h"

namespace kiln::cuda::dm {

// A scatter's reduction attribute; "none" lets the last duplicate win.
enum ReduceOp : int { kReduceNone = 0, kReduceAdd, kReduceMul, kReduceMax, kReduceMin };
// The data types the scatter reductions compute on (KILN_DISPATCH_NUMERIC's, the CPU's
// dispatchAllTypes): every float storage type, every integer type and bool.
constexpr uint32_t kScatterReductionTypes =
    device_types::kFloats | device_types::kIntegers | device_types::kBool;

// Gather: data [outer, dim, inner] -> out [outer, count, inner] in words of `width` bytes;
// rows of `inner` words, n output words.
struct GatherLaunch {
  const void* data = nullptr;
  const void* indices = nullptr;  // `count` of them
  bool is64 = false;
  void* out = nullptr;
  int64_t dim = 0, count = 0, inner = 0, n = 0;
  int width = 1;
};
Status launchGather(const GatherLaunch& gather, cudaStream_t stream);

// GatherElements/ScatterElements addressing: position i of `indices` (shape idxDims)
// addresses data at i's coordinates with the axis coordinate replaced by the index.
struct ElementParams {
  int rank = 0;
  int axis = 0;
  int64_t axisDim = 0;  // data's dim along axis
  int64_t idxDims[kMaxMovementRank] = {};
  int64_t idxStrides[kMaxMovementRank] = {};
  int64_t dataStrides[kMaxMovementRank] = {};
};

// GatherND/ScatterND addressing: tuple t of k indices selects slot
// (t / perBatch) * batchSlots + sum_j index_j * slotStrides[j], in units of slices.
struct NdParams {
  int k = 0;
  int64_t perBatch = 0;
  int64_t batchSlots = 0;
  int64_t dims[kMaxMovementRank] = {};
  int64_t slotStrides[kMaxMovementRank] = {};
};

// The index tensor of an ElementParams / NdParams addressing.
struct DeviceIndices {
  const void* data = nullptr;
  bool is64 = false;
};

// GatherElements: out[i] = data[the offset of index i], n elements of elementBytes.
Status launchGatherElements(const void* data, DeviceIndices indices, void* out,
                            const ElementParams& params, int64_t n, int elementBytes,
                            cudaStream_t stream);
// BroadcastGatherElements: as GatherElements over the output's positions (params.idxDims
// the output's dims), the index of output position c read at sum c[d] * idxStrides[d]
// (0 on the dims the indices broadcast).
Status launchBroadcastGatherElements(const void* data, DeviceIndices indices, void* out,
                                     const ElementParams& params, int64_t n, int elementBytes,
                                     cudaStream_t stream);
// GatherND: n output words of `width` bytes, slices of `slice` words.
Status launchGatherNd(const void* data, DeviceIndices indices, void* out, const NdParams& params,
                      int64_t slice, int64_t n, int width, cudaStream_t stream);

// Reduction "none" of `rows` update rows of `row` words (of `width` bytes, n = rows * row):
// each row lands where its index points, unless a later row lands there too. With rows > 1,
// `winner` (one zeroed 64-bit counter per output row, on the stream) first marks the last
// writer of each row (markLastWriterKernel), then scatterRowsKernel writes.
struct ScatterRows {
  DeviceIndices indices;
  unsigned long long* winner = nullptr;
  const void* updates = nullptr;
  void* out = nullptr;
  int64_t rows = 0, row = 0, n = 0;
  int width = 1;
};
// ScatterND: rows are slices, addressed by tuples.
Status launchScatterRows(const NdParams& params, const ScatterRows& scatter, cudaStream_t stream);
// ScatterElements: rows are elements.
Status launchScatterRows(const ElementParams& params, const ScatterRows& scatter,
                         cudaStream_t stream);

// ScatterND's reductions (op not kReduceNone, `type` in kScatterReductionTypes): the slice's
// elements in parallel, the `tuples` updates in index order.
Status launchScatterNdReduce(const NdParams& params, DeviceIndices indices, const void* updates,
                             void* out, DataType type, int64_t tuples, int64_t slice, int op,
                             cudaStream_t stream);

// ScatterElements by lines: every position but the axis in parallel (`lines` of them), the
// axis in order. `type` has elements of 1, 2, 4 or 8 bytes for kReduceNone, else is in
// kScatterReductionTypes.
Status launchScatterElementsLines(const ElementParams& params, DeviceIndices indices,
                                  const void* updates, void* out, DataType type, int op,
                                  int64_t lines, cudaStream_t stream);

// ReverseSequence: x is [steps, batch, inner] (timeFirst) or [batch, steps, inner] in words
// of `width` bytes, dim1 its second dim, n words; `lens` the batch's sequence lengths.
struct ReverseSequenceLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  DeviceIndices lens;
  bool timeFirst = false;
  int64_t dim1 = 0, steps = 0, inner = 0, n = 0;
  int width = 1;
};
Status launchReverseSequence(const ReverseSequenceLaunch& reverse, cudaStream_t stream);

}  // namespace kiln::cuda::dm
