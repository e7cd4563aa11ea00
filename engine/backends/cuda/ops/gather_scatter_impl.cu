// The indexed data movement's device half (contract: gather_scatter_impl.h; host half:
// gather_scatter.cpp; the scatters' order of duplicates: data_movement.cpp's header comment):
// the gather, scatter and ReverseSequence kernels and their launches.
#include <type_traits>

#include "backends/cuda/ops/data_movement_common.cuh"
#include "backends/cuda/ops/gather_scatter_impl.h"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda {
namespace {

using namespace dm;

template <class T>
__device__ __forceinline__ typename ComputeType<T>::type toCompute(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return toFloat(v);
  } else {
    return v;
  }
}

template <class T, class C>
__device__ __forceinline__ T fromCompute(C v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return fromFloat<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// The CPU's reduceInto for one element: `a` the current value, `b` the update.
template <class T>
__device__ __forceinline__ T applyReduction(T a, T b, int op) {
  if (op == kReduceNone) return b;
  const auto x = toCompute(a);
  const auto y = toCompute(b);
  switch (op) {
    case kReduceAdd:
      return fromCompute<T>(x + y);
    case kReduceMul:
      return fromCompute<T>(x * y);
    case kReduceMax:
      return x < y ? b : a;  // std::max(x, y)
    default:
      return y < x ? b : a;  // std::min(x, y)
  }
}

// ============================ Gather family ============================

// data [outer, dim, inner] -> out [outer, count, inner]; rows of `inner` words.
template <class V>
__global__ void gatherKernel(const V* data, const void* indices, bool is64, V* out, int64_t dim,
                             int64_t count, int64_t inner, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t c = 0, t = 0;
    const int64_t row = divMod(i, inner, &c);
    const int64_t o = divMod(row, count, &t);
    const int64_t v = normalizeIndex(loadIndex(indices, is64, t), dim);
    out[i] = v < 0 ? V{} : data[(o * dim + v) * inner + c];
  }
}

// The data offset of index position i (ElementParams' addressing), -1 for an index outside
// [-dim, dim).
__device__ __forceinline__ int64_t elementOffset(const ElementParams& p, const void* indices,
                                                 bool is64, int64_t i) {
  const int64_t v = normalizeIndex(loadIndex(indices, is64, i), p.axisDim);
  if (v < 0) return -1;
  int64_t rest = i;
  int64_t offset = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= p.rank) continue;
    int64_t c = 0;
    rest = divMod(rest, p.idxDims[d], &c);
    offset += (d == p.axis ? v : c) * p.dataStrides[d];
  }
  return offset;
}

template <class T>
__global__ void gatherElementsKernel(const T* data, const void* indices, bool is64, T* out,
                                     ElementParams p, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    const int64_t offset = elementOffset(p, indices, is64, i);
    out[i] = offset < 0 ? T{} : data[offset];
  }
}

// Output position i of a BroadcastGatherElements: its index sits at the position's
// coordinates times idxStrides (0 where the indices broadcast).
template <class T>
__global__ void broadcastGatherElementsKernel(const T* data, const void* indices, bool is64, T* out,
                                              ElementParams p, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t rest = i, at = 0, offset = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= p.rank) continue;
      int64_t c = 0;
      rest = divMod(rest, p.idxDims[d], &c);
      at += c * p.idxStrides[d];
      offset += d == p.axis ? 0 : c * p.dataStrides[d];
    }
    const int64_t v = normalizeIndex(loadIndex(indices, is64, at), p.axisDim);
    out[i] = v < 0 ? T{} : data[offset + v * p.dataStrides[p.axis]];
  }
}

// A BroadcastGatherElements along the last axis, kVec outputs per thread (one 16-byte store
// where the row length allows): output row r of `cols` reads data row r (its coordinates
// times dataStrides) at the indices of index row r (its coordinates times idxStrides, 0
// where the indices broadcast). The row's coordinates are worked out once per kVec outputs,
// not per element as the general kernel does: DeBERTa's relative-position gathers ([B * H,
// S, S] of [B * H, S, 2S]) were bound by that index arithmetic.
template <class T, int kVec>
struct alignas(sizeof(T) * kVec) WordVector {
  T v[kVec];
};

