// Einsum: numpy's einsum over any number of operands, with explicit ("ij->ji")
// or implicit ("ij,jk") outputs, ellipsis broadcasting, repeated labels
// (diagonals) and summed-out labels.
//
// Labels are char codes; ellipsis dims get ids from kEllipsisBase, right-aligned
// across operands. Two-operand products whose labels split cleanly into batch,
// row, column and contracted groups run as batched GEMM; everything else runs
// the generic loop: for each output element, sum over the contracted labels of
// the product of the operands, each read through per-label strides (a repeated
// label's strides add up, which walks the diagonal).
#include "backends/cpu/ops/einsum.h"

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/ops/matmul_plan.h"
#include "backends/cpu/ops/nn_common.h"
#include "ops/einsum_equation.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

constexpr int kEllipsisBase = ops::kEinsumEllipsisBase;

struct EinsumSpec {
  std::vector<std::vector<int>> inputs;  // labels per operand dim
  std::vector<int> output;
  std::vector<int64_t> sizes;  // per label id, -1 when unused
};

Status parseEquation(const std::string& eq, const std::vector<const Tensor*>& operands,
                     EinsumSpec* spec) {
  std::vector<int> ranks;
  for (const Tensor* t : operands) ranks.push_back(t->rank());
  ops::EinsumLabels labels;
  KILN_RETURN_IF_ERROR(ops::parseEinsumLabels(eq, ranks, &labels));
  spec->inputs = std::move(labels.inputs);
  spec->output = std::move(labels.output);
  const int total = labels.ellipsisDims;
  spec->sizes.assign(kEllipsisBase + total, -1);
  for (size_t i = 0; i < operands.size(); ++i) {
    for (size_t d = 0; d < spec->inputs[i].size(); ++d) {
      int64_t& size = spec->sizes[spec->inputs[i][d]];
      const int64_t dim = operands[i]->dim(static_cast<int>(d));
      if (size == -1 || size == 1) {
        size = dim;
      } else if (dim != size && dim != 1) {
        return invalidArgument("label sizes differ: " + std::to_string(size) + " vs " +
                               std::to_string(dim));
      }
    }
  }
  for (int64_t& size : spec->sizes)
    size = std::max<int64_t>(size, 1);  // ellipsis dims no operand has
  return Status::ok();
}

// Strides of operand i read along `labels` (0 for absent or broadcast dims).
std::vector<int64_t> labelStrides(const EinsumSpec& spec, size_t i, const Tensor& t,
                                  const std::vector<int>& labels) {
  const std::vector<int64_t> own = contiguousStrides(t.shape());
  std::vector<int64_t> strides(labels.size(), 0);
  for (size_t l = 0; l < labels.size(); ++l) {
    for (size_t d = 0; d < spec.inputs[i].size(); ++d) {
      if (spec.inputs[i][d] == labels[l] && t.dim(static_cast<int>(d)) != 1) strides[l] += own[d];
    }
  }
  return strides;
}

Shape labelShape(const EinsumSpec& spec, const std::vector<int>& labels) {
  Shape shape;
  for (int l : labels) shape.push_back(spec.sizes[l]);
  return shape;
}

// Integer sums and products wrap (computed unsigned: int64 operands overflowed the signed
// accumulator, undefined behaviour); floating ones accumulate in double.
template <class C, bool kFloat = std::is_floating_point_v<C>>
struct EinsumAccumulator {
  using type = double;
};
template <class C>
struct EinsumAccumulator<C, false> {
  using type = std::make_unsigned_t<decltype(C{} + C{})>;
};

