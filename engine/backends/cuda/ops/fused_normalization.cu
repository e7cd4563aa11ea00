// CUDA kernels of the ai.kiln normalizations the passes create (contract and
// reference: cpu/ops/fused_normalization.cpp):
//   ScaledMaskedSoftmax(X, [M]; scale)     Y = softmax(X * scale + M) over the last axis
//   AddLayerNorm(A, B, gamma, [beta]; eps)  S = A + B, Y = LayerNorm(S) [, S]
// Storage float32, float16 or bfloat16 (one type for every input), arithmetic in
// float. A row of up to kWarpRowLimit elements belongs to one warp and stays in its
// registers between the passes (max/sum, then mean/variance), so X, M, A and B are
// read once and Y written once; each lane moves packs of 4 elements (16 bytes of
// float32) where the last dims are contiguous and aligned. Longer rows get a block
// each and re-read their inputs per pass. Inputs broadcast to the output as numpy
// does: each row finds its start through the broadcast strides, and a broadcast
// last dim is read with stride 0 (through single-element packs).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/type_dispatch.cuh"
#include "backends/cuda/row_kernels.cuh"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

constexpr int kPack = 4;           // elements per vector access
constexpr int kWarpsPerBlock = 4;  // warp-per-row kernels: 128 threads

// Where each row of an input starts when the input is broadcast to the output: the
// output's leading dims (all but the last) with the input's strides, adjacent dims
// merged where one continues the other (BERT's [B, 1, S, S] mask against
// [B, H, S, S] scores: three dims, strides S*S, 0, S). 32-bit division: the
// per-row index math must stay small next to a row of 128 elements.
struct RowMap {
  bool direct = true;  // laid out like the output: row r starts at r * n
  int rank = 0;
  uint32_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t lastStride = 1;  // 0 when the input's last dim is broadcast
};

__device__ __forceinline__ int64_t rowStart(const RowMap& map, int64_t row, int64_t n) {
  if (map.direct) return row * n;
  uint32_t r = static_cast<uint32_t>(row);
  int64_t offset = 0;
  for (int d = map.rank - 1; d > 0; --d) {
    const uint32_t q = r / map.dims[d];
    offset += static_cast<int64_t>(r - q * map.dims[d]) * map.strides[d];
    r = q;
  }
  return offset + static_cast<int64_t>(r) * map.strides[0];
}

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// V elements of a row from element k on, as float (V == 1 honours a stride of 0).
template <int V, class T>
__device__ __forceinline__ void loadPack(const T* row, int64_t k, int64_t stride, float* out) {
  if constexpr (V == 1) {
    out[0] = toFloat(row[k * stride]);
  } else {
    const Pack<T, V> p = *reinterpret_cast<const Pack<T, V>*>(row + k);
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = toFloat(p.v[j]);
  }
}

template <int V, class T>
__device__ __forceinline__ void storePack(T* row, int64_t k, const float* in) {
  Pack<T, V> p;
#pragma unroll
  for (int j = 0; j < V; ++j) p.v[j] = fromFloat<T>(in[j]);
  *reinterpret_cast<Pack<T, V>*>(row + k) = p;
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) v += __shfl_xor_sync(kFullMask, v, mask);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, mask));
  return v;
}

