// Small ai.onnx.ml operators: Binarizer (1), ArrayFeatureExtractor (1) and LabelEncoder
// (1, 2 and 4: keys and values as int64/float/string lists, or from opset 4 as tensors).
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/ops/data_movement.h"
#include "backends/cpu/ops/elementwise.h"

namespace kiln::cpu {
namespace {

const char kMlDomain[] = "ai.onnx.ml";

// Y = X > threshold ? 1 : 0, in X's type.
Status binarizerKernel(KernelContext& ctx) {
  const float threshold = ctx.node().attrFloat("threshold", 0.0f);
  return unaryKernel<TypeSet::kNumeric>(ctx, [threshold](auto x) {
    using C = decltype(x);
    return static_cast<double>(x) > static_cast<double>(threshold) ? C(1) : C(0);
  });
}

// Z = X[..., indices] with the indices flattened; a 1-D X gives [1, k] (as ONNX Runtime).
Status arrayFeatureExtractorKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(0);
  const Tensor& indicesIn = ctx.input(1);
  if (indicesIn.type() != DataType::kInt64) return ctx.error("indices Y must be int64");
  if (x.rank() < 1) return ctx.error("input X must have rank >= 1");
  const std::vector<int64_t> indices = indicesIn.toInt64Vector();
  const int64_t last = x.dim(-1);
  for (int64_t i : indices) {
    if (i < 0 || i >= last) {
      return ctx.error("index " + std::to_string(i) + " is outside [0, " + std::to_string(last) +
                       ")");
    }
  }
  const int64_t k = static_cast<int64_t>(indices.size());
  Shape outShape = x.rank() == 1 ? Shape{1, k} : x.shape();
  outShape.back() = k;
  const int64_t rows = last == 0 ? 0 : x.numel() / last;
  Tensor& z = ctx.allocateOutput(0, x.type(), outShape);
  return dispatchByElementSize(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = elementData<T>(x);
    T* dst = elementData<T>(z);
    for (int64_t r = 0; r < (x.rank() == 1 ? 1 : rows); ++r) {
      for (int64_t j = 0; j < k; ++j) dst[r * k + j] = src[r * last + indices[j]];
    }
    return Status::ok();
  });
}

// ---- LabelEncoder. Keys and values become tensors whatever attributes carried them, so
// the lookup is one code path: a key's position in `keys` picks the element of `values`.

struct LabelTable {
  Tensor keys;
  Tensor values;
  Tensor fallback;  // one element of the values' type
};

Tensor stringTensor(const std::vector<std::string>& values) {
  Tensor t(DataType::kString, {static_cast<int64_t>(values.size())});
  t.strings() = values;
  return t;
}