template <class C>
Status genericEinsum(const EinsumSpec& spec, const std::vector<const Tensor*>& operands,
                     const std::vector<const C*>& data, C* y) {
  using Acc = typename EinsumAccumulator<C>::type;
  // An operand without elements has a label of extent 0: every output element is then
  // an empty sum (or there is none). Its data may be null: nothing is read (fuzz_onnx_import:
  // an empty operand broadcast against extent 1 was read through a null pointer).
  for (const Tensor* t : operands) {
    if (t->numel() != 0) continue;
    const int64_t outputs = shapeNumel(labelShape(spec, spec.output));
    std::fill(y, y + std::max<int64_t>(outputs, 0), static_cast<C>(0));
    return Status::ok();
  }
  std::vector<int> reduced;
  for (size_t l = 0; l < spec.sizes.size(); ++l) {
    const bool used = std::any_of(spec.inputs.begin(), spec.inputs.end(), [&](const auto& in) {
      return std::find(in.begin(), in.end(), static_cast<int>(l)) != in.end();
    });
    if (used && std::find(spec.output.begin(), spec.output.end(), l) == spec.output.end()) {
      reduced.push_back(static_cast<int>(l));
    }
  }
  const size_t count = operands.size();
  std::vector<std::vector<int64_t>> outStrides, redStrides;
  for (size_t i = 0; i < count; ++i) {
    outStrides.push_back(labelStrides(spec, i, *operands[i], spec.output));
    redStrides.push_back(labelStrides(spec, i, *operands[i], reduced));
  }
  // Offsets of every reduction step, operand-major, computed once. The table is held to the
  // tensor byte limit first: contracted labels multiply (eight labels of extent 2^10 were
  // 2^80 steps, past int64, and the table grew without bound).
  int64_t tableBytes = static_cast<int64_t>(count * sizeof(int64_t));
  for (int l : reduced) {
    if (__builtin_mul_overflow(tableBytes, spec.sizes[l], &tableBytes) ||
        tableBytes > tensorLimits().maxBytes) {
      return invalidArgument("the contracted labels of the equation span more than " +
                             std::to_string(tensorLimits().maxBytes) +
                             " bytes of reduction offsets");
    }
  }
  std::vector<int64_t> redOffsets;
  forEachBroadcast(labelShape(spec, reduced), redStrides,
                   [&](int64_t, const std::vector<int64_t>& off) {
                     redOffsets.insert(redOffsets.end(), off.begin(), off.end());
                   });
  const size_t steps = redOffsets.size() / count;
  forEachBroadcast(labelShape(spec, spec.output), outStrides,
                   [&](int64_t index, const std::vector<int64_t>& base) {
                     Acc sum = 0;
                     for (size_t s = 0; s < steps; ++s) {
                       Acc product = 1;
                       for (size_t i = 0; i < count; ++i) {
                         product *= static_cast<Acc>(data[i][base[i] + redOffsets[s * count + i]]);
                       }
                       sum += product;
                     }
                     y[index] = static_cast<C>(sum);
                   });
  return Status::ok();
}

// Label groups of a two-operand product that is a plain batched GEMM:
// Y[batch, m, n] = sum_k A[batch, m, k] * B[batch, k, n].
struct GemmSplit {
  std::vector<int> batch, m, n, k;
};

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool splitForGemm(const EinsumSpec& spec, const std::vector<const Tensor*>& operands,
                  GemmSplit* split) {
  if (operands.size() != 2) return false;
  const std::vector<int>&a = spec.inputs[0], &b = spec.inputs[1];
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<int>& labels = spec.inputs[i];
    for (size_t d = 0; d < labels.size(); ++d) {
      if (std::count(labels.begin(), labels.end(), labels[d]) > 1) return false;  // a diagonal
      if (operands[i]->dim(static_cast<int>(d)) != spec.sizes[labels[d]])
        return false;  // broadcast
    }
  }
  for (int l : a) {
    if (!contains(b, l) && !contains(spec.output, l)) return false;  // summed over A alone
    if (contains(b, l) && !contains(spec.output, l)) split->k.push_back(l);
  }
  for (int l : b) {
    if (!contains(a, l) && !contains(spec.output, l)) return false;
  }
  for (int l : spec.output) {
    if (contains(a, l) && contains(b, l)) {
      split->batch.push_back(l);
    } else if (contains(a, l)) {
      split->m.push_back(l);
    } else {
      split->n.push_back(l);
    }
  }
  return true;
}

std::vector<int> concatLabels(const std::vector<int>& x, const std::vector<int>& y,
                              const std::vector<int>& z) {
  std::vector<int> out = x;
  out.insert(out.end(), y.begin(), y.end());
  out.insert(out.end(), z.begin(), z.end());
  return out;
}

// Copies src (read through per-label strides) into a contiguous buffer laid out as `shape`.
template <class C>
void gatherStrided(const C* src, const Shape& shape, const std::vector<int64_t>& strides, C* dst) {
  forEachBroadcast(shape, {strides},
                   [&](int64_t i, const std::vector<int64_t>& off) { dst[i] = src[off[0]]; });
}

// Operand i laid out along `labels`: its own data when already in that order.
template <class C>
const C* arrange(const EinsumSpec& spec, size_t i, const Tensor& t, const C* data,
                 const std::vector<int>& labels, std::vector<C>* buffer) {
  if (spec.inputs[i] == labels) return data;
  buffer->resize(static_cast<size_t>(t.numel()));
  gatherStrided(data, labelShape(spec, labels), labelStrides(spec, i, t, labels), buffer->data());
  return buffer->data();
}