// Sum or maximum over the block; every thread gets it. `partial` holds one per warp.
template <bool kMax>
__device__ float blockReduce(float v, float* partial) {
  v = kMax ? warpMax(v) : warpSum(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
    v = kMax ? fmaxf(v, partial[w]) : v + partial[w];
  __syncthreads();  // `partial` is reused by the next call
  return v;
}

// ---- ScaledMaskedSoftmax -------------------------------------------------------

struct SoftmaxArgs {
  int64_t rows = 0, n = 0;
  float scale = 1.f;
  RowMap x, mask;
};

// One warp per row; each lane holds kChunks packs of V values.
template <class T, int V, int kChunks>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    softmaxWarpRows(const T* x, const T* mask, T* y, SoftmaxArgs a) {
  const RowGroup g = rowGroup(true);
  for (int64_t row = g.first; row < a.rows; row += g.step) {
    const T* xr = x + rowStart(a.x, row, a.n);
    const T* mr = mask ? mask + rowStart(a.mask, row, a.n) : nullptr;
    float v[kChunks * V];
    float maxValue = -INFINITY;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t k = (int64_t(c) * 32 + g.lane) * V;
      float* vc = v + c * V;
      if (k >= a.n) continue;
      loadPack<V>(xr, k, a.x.lastStride, vc);
      float m[V] = {};
      if (mr) loadPack<V>(mr, k, a.mask.lastStride, m);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        vc[j] = vc[j] * a.scale + m[j];
        maxValue = fmaxf(maxValue, vc[j]);
      }
    }
    maxValue = warpMax(maxValue);
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if ((int64_t(c) * 32 + g.lane) * V >= a.n) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        v[c * V + j] = expf(v[c * V + j] - maxValue);
        sum += v[c * V + j];
      }
    }
    const float inv = 1.f / warpSum(sum);
    T* yr = y + row * a.n;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t k = (int64_t(c) * 32 + g.lane) * V;
      if (k >= a.n) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) v[c * V + j] *= inv;
      storePack<V>(yr, k, v + c * V);
    }
  }
}

// One block per row (rows longer than a warp holds): max, sum and write passes,
// each recomputing X * scale + M from memory.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    softmaxBlockRows(const T* x, const T* mask, T* y, SoftmaxArgs a) {
  __shared__ float partial[32];
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* xr = x + rowStart(a.x, row, a.n);
    const T* mr = mask ? mask + rowStart(a.mask, row, a.n) : nullptr;
    auto value = [&](int64_t k) {
      return toFloat(xr[k * a.x.lastStride]) * a.scale +
             (mr ? toFloat(mr[k * a.mask.lastStride]) : 0.f);
    };
    float maxValue = -INFINITY;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) maxValue = fmaxf(maxValue, value(k));
    maxValue = blockReduce<true>(maxValue, partial);
    float sum = 0.f;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) sum += expf(value(k) - maxValue);
    const float inv = 1.f / blockReduce<false>(sum, partial);
    T* yr = y + row * a.n;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x)
      yr[k] = fromFloat<T>(expf(value(k) - maxValue) * inv);
  }
}

// ---- AddLayerNorm --------------------------------------------------------------

struct AddNormArgs {
  int64_t rows = 0, n = 0;
  float epsilon = 1e-5f;
  RowMap a, b;
};

// One warp per row: S = A + B stays in registers for the mean, the variance and Y.
template <class T, int V, int kChunks>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    addNormWarpRows(const T* a, const T* b, const T* gamma, const T* beta, T* y, T* sumOut,
                    AddNormArgs p) {
  const RowGroup g = rowGroup(true);
  for (int64_t row = g.first; row < p.rows; row += g.step) {
    const T* ar = a + rowStart(p.a, row, p.n);
    const T* br = b + rowStart(p.b, row, p.n);
    float s[kChunks * V];
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t k = (int64_t(c) * 32 + g.lane) * V;
      float* sc = s + c * V;
      if (k >= p.n) continue;
      float bv[V];
      loadPack<V>(ar, k, p.a.lastStride, sc);
      loadPack<V>(br, k, p.b.lastStride, bv);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        sc[j] += bv[j];
        sum += sc[j];
      }
      if (sumOut) storePack<V>(sumOut + row * p.n, k, sc);
    }
    const float mean = warpSum(sum) / static_cast<float>(p.n);
    float squares = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if ((int64_t(c) * 32 + g.lane) * V >= p.n) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float d = s[c * V + j] - mean;
        squares += d * d;
      }
    }
    const float invStd = 1.f / sqrtf(warpSum(squares) / static_cast<float>(p.n) + p.epsilon);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t k = (int64_t(c) * 32 + g.lane) * V;
      if (k >= p.n) continue;
      float gv[V], bv[V] = {};
      loadPack<V>(gamma, k, 1, gv);
      if (beta) loadPack<V>(beta, k, 1, bv);
#pragma unroll
      for (int j = 0; j < V; ++j) s[c * V + j] = (s[c * V + j] - mean) * invStd * gv[j] + bv[j];
      storePack<V>(y + row * p.n, k, s + c * V);
    }
  }
}