// The list attribute `<prefix>_{int64s,floats,strings}` or `<prefix>_tensor` that is set.
bool readLabelList(const Node& node, const std::string& prefix, Tensor* out) {
  if (node.hasAttr(prefix + "_tensor")) {
    *out = *node.attrTensor(prefix + "_tensor");
  } else if (node.hasAttr(prefix + "_int64s")) {
    *out = Tensor::int64Vector(node.attrInts(prefix + "_int64s"));
  } else if (node.hasAttr(prefix + "_floats")) {
    const std::vector<float> v = node.attrFloats(prefix + "_floats");
    *out = Tensor::fromVector(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
  } else if (node.hasAttr(prefix + "_strings")) {
    *out = stringTensor(node.attrStrings(prefix + "_strings"));
  } else {
    return false;
  }
  return true;
}

Status readLabelTable(const KernelContext& ctx, LabelTable* table) {
  const Node& node = ctx.node();
  if (!readLabelList(node, "keys", &table->keys) ||
      !readLabelList(node, "values", &table->values)) {
    return ctx.error("LabelEncoder needs one keys_* and one values_* attribute");
  }
  if (table->keys.numel() != table->values.numel()) {
    return ctx.error("keys and values have different lengths");
  }
  const DataType vt = table->values.type();
  if (const Tensor* d = node.attrTensor("default_tensor")) {
    if (d->type() != vt || d->numel() != 1) {
      return ctx.error("default_tensor must hold one value of the values' type");
    }
    table->fallback = *d;
  } else if (vt == DataType::kString) {
    table->fallback = stringTensor({node.attrString("default_string", "_Unused")});
  } else if (vt == DataType::kInt64) {
    table->fallback = Tensor::int64Vector({node.attrInt("default_int64", -1)});
  } else if (vt == DataType::kFloat32) {
    table->fallback = Tensor::fromVector(
        DataType::kFloat32, {1}, std::vector<float>{node.attrFloat("default_float", -0.0f)});
  } else {
    table->fallback = Tensor(vt, {1});  // values_tensor without default_tensor: zero
  }
  return Status::ok();
}

// Position of every element of x among the keys, or -1. Float keys match by value, and a
// NaN key matches NaN inputs; integer and string keys match exactly.
Status findKeys(const KernelContext& ctx, const Tensor& x, const Tensor& keys,
                std::vector<int64_t>* pos) {
  if (x.type() != keys.type()) {
    return ctx.error(std::string("input of type ") + dataTypeName(x.type()) +
                     " does not match keys of type " + dataTypeName(keys.type()));
  }
  pos->assign(static_cast<size_t>(x.numel()), -1);
  if (x.type() == DataType::kString) {
    std::unordered_map<std::string, int64_t> index;
    for (int64_t i = keys.numel() - 1; i >= 0; --i) index[keys.strings()[i]] = i;  // first key wins
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto it = index.find(x.strings()[i]);
      if (it != index.end()) (*pos)[i] = it->second;
    }
  } else if (isFloatingPoint(x.type())) {
    std::unordered_map<double, int64_t> index;
    int64_t nanKey = -1;
    for (int64_t i = keys.numel() - 1; i >= 0; --i) {
      const double k = keys.valueAsDouble(i);
      if (std::isnan(k))
        nanKey = i;
      else
        index[k] = i;
    }
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = x.valueAsDouble(i);
      auto it = index.find(v);
      (*pos)[i] = std::isnan(v) ? nanKey : (it == index.end() ? -1 : it->second);
    }
  } else {
    std::unordered_map<int64_t, int64_t> index;
    for (int64_t i = keys.numel() - 1; i >= 0; --i) index[keys.valueAsInt64(i)] = i;
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto it = index.find(x.valueAsInt64(i));
      if (it != index.end()) (*pos)[i] = it->second;
    }
  }
  return Status::ok();
}

// LabelEncoder-1 maps strings to their index in classes_strings (default_int64 when
// absent) and int64 indices back to the class names (default_string when out of range).
Status labelEncoderV1Kernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  const std::vector<std::string> classes = ctx.node().attrStrings("classes_strings");
  if (x.type() == DataType::kString) {
    std::unordered_map<std::string, int64_t> index;
    for (int64_t i = static_cast<int64_t>(classes.size()) - 1; i >= 0; --i) index[classes[i]] = i;
    const int64_t fallback = ctx.node().attrInt("default_int64", -1);
    Tensor& y = ctx.allocateOutput(0, DataType::kInt64, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto it = index.find(x.strings()[i]);
      y.data<int64_t>()[i] = it == index.end() ? fallback : it->second;
    }
    return Status::ok();
  }
  if (x.type() != DataType::kInt64) return ctx.error("input must be string or int64");
  const std::string fallback = ctx.node().attrString("default_string", "_Unused");
  Tensor& y = ctx.allocateOutput(0, DataType::kString, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t v = x.data<int64_t>()[i];
    y.strings()[i] = v >= 0 && v < static_cast<int64_t>(classes.size()) ? classes[v] : fallback;
  }
  return Status::ok();
}

Status labelEncoderKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  LabelTable table;
  KILN_RETURN_IF_ERROR(readLabelTable(ctx, &table));
  std::vector<int64_t> pos;
  KILN_RETURN_IF_ERROR(findKeys(ctx, x, table.keys, &pos));
  Tensor& y = ctx.allocateOutput(0, table.values.type(), x.shape());
  return dispatchByElementSize(table.values.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* values = elementData<T>(table.values);
    const T fallback = elementData<T>(table.fallback)[0];
    T* dst = elementData<T>(y);
    for (size_t i = 0; i < pos.size(); ++i) dst[i] = pos[i] >= 0 ? values[pos[i]] : fallback;
    return Status::ok();
  });
}

}  // namespace

void registerMlKernels(KernelRegistry& registry) {
  registry.add("Binarizer", 1, 1000, &binarizerKernel, kMlDomain);
  registry.add("ArrayFeatureExtractor", 1, 1000, &arrayFeatureExtractorKernel, kMlDomain);
  registry.add("LabelEncoder", 1, 1, &labelEncoderV1Kernel, kMlDomain);
  registry.add("LabelEncoder", 2, 1000, &labelEncoderKernel, kMlDomain);
}

}  // namespace kiln::cpu
