// Element-moving ops added in later opsets, plus CumProd: ReverseSequence (10),
// TensorScatter (24, the KV-cache update), BitCast (26), CumProd (26) and the tensor
// forms of OptionalHasElement / OptionalGetElement (18).
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "backends/cpu/ops/elementwise.h"
#include "ops/scalar_inputs.h"

namespace kiln::cpu {
namespace {

// Product of the dims in [begin, end).
int64_t dimProduct(const Shape& shape, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t d = begin; d < end; ++d) n *= shape[d];
  return n;
}

// ---- ReverseSequence: for batch b, reverses the first sequence_lens[b] steps along
// time_axis and copies the rest. batch_axis and time_axis are 0 and 1 in some order.

Status reverseSequenceKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const int64_t batchAxis = ctx.node().attrInt("batch_axis", 1);
  const int64_t timeAxis = ctx.node().attrInt("time_axis", 0);
  if (x.rank() < 2) return ctx.error("input must have rank >= 2, got " + shapeToString(x.shape()));
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0))) {
    return ctx.error("batch_axis and time_axis must be 0 and 1 in some order");
  }
  const std::vector<int64_t> lens = ctx.input(1).toInt64Vector();
  const int64_t batch = x.dim(static_cast<int>(batchAxis));
  const int64_t steps = x.dim(static_cast<int>(timeAxis));
  if (ctx.input(1).rank() != 1 || static_cast<int64_t>(lens.size()) != batch) {
    return ctx.error("sequence_lens must be 1-D of the batch size " + std::to_string(batch));
  }
  for (int64_t len : lens) {
    if (len < 0 || len > steps) {
      return ctx.error("sequence length " + std::to_string(len) + " is outside [0, " +
                       std::to_string(steps) + "]");
    }
  }
  const int64_t inner = dimProduct(x.shape(), 2, x.rank());
  const int64_t batchStride = batchAxis == 0 ? steps * inner : inner;
  const int64_t timeStride = timeAxis == 0 ? batch * inner : inner;
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  return dispatchByElementSize(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = elementData<T>(x);
    T* dst = elementData<T>(y);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
        const T* in = src + b * batchStride + from * timeStride;
        T* out = dst + b * batchStride + t * timeStride;
        std::copy(in, in + inner, out);
      }
    }
    return Status::ok();
  });
}

// ---- TensorScatter: writes update into a copy of past_cache along `axis` (the sequence
// axis, default -2) starting at write_indices[b] for batch b (dim 0). Mode "circular"
// wraps positions modulo the cache length; "linear" requires them to fit.

Status tensorScatterKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& cache = ctx.input(0);
  const Tensor& update = ctx.input(1);
  int64_t axis = 0;
  KILN_RETURN_IF_ERROR(
      resolveAxis(ctx, ctx.node().attrInt("axis", -2), cache.rank(), "axis", &axis));
  if (axis == 0) return ctx.error("axis must not be the batch axis 0");
  if (update.type() != cache.type() || update.rank() != cache.rank()) {
    return ctx.error("update must have past_cache's type and rank");
  }
  for (int d = 0; d < cache.rank(); ++d) {
    if (d == axis ? update.dim(d) > cache.dim(d) : update.dim(d) != cache.dim(d)) {
      return ctx.error("update shape " + shapeToString(update.shape()) +
                       " does not fit past_cache shape " + shapeToString(cache.shape()) +
                       " along axis " + std::to_string(axis));
    }
  }
  const std::string mode = ctx.node().attrString("mode", "linear");
  if (mode != "linear" && mode != "circular") return ctx.error("unknown mode '" + mode + "'");
  const int64_t batch = cache.dim(0);
  std::vector<int64_t> starts(static_cast<size_t>(batch), 0);
  if (const Tensor* w = ctx.inputOrNull(2)) {
    if (w->rank() != 1 || w->dim(0) != batch) {
      return ctx.error("write_indices must be 1-D of the batch size " + std::to_string(batch));
    }
    starts = w->toInt64Vector();
  }
  const int64_t maxLen = cache.dim(static_cast<int>(axis));
  const int64_t seqLen = update.dim(static_cast<int>(axis));
  for (int64_t& start : starts) {
    // Compared, not added (seqLen <= maxLen): a write index of INT64_MAX overflowed
    // `start + seqLen` here and `start + s` below.
    if (start < 0 || (mode == "linear" && start > maxLen - seqLen) || (maxLen == 0 && seqLen > 0)) {
      return ctx.error("write index " + std::to_string(start) + " with " + std::to_string(seqLen) +
                       " updates does not fit a cache of length " + std::to_string(maxLen));
    }
    if (maxLen > 0) start %= maxLen;  // circular: the same positions, (start + s) % maxLen
  }
  const int64_t perBatch = dimProduct(cache.shape(), 1, axis);  // dims between batch and axis
  const int64_t inner = dimProduct(cache.shape(), axis + 1, cache.rank());
  Tensor& y = ctx.allocateOutput(0, cache.type(), cache.shape());
  return dispatchByElementSize(cache.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* past = elementData<T>(cache);
    const T* upd = elementData<T>(update);
    T* out = elementData<T>(y);
    std::copy(past, past + cache.numel(), out);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t p = 0; p < perBatch; ++p) {
        const int64_t row = b * perBatch + p;
        for (int64_t s = 0; s < seqLen; ++s) {
          const int64_t pos = (starts[b] + s) % maxLen;  // == starts[b] + s in linear mode
          const T* from = upd + (row * seqLen + s) * inner;
          std::copy(from, from + inner, out + (row * maxLen + pos) * inner);
        }
      }
    }
    return Status::ok();
  });
}