// One block per long row: sum, squared deviations and output passes over A + B.
template <class T>
__global__ void __launch_bounds__(kMaxRowBlock)
    addNormBlockRows(const T* a, const T* b, const T* gamma, const T* beta, T* y, T* sumOut,
                     AddNormArgs p) {
  __shared__ float partial[32];
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* ar = a + rowStart(p.a, row, p.n);
    const T* br = b + rowStart(p.b, row, p.n);
    auto value = [&](int64_t k) {
      return toFloat(ar[k * p.a.lastStride]) + toFloat(br[k * p.b.lastStride]);
    };
    float sum = 0.f;
    for (int64_t k = threadIdx.x; k < p.n; k += blockDim.x) {
      const float s = value(k);
      sum += s;
      if (sumOut) sumOut[row * p.n + k] = fromFloat<T>(s);
    }
    const float mean = blockReduce<false>(sum, partial) / static_cast<float>(p.n);
    float squares = 0.f;
    for (int64_t k = threadIdx.x; k < p.n; k += blockDim.x) {
      const float d = value(k) - mean;
      squares += d * d;
    }
    const float var = blockReduce<false>(squares, partial) / static_cast<float>(p.n);
    const float invStd = 1.f / sqrtf(var + p.epsilon);
    for (int64_t k = threadIdx.x; k < p.n; k += blockDim.x) {
      const float v =
          (value(k) - mean) * invStd * toFloat(gamma[k]) + (beta ? toFloat(beta[k]) : 0.f);
      y[row * p.n + k] = fromFloat<T>(v);
    }
  }
}

// ---- Host side -----------------------------------------------------------------

// "" when every present input has one float storage type (float64 runs on the host).
std::string supportsOneFloatStorage(const Node& node, const std::vector<DataType>& types) {
  DataType first = DataType::kUndefined;
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
    if (first != DataType::kUndefined && t != first) return "inputs of mixed float types";
    first = t;
  }
  return "";
}

// Numpy broadcasting of two shapes, with the node's error when they do not fit.
Status broadcastShape(const GpuKernelContext& ctx, const Shape& a, const Shape& b,
                      const char* names, Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return ctx.error(std::string(names) + " of shapes " + shapeToString(a) + " and " +
                       shapeToString(b) + " do not broadcast");
    (*out)[i] = da == 1 ? db : da;
  }
  return Status::ok();
}

Status rowMap(const GpuKernelContext& ctx, const Shape& in, const Shape& out, RowMap* map) {
  map->direct = shapeNumel(in) == shapeNumel(out);
  if (map->direct) return Status::ok();
  if (out.size() > static_cast<size_t>(kMaxRank))
    return ctx.unsupported("a broadcast input of rank > " + std::to_string(kMaxRank));
  if (shapeNumel(out) / std::max<int64_t>(out.back(), 1) > int64_t{UINT32_MAX})
    return ctx.unsupported("a broadcast input over more than 2^32 rows");
  const ShapeInfo info = broadcastStrides(in, out);
  map->lastStride = info.strides[out.size() - 1];
  map->rank = 0;
  for (size_t d = 0; d + 1 < out.size(); ++d) {
    if (out[d] == 1) continue;
    const int64_t stride = info.strides[d];
    const int last = map->rank - 1;
    if (last >= 0 && map->strides[last] == stride * out[d]) {  // dim d continues the last
      map->dims[last] *= static_cast<uint32_t>(out[d]);
      map->strides[last] = stride;
      continue;
    }
    map->dims[map->rank] = static_cast<uint32_t>(out[d]);
    map->strides[map->rank++] = stride;
  }
  return Status::ok();
}

Status requireLastAxis(const GpuKernelContext& ctx, int64_t rank) {
  const int64_t axis = ctx.node().attrInt("axis", -1);
  if (axis == -1 || (rank > 0 && axis == rank - 1)) return Status::ok();
  return ctx.error("attribute 'axis' " + std::to_string(axis) + " is not the last axis of rank " +
                   std::to_string(rank) + " (only the last axis is supported)");
}