template <class T, int kVec>
__global__ void broadcastGatherRowsKernel(const T* data, const void* indices, bool is64, T* out,
                                          ElementParams p, int64_t rows, int64_t cols) {
  const int64_t perRow = cols / kVec;
  KILN_DM_GRID_LOOP(t, rows * perRow) {
    int64_t piece = 0;
    int64_t rest = divMod(t, perRow, &piece);
    const int64_t row = rest;
    int64_t at = 0, from = 0;
#pragma unroll
    for (int d = kMaxRank - 2; d >= 0; --d) {
      if (d >= p.rank - 1) continue;
      int64_t c = 0;
      rest = divMod(rest, p.idxDims[d], &c);
      at += c * p.idxStrides[d];
      from += c * p.dataStrides[d];
    }
    const int64_t col = piece * kVec;
    WordVector<T, kVec> w;
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      const int64_t x = normalizeIndex(loadIndex(indices, is64, at + col + v), p.axisDim);
      w.v[v] = x < 0 ? T{} : data[from + x];
    }
    *reinterpret_cast<WordVector<T, kVec>*>(out + row * cols + col) = w;
  }
}

// The slot of index tuple t (NdParams' addressing), -1 when an index is outside [-dim, dim).
__device__ __forceinline__ int64_t ndSlot(const NdParams& p, const void* indices, bool is64,
                                          int64_t t) {
  int64_t slot = p.perBatch == 0 ? 0 : (t / p.perBatch) * p.batchSlots;
  for (int j = 0; j < p.k; ++j) {
    const int64_t v = normalizeIndex(loadIndex(indices, is64, t * p.k + j), p.dims[j]);
    if (v < 0) return -1;
    slot += v * p.slotStrides[j];
  }
  return slot;
}

template <class V>
__global__ void gatherNdKernel(const V* data, const void* indices, bool is64, V* out, NdParams p,
                               int64_t slice, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t s = 0;
    const int64_t t = divMod(i, slice, &s);
    const int64_t slot = ndSlot(p, indices, is64, t);
    out[i] = slot < 0 ? V{} : data[slot * slice + s];
  }
}

// ============================ Scatter family ============================

// Where update t (a row of the updates) lands, in units of rows of the output; -1 skips.
struct NdLocator {
  NdParams p;
  const void* indices = nullptr;
  bool is64 = false;
  __device__ int64_t operator()(int64_t t) const { return ndSlot(p, indices, is64, t); }
};
struct ElementLocator {
  ElementParams p;
  const void* indices = nullptr;
  bool is64 = false;
  __device__ int64_t operator()(int64_t t) const { return elementOffset(p, indices, is64, t); }
};

// winner[slot] = 1 + the last update index landing on slot.
template <class L>
__global__ void markLastWriterKernel(L locate, unsigned long long* winner, int64_t n) {
  KILN_DM_GRID_LOOP(t, n) {
    const int64_t slot = locate(t);
    if (slot >= 0) atomicMax(&winner[slot], static_cast<unsigned long long>(t + 1));
  }
}

// Reduction "none": each row lands where it points, unless a later row (winner) does too.
template <class L, class V>
__global__ void scatterRowsKernel(L locate, const unsigned long long* winner, const V* updates,
                                  V* out, int64_t row, int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t s = 0;
    const int64_t t = divMod(i, row, &s);
    const int64_t slot = locate(t);
    if (slot < 0) continue;
    if (winner != nullptr && winner[slot] != static_cast<unsigned long long>(t + 1)) continue;
    out[slot * row + s] = updates[i];
  }
}

// ScatterND reductions: the slice's elements in parallel, the updates in index order.
template <class T>
__global__ void scatterNdReduceKernel(NdLocator locate, const T* updates, T* out, int64_t tuples,
                                      int64_t slice, int op) {
  KILN_DM_GRID_LOOP(s, slice) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t slot = locate(t);
      if (slot < 0) continue;
      T* dst = out + slot * slice + s;
      *dst = applyReduction(*dst, updates[t * slice + s], op);
    }
  }
}