template <class C>
void gemmEinsum(const EinsumSpec& spec, const GemmSplit& split,
                const std::vector<const Tensor*>& operands, const std::vector<const C*>& data,
                C* y) {
  std::vector<C> aBuffer, bBuffer;
  const C* a = arrange(spec, 0, *operands[0], data[0], concatLabels(split.batch, split.m, split.k),
                       &aBuffer);
  const C* b = arrange(spec, 1, *operands[1], data[1], concatLabels(split.batch, split.k, split.n),
                       &bBuffer);
  const auto product = [&](const std::vector<int>& labels) {
    return shapeNumel(labelShape(spec, labels));
  };
  const int64_t batch = product(split.batch), m = product(split.m), n = product(split.n),
                k = product(split.k);
  const std::vector<int> natural = concatLabels(split.batch, split.m, split.n);
  std::vector<C> temp(natural == spec.output ? 0 : static_cast<size_t>(batch * m * n));
  C* target = natural == spec.output ? y : temp.data();
  for (int64_t i = 0; i < batch; ++i) {
    gemmAny<C>(false, false, m, n, k, C(1), a + i * m * k, b + i * k * n, C(0), target + i * m * n);
  }
  if (natural == spec.output) return;
  // Strides of the natural layout, read along the output's label order.
  const std::vector<int64_t> own = contiguousStrides(labelShape(spec, natural));
  std::vector<int64_t> strides;
  for (int l : spec.output) {
    strides.push_back(own[std::find(natural.begin(), natural.end(), l) - natural.begin()]);
  }
  gatherStrided(temp.data(), labelShape(spec, spec.output), strides, y);
}

template <class T>
Status einsumTyped(const EinsumSpec& spec, const std::vector<const Tensor*>& operands,
                   Tensor& out) {
  using C = std::conditional_t<std::is_floating_point_v<ComputeType<T>>, BlasType<T>, T>;
  std::vector<std::vector<C>> storage(operands.size());
  std::vector<const C*> data;
  for (size_t i = 0; i < operands.size(); ++i) {
    if constexpr (std::is_same_v<C, T>) {
      data.push_back(operands[i]->data<T>());
    } else {
      storage[i].resize(static_cast<size_t>(operands[i]->numel()));
      convertToBuffer(operands[i]->data<T>(), operands[i]->numel(), storage[i].data());
      data.push_back(storage[i].data());
    }
  }
  std::vector<C> result(std::is_same_v<C, T> ? 0 : static_cast<size_t>(out.numel()));
  C* y = std::is_same_v<C, T> ? reinterpret_cast<C*>(out.data<T>()) : result.data();
  GemmSplit split;
  if (std::is_floating_point_v<C> && splitForGemm(spec, operands, &split)) {
    gemmEinsum(spec, split, operands, data, y);
  } else {
    KILN_RETURN_IF_ERROR(genericEinsum(spec, operands, data, y));
  }
  if constexpr (!std::is_same_v<C, T>) convertFromBuffer(result.data(), out.numel(), out.data<T>());
  return Status::ok();
}

}  // namespace

Status einsumKernel(KernelContext& ctx) {
  if (ctx.inputCount() == 0) return ctx.error("Einsum needs at least one input");
  KILN_RETURN_IF_ERROR(ctx.requireInputs(ctx.inputCount()));
  std::vector<const Tensor*> operands;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    operands.push_back(&ctx.input(i));
    if (ctx.input(i).type() != ctx.input(0).type())
      return ctx.error("Einsum inputs must share one type");
  }
  if (!ctx.node().hasAttr("equation")) return ctx.error("attribute 'equation' is missing");
  EinsumSpec spec;
  KILN_RETURN_IF_ERROR_CTX(parseEquation(ctx.node().attrString("equation", ""), operands, &spec),
                           ctx.node().describe());
  Tensor& out = ctx.allocateOutput(0, operands[0]->type(), labelShape(spec, spec.output));
  if (out.numel() == 0) return Status::ok();
  Status status = dispatchAllTypes(out.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return Status(StatusCode::kUnsupported, "data type bool");
    } else {
      return einsumTyped<T>(spec, operands, out);
    }
  });
  if (status.isOk()) return status;
  return status.code() == StatusCode::kUnsupported ? ctx.unsupported(status.message())
                                                   : ctx.error(status.message());
}

}  // namespace kiln::cpu