bool aligned(const void* p, size_t bytes) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Packs of kPack elements when every row is contiguous and aligned to them.
template <class T>
bool packable(int64_t n, std::initializer_list<const RowMap*> maps,
              std::initializer_list<const void*> pointers) {
  if (n % kPack != 0) return false;
  for (const RowMap* m : maps)
    if (m && m->lastStride != 1) return false;
  for (const void* p : pointers)
    if (!aligned(p, sizeof(T) * kPack)) return false;
  return true;
}

// Calls launch(integral_constant<int, V>, integral_constant<int, K>) with the pack
// width V and the packs per lane K (a power of two) that cover a row of n <= 1024.
template <class F>
Status forWarpShape(int64_t n, bool pack, F&& launch) {
  const int64_t packs = pack ? n / kPack : n;
  const int64_t perLane = (packs + 31) / 32;
  auto chunks = [&](auto v) -> Status {
    if (perLane <= 1) return launch(v, std::integral_constant<int, 1>{});
    if (perLane <= 2) return launch(v, std::integral_constant<int, 2>{});
    if (perLane <= 4) return launch(v, std::integral_constant<int, 4>{});
    if (perLane <= 8) return launch(v, std::integral_constant<int, 8>{});
    if constexpr (decltype(v)::value == 1) {
      if (perLane <= 16) return launch(v, std::integral_constant<int, 16>{});
      return launch(v, std::integral_constant<int, 32>{});
    }
    return Status(StatusCode::kInternal, "row too long for one warp");
  };
  return pack ? chunks(std::integral_constant<int, kPack>{})
              : chunks(std::integral_constant<int, 1>{});
}

unsigned warpGrid(int64_t rows) {
  return gridFor(rows * 32, kWarpsPerBlock * 32);
}

unsigned blockGrid(int64_t rows) {
  return static_cast<unsigned>(std::min<int64_t>(rows, 65535LL * 32));
}

Status scaledMaskedSoftmaxKernel(GpuKernelContext& ctx) {
  if (ctx.inputCount() < 1 || !ctx.hasInput(0)) return ctx.error("input 'X' is missing");
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor* mask = ctx.inputCount() > 1 && ctx.hasInput(1) ? &ctx.input(1) : nullptr;
  Shape shape = x.shape;
  if (mask) KILN_RETURN_IF_ERROR(broadcastShape(ctx, x.shape, mask->shape, "X and M", &shape));
  if (shape.empty()) return ctx.error("input 'X' must have rank >= 1");
  KILN_RETURN_IF_ERROR(requireLastAxis(ctx, static_cast<int64_t>(shape.size())));
  SoftmaxArgs args;
  args.n = shape.back();
  args.rows = args.n == 0 ? 0 : shapeNumel(shape) / args.n;
  args.scale = ctx.node().attrFloat("scale", 1.0f);
  KILN_RETURN_IF_ERROR(rowMap(ctx, x.shape, shape, &args.x));
  if (mask) KILN_RETURN_IF_ERROR(rowMap(ctx, mask->shape, shape, &args.mask));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, shape));
  if (args.rows == 0) return Status::ok();
  return dispatchDeviceType(ctx, x.type, device_types::kStorageFloats, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* m = mask ? mask->as<const T>() : nullptr;
    if (args.n > kWarpRowLimit) {
      softmaxBlockRows<T><<<blockGrid(args.rows), kBlockSize, 0, ctx.stream()>>>(x.as<const T>(), m,
                                                                                 y.as<T>(), args);
      KILN_CUDA_CHECK_LAUNCH("softmaxBlockRows");
      return Status::ok();
    }
    const bool pack =
        packable<T>(args.n, {&args.x, mask ? &args.mask : nullptr}, {x.data, m, y.data});
    ctx.setImplementation(std::string("kiln warp-per-row softmax") + (pack ? ", packs of 4" : ""));
    return forWarpShape(args.n, pack, [&](auto v, auto k) -> Status {
      softmaxWarpRows<T, decltype(v)::value, decltype(k)::value>
          <<<warpGrid(args.rows), kWarpsPerBlock * 32, 0, ctx.stream()>>>(x.as<const T>(), m,
                                                                          y.as<T>(), args);
      KILN_CUDA_CHECK_LAUNCH("softmaxWarpRows");
      return Status::ok();
    });
  });
}