// ScatterElements by lines: every position but the axis in parallel, the axis in order.
template <class T>
__global__ void scatterElementsLinesKernel(ElementParams p, const void* indices, bool is64,
                                           const T* updates, T* out, int op, int64_t lines) {
  KILN_DM_GRID_LOOP(line, lines) {
    int64_t rest = line;
    int64_t idxBase = 0, dataBase = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= p.rank || d == p.axis) continue;
      int64_t c = 0;
      rest = divMod(rest, p.idxDims[d], &c);
      idxBase += c * p.idxStrides[d];
      dataBase += c * p.dataStrides[d];
    }
    const int64_t len = p.idxDims[p.axis];
    for (int64_t j = 0; j < len; ++j) {
      const int64_t pos = idxBase + j * p.idxStrides[p.axis];
      const int64_t v = normalizeIndex(loadIndex(indices, is64, pos), p.axisDim);
      if (v < 0) continue;
      T* dst = out + dataBase + v * p.dataStrides[p.axis];
      *dst = applyReduction(*dst, updates[pos], op);
    }
  }
}

// ============================ ReverseSequence ============================

// x is [steps, batch, inner] (timeFirst) or [batch, steps, inner]; rows of `inner` words.
template <class V>
__global__ void reverseSequenceKernel(const V* in, V* out, const void* lens, bool is64,
                                      bool timeFirst, int64_t dim1, int64_t steps, int64_t inner,
                                      int64_t n) {
  KILN_DM_GRID_LOOP(i, n) {
    int64_t c = 0, a = 0;
    const int64_t rest = divMod(i, inner, &c);
    const int64_t z = divMod(rest, dim1, &a);
    const int64_t b = timeFirst ? a : z;
    const int64_t t = timeFirst ? z : a;
    int64_t len = loadIndex(lens, is64, b);
    len = len < 0 ? 0 : (len > steps ? steps : len);
    const int64_t from = t < len ? len - 1 - t : t;
    const int64_t row = timeFirst ? from * dim1 + b : b * dim1 + from;
    out[i] = in[row * inner + c];
  }
}

// The last-writer marking, then the rows (gather_scatter_impl.h's ScatterRows).
template <class L>
Status scatterLastWins(const L& locate, const ScatterRows& s, cudaStream_t stream) {
  if (s.rows > 1) {
    markLastWriterKernel<<<gridFor(s.rows), kBlockSize, 0, stream>>>(locate, s.winner, s.rows);
    KILN_CUDA_CHECK_LAUNCH("markLastWriterKernel");
  }
  const unsigned long long* winner = s.rows > 1 ? s.winner : nullptr;
  KILN_DM_DISPATCH_WIDTH(s.width, {
    scatterRowsKernel<<<gridFor(s.n), kBlockSize, 0, stream>>>(
        locate, winner, static_cast<const V*>(s.updates), static_cast<V*>(s.out), s.row, s.n);
  });
  KILN_CUDA_CHECK_LAUNCH("scatterRowsKernel");
  return Status::ok();
}

}  // namespace