// ---- BitCast: reinterprets each element's bits as another type of the same width.

int bitWidth(DataType type) {
  const int packed = packedElementBits(type);
  return packed ? packed : static_cast<int>(dataTypeSize(type)) * 8;
}

Status bitCastKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  if (!ctx.node().hasAttr("to")) return ctx.error("attribute 'to' is required");
  const int64_t toCode = ctx.node().attrInt("to", 0);
  const DataType to = static_cast<DataType>(toCode);
  if (toCode <= 0 || toCode > kLastDataTypeCode || !isSupportedDataType(to)) {
    return ctx.unsupported("attribute 'to' = " + std::to_string(toCode) +
                           " is not a known data type");
  }
  if (x.type() == DataType::kString || to == DataType::kString) {
    return ctx.error("BitCast does not take or produce strings");
  }
  const int bits = bitWidth(x.type());
  if (bits != bitWidth(to)) {
    return ctx.error(std::string("cannot bit-cast ") + dataTypeName(x.type()) + " (" +
                     std::to_string(bits) + " bits) to " + dataTypeName(to) + " (" +
                     std::to_string(bitWidth(to)) + " bits)");
  }
  Tensor& y = ctx.allocateOutput(0, to, x.shape());
  if (x.numel() > 0) std::memcpy(y.rawData(), x.rawData(), x.byteSize());
  if (bits < 8) {
    // Sub-byte values sit one per byte; keep their bits and sign-extend signed targets.
    const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
    const bool isSigned = to == DataType::kInt4 || to == DataType::kInt2;
    uint8_t* p = y.data<uint8_t>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      uint8_t v = p[i] & mask;
      if (isSigned && (v >> (bits - 1))) v |= static_cast<uint8_t>(~mask);
      p[i] = v;
    }
  } else if (to == DataType::kBool) {
    uint8_t* p = y.data<uint8_t>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = p[i] != 0;  // keep bools canonical
  }
  return Status::ok();
}

// ---- CumProd: running products along the scalar `axis` input (CumSum's attributes).

template <class T>
void cumProd(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive,
             bool reverse) {
  // Integers multiply in uint64_t: wrapping like the narrow type, without signed overflow.
  using Acc = std::conditional_t<kIsFloat<T>, double, uint64_t>;
  std::vector<Acc> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), Acc(1));
    for (int64_t step = 0; step < n; ++step) {
      const int64_t k = reverse ? n - 1 - step : step;
      const int64_t base = (o * n + k) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const Acc v = static_cast<Acc>(static_cast<ComputeType<T>>(x[base + i]));
        if (!exclusive) acc[i] *= v;
        y[base + i] = static_cast<T>(static_cast<ComputeType<T>>(acc[i]));
        if (exclusive) acc[i] *= v;
      }
    }
  }
}

Status cumProdKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& axisIn = ctx.input(1);
  auto axisOr = ops::scalarAxisInput(axisIn, x.rank());
  if (!axisOr.isOk()) return ctx.error(axisOr.status().message());
  const int64_t axis = *axisOr;
  const bool exclusive = ctx.node().attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.node().attrInt("reverse", 0) != 0;
  const int64_t outer = dimProduct(x.shape(), 0, std::min<int64_t>(axis, x.rank()));
  const int64_t n = x.rank() == 0 ? 1 : x.dim(static_cast<int>(axis));
  const int64_t inner = x.rank() == 0 ? 1 : dimProduct(x.shape(), axis + 1, x.rank());
  Tensor& y = ctx.allocateOutput(0, x.type(), x.shape());
  return dispatchTypeSet<TypeSet::kNumeric>(ctx, x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cumProd(x.data<T>(), y.data<T>(), outer, n, inner, exclusive, reverse);
    return Status::ok();
  });
}

// ---- Optionals. Kiln values are tensors, so an optional is either a present tensor or
// an omitted input; optional sequences never reach these kernels.

Status optionalHasElementKernel(KernelContext& ctx) {
  Tensor& y = ctx.allocateOutput(0, DataType::kBool, {});
  y.data<bool>()[0] = ctx.hasInput(0);
  return Status::ok();
}

Status optionalGetElementKernel(KernelContext& ctx) {
  if (!ctx.hasInput(0)) return ctx.error("the optional input is empty");
  ctx.setOutput(0, ctx.input(0));
  return Status::ok();
}

}  // namespace

void registerTensorExtraKernels(KernelRegistry& registry) {
  registry.add("ReverseSequence", 10, 1000, &reverseSequenceKernel);  // 28 adds types only
  registry.add("TensorScatter", 24, 1000, &tensorScatterKernel);
  registry.add("BitCast", 26, 1000, &bitCastKernel);
  registry.add("CumProd", 26, 1000, &cumProdKernel);
  registry.add("OptionalHasElement", 15, 1000, &optionalHasElementKernel);
  registry.add("OptionalGetElement", 15, 1000, &optionalGetElementKernel);
}

}  // namespace kiln::cpu