// gamma and beta: [n] in A's storage type.
Status checkParam(const GpuKernelContext& ctx, const DeviceTensor& t, const char* name,
                  DataType type, int64_t n) {
  if (t.type != type)
    return ctx.unsupported(std::string("input '") + name + "' of type " + dataTypeName(t.type) +
                           " with A of type " + dataTypeName(type));
  if (t.rank() != 1 || t.shape[0] != n)
    return ctx.error(std::string("input '") + name + "' of shape " + shapeToString(t.shape) +
                     " must be [" + std::to_string(n) + "] (the normalized last dim)");
  return Status::ok();
}

Status addLayerNormKernel(GpuKernelContext& ctx) {
  if (ctx.inputCount() < 3 || !ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2))
    return ctx.error("AddLayerNorm needs inputs A, B and gamma");
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  if (b.type != a.type) return ctx.error("A and B must have one type");
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastShape(ctx, a.shape, b.shape, "A and B", &shape));
  if (shape.empty()) return ctx.error("inputs 'A' and 'B' must have rank >= 1");
  KILN_RETURN_IF_ERROR(requireLastAxis(ctx, static_cast<int64_t>(shape.size())));
  AddNormArgs args;
  args.n = shape.back();
  args.rows = args.n == 0 ? 0 : shapeNumel(shape) / args.n;
  args.epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  KILN_RETURN_IF_ERROR(checkParam(ctx, ctx.input(2), "gamma", a.type, args.n));
  const bool hasBeta = ctx.inputCount() > 3 && ctx.hasInput(3);
  if (hasBeta) KILN_RETURN_IF_ERROR(checkParam(ctx, ctx.input(3), "beta", a.type, args.n));
  KILN_RETURN_IF_ERROR(rowMap(ctx, a.shape, shape, &args.a));
  KILN_RETURN_IF_ERROR(rowMap(ctx, b.shape, shape, &args.b));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, a.type, shape));
  void* sum = nullptr;
  if (ctx.wantsOutput(1)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor s, ctx.allocateOutput(1, a.type, shape));
    sum = s.data;
  }
  if (args.rows == 0) return Status::ok();
  return dispatchDeviceType(ctx, a.type, device_types::kStorageFloats, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* gamma = ctx.input(2).as<const T>();
    const T* beta = hasBeta ? ctx.input(3).as<const T>() : nullptr;
    T* s = static_cast<T*>(sum);
    if (args.n > kWarpRowLimit) {
      addNormBlockRows<T><<<blockGrid(args.rows), kBlockSize, 0, ctx.stream()>>>(
          a.as<const T>(), b.as<const T>(), gamma, beta, y.as<T>(), s, args);
      KILN_CUDA_CHECK_LAUNCH("addNormBlockRows");
      return Status::ok();
    }
    const bool pack =
        packable<T>(args.n, {&args.a, &args.b}, {a.data, b.data, gamma, beta, y.data, sum});
    ctx.setImplementation(std::string("kiln warp-per-row add + layernorm") +
                          (pack ? ", packs of 4" : ""));
    return forWarpShape(args.n, pack, [&](auto v, auto k) -> Status {
      addNormWarpRows<T, decltype(v)::value, decltype(k)::value>
          <<<warpGrid(args.rows), kWarpsPerBlock * 32, 0, ctx.stream()>>>(
              a.as<const T>(), b.as<const T>(), gamma, beta, y.as<T>(), s, args);
      KILN_CUDA_CHECK_LAUNCH("addNormWarpRows");
      return Status::ok();
    });
  });
}

}  // namespace

void registerFusedNormalizationGpuKernels(GpuKernelRegistry& registry) {
  for (auto [op, fn] : {std::pair{"ScaledMaskedSoftmax", &scaledMaskedSoftmaxKernel},
                        std::pair{"AddLayerNorm", &addLayerNormKernel}}) {
    GpuKernelEntry entry;
    entry.domain = kKilnDomain;
    entry.opType = op;
    entry.fn = fn;
    entry.supports = &supportsOneFloatStorage;
    registry.add(entry);
  }
}

}  // namespace kiln::cuda