namespace dm {

Status launchGather(const GatherLaunch& g, cudaStream_t stream) {
  KILN_DM_DISPATCH_WIDTH(g.width, {
    gatherKernel<<<gridFor(g.n), kBlockSize, 0, stream>>>(static_cast<const V*>(g.data), g.indices,
                                                          g.is64, static_cast<V*>(g.out), g.dim,
                                                          g.count, g.inner, g.n);
  });
  KILN_CUDA_CHECK_LAUNCH("gatherKernel");
  return Status::ok();
}

Status launchGatherElements(const void* data, DeviceIndices indices, void* out,
                            const ElementParams& params, int64_t n, int elementBytes,
                            cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(elementBytes, [&](auto element) {
    using T = decltype(element);
    gatherElementsKernel<<<gridFor(n), kBlockSize, 0, stream>>>(
        static_cast<const T*>(data), indices.data, indices.is64, static_cast<T*>(out), params, n);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("gatherElementsKernel");
  return Status::ok();
}

Status launchBroadcastGatherElements(const void* data, DeviceIndices indices, void* out,
                                     const ElementParams& params, int64_t n, int elementBytes,
                                     cudaStream_t stream) {
  const int last = params.rank - 1;
  const int64_t cols = params.idxDims[last];
  const bool rowsOfLastAxis = params.axis == last && cols > 0 && params.idxStrides[last] == 1 &&
                              params.dataStrides[last] == 1;
  KILN_RETURN_IF_ERROR(dispatchWordOfSize(elementBytes, [&](auto element) {
    using T = decltype(element);
    constexpr int kVec = 16 / sizeof(T);
    const bool aligned = reinterpret_cast<uintptr_t>(out) % 16 == 0;
    if (rowsOfLastAxis && aligned && cols % kVec == 0) {
      const int64_t rows = n / cols;
      broadcastGatherRowsKernel<T, kVec><<<gridFor(rows * (cols / kVec)), kBlockSize, 0, stream>>>(
          static_cast<const T*>(data), indices.data, indices.is64, static_cast<T*>(out), params,
          rows, cols);
    } else if (rowsOfLastAxis) {
      const int64_t rows = n / cols;
      broadcastGatherRowsKernel<T, 1><<<gridFor(n), kBlockSize, 0, stream>>>(
          static_cast<const T*>(data), indices.data, indices.is64, static_cast<T*>(out), params,
          rows, cols);
    } else {
      broadcastGatherElementsKernel<<<gridFor(n), kBlockSize, 0, stream>>>(
          static_cast<const T*>(data), indices.data, indices.is64, static_cast<T*>(out), params, n);
    }
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("broadcastGatherElementsKernel");
  return Status::ok();
}

Status launchGatherNd(const void* data, DeviceIndices indices, void* out, const NdParams& params,
                      int64_t slice, int64_t n, int width, cudaStream_t stream) {
  KILN_DM_DISPATCH_WIDTH(width, {
    gatherNdKernel<<<gridFor(n), kBlockSize, 0, stream>>>(static_cast<const V*>(data), indices.data,
                                                          indices.is64, static_cast<V*>(out),
                                                          params, slice, n);
  });
  KILN_CUDA_CHECK_LAUNCH("gatherNdKernel");
  return Status::ok();
}

Status launchScatterRows(const NdParams& params, const ScatterRows& scatter, cudaStream_t stream) {
  NdLocator locate;
  locate.p = params;
  locate.indices = scatter.indices.data;
  locate.is64 = scatter.indices.is64;
  return scatterLastWins(locate, scatter, stream);
}

Status launchScatterRows(const ElementParams& params, const ScatterRows& scatter,
                         cudaStream_t stream) {
  ElementLocator locate;
  locate.p = params;
  locate.indices = scatter.indices.data;
  locate.is64 = scatter.indices.is64;
  return scatterLastWins(locate, scatter, stream);
}

Status launchScatterNdReduce(const NdParams& params, DeviceIndices indices, const void* updates,
                             void* out, DataType type, int64_t tuples, int64_t slice, int op,
                             cudaStream_t stream) {
  NdLocator locate;
  locate.p = params;
  locate.indices = indices.data;
  locate.is64 = indices.is64;
  KILN_RETURN_IF_ERROR(dispatchDeviceType<kScatterReductionTypes>(type, [&](auto element) {
    using T = decltype(element);
    scatterNdReduceKernel<<<gridFor(slice), kBlockSize, 0, stream>>>(
        locate, static_cast<const T*>(updates), static_cast<T*>(out), tuples, slice, op);
    return Status::ok();
  }));
  KILN_CUDA_CHECK_LAUNCH("scatterNdReduceKernel");
  return Status::ok();
}

Status launchScatterElementsLines(const ElementParams& params, DeviceIndices indices,
                                  const void* updates, void* out, DataType type, int op,
                                  int64_t lines, cudaStream_t stream) {
  auto launch = [&](auto element) {
    using T = decltype(element);
    scatterElementsLinesKernel<<<gridFor(lines), kBlockSize, 0, stream>>>(
        params, indices.data, indices.is64, static_cast<const T*>(updates), static_cast<T*>(out),
        op, lines);
    return Status::ok();
  };
  if (op == kReduceNone) {
    KILN_RETURN_IF_ERROR(dispatchWordOfSize(dataTypeSize(type), launch));
  } else {
    KILN_RETURN_IF_ERROR(dispatchDeviceType<kScatterReductionTypes>(type, launch));
  }
  KILN_CUDA_CHECK_LAUNCH("scatterElementsLinesKernel");
  return Status::ok();
}

Status launchReverseSequence(const ReverseSequenceLaunch& r, cudaStream_t stream) {
  KILN_DM_DISPATCH_WIDTH(r.width, {
    reverseSequenceKernel<<<gridFor(r.n), kBlockSize, 0, stream>>>(
        static_cast<const V*>(r.in), static_cast<V*>(r.out), r.lens.data, r.lens.is64, r.timeFirst,
        r.dim1, r.steps, r.inner, r.n);
  });
  KILN_CUDA_CHECK_LAUNCH("reverseSequenceKernel");
  return Status::ok();
}

}  // namespace dm
}  // namespace kiln::cuda
