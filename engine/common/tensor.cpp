#include "kiln/tensor.h"

#include "kiln/tensor_size.h"

#include <cmath>
#include <limits>
#include <random>

namespace kiln {

int64_t shapeNumel(const Shape& shape) {
  bool hasZero = false;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    hasZero = hasZero || d == 0;
  }
  if (hasZero) return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

std::string shapeToString(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

Tensor::Tensor(DataType type, Shape shape) : m_type(type), m_shape(std::move(shape)) {
  // The last line of defence: a shape that wraps, is negative or passes the cap
  // never gets a buffer (a wrapped count once gave a too-small one: heap overflow).
  Result<int64_t> bytes =
      checkedByteSize(type, m_shape, std::string("a ") + dataTypeName(type) + " tensor");
  if (!bytes.isOk()) throw TensorSizeError(bytes.status().message());
  m_numel = shapeNumel(m_shape);
  if (type == DataType::kString) {
    m_strings = std::make_shared<std::vector<std::string>>(m_numel);
    m_bytes = std::make_shared<std::vector<unsigned char>>();
  } else {
    m_bytes = std::make_shared<std::vector<unsigned char>>(static_cast<size_t>(bytes.value()));
  }
}

Result<Tensor> allocateTensor(DataType type, const Shape& shape, const std::string& what) {
  KILN_RETURN_IF_ERROR(checkTensorSize(type, shape, what));
  return Tensor(type, shape);
}

Tensor Tensor::scalarFloat(float v) {
  return fromVector(DataType::kFloat32, {}, std::vector<float>{v});
}
Tensor Tensor::scalarInt64(int64_t v) {
  return fromVector(DataType::kInt64, {}, std::vector<int64_t>{v});
}
Tensor Tensor::int64Vector(const std::vector<int64_t>& values) {
  return fromVector(DataType::kInt64, {static_cast<int64_t>(values.size())}, values);
}

size_t Tensor::byteSize() const {
  return static_cast<size_t>(m_numel) * dataTypeSize(m_type);
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.m_shape = std::move(shape);
  t.m_numel = shapeNumel(t.m_shape);
  // Never a view larger than its storage, whatever the caller checked.
  const size_t element = dataTypeSize(m_type);
  const size_t capacity = m_strings              ? m_strings->size()
                          : (m_bytes && element) ? m_bytes->size() / element
                                                 : 0;
  if (t.m_numel < 0 || (defined() && static_cast<uint64_t>(t.m_numel) > capacity))
    throw TensorSizeError("reshaping a tensor of shape " + shapeToString(m_shape) + " to " +
                          shapeToString(t.m_shape) + " needs more elements than it holds");
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = *this;
  if (m_bytes) t.m_bytes = std::make_shared<std::vector<unsigned char>>(*m_bytes);
  if (m_strings) t.m_strings = std::make_shared<std::vector<std::string>>(*m_strings);
  return t;
}

double Tensor::valueAsDouble(int64_t i) const {
  switch (m_type) {
    case DataType::kFloat32:
      return data<float>()[i];
    case DataType::kFloat64:
      return data<double>()[i];
    case DataType::kFloat16:
      return halfToFloat(data<uint16_t>()[i]);
    case DataType::kBFloat16:
      return bfloat16ToFloat(data<uint16_t>()[i]);
    case DataType::kFp8E4M3:
      return fp8E4M3ToFloat(data<uint8_t>()[i]);
    case DataType::kFp8E5M2:
      return fp8E5M2ToFloat(data<uint8_t>()[i]);
    case DataType::kFp8E4M3Uz:
      return fp8E4M3FnuzToFloat(data<uint8_t>()[i]);
    case DataType::kFp8E5M2Uz:
      return fp8E5M2FnuzToFloat(data<uint8_t>()[i]);
    case DataType::kFloat4E2M1:
      return float4E2M1ToFloat(data<uint8_t>()[i]);
    case DataType::kFp8E8M0:
      return fp8E8M0ToFloat(data<uint8_t>()[i]);
    case DataType::kUInt64:
      return static_cast<double>(data<uint64_t>()[i]);
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kBool:
    case DataType::kInt2:
    case DataType::kUInt2:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kInt64:
      return static_cast<double>(valueAsInt64(i));
    default:
      return std::nan("");  // string, complex, undefined
  }
}

int64_t Tensor::valueAsInt64(int64_t i) const {
  switch (m_type) {
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
      return data<int8_t>()[i];
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2:
    case DataType::kBool:
      return data<uint8_t>()[i];
    case DataType::kInt16:
      return data<int16_t>()[i];
    case DataType::kUInt16:
      return data<uint16_t>()[i];
    case DataType::kInt32:
      return data<int32_t>()[i];
    case DataType::kUInt32:
      return data<uint32_t>()[i];
    case DataType::kInt64:
      return data<int64_t>()[i];
    case DataType::kUInt64:
      return static_cast<int64_t>(data<uint64_t>()[i]);
    case DataType::kString:
    case DataType::kUndefined:
    case DataType::kComplex64:
    case DataType::kComplex128:
      return 0;
    default: {  // floating point types
      double v = valueAsDouble(i);
      if (!std::isfinite(v)) return 0;
      if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
      if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    }
  }
}

std::vector<int64_t> Tensor::toInt64Vector() const {
  std::vector<int64_t> out(m_numel);
  for (int64_t i = 0; i < m_numel; ++i) out[i] = valueAsInt64(i);
  return out;
}

void Tensor::poison() {
  if (!m_bytes || m_bytes->empty()) return;
  if (m_type == DataType::kFloat32) {
    float* p = data<float>();
    for (int64_t i = 0; i < m_numel; ++i) p[i] = std::numeric_limits<float>::quiet_NaN();
  } else if (m_type == DataType::kFloat64) {
    double* p = data<double>();
    for (int64_t i = 0; i < m_numel; ++i) p[i] = std::numeric_limits<double>::quiet_NaN();
  } else if (m_type == DataType::kFloat16 || m_type == DataType::kBFloat16) {
    uint16_t nan = m_type == DataType::kFloat16 ? 0x7e00 : 0x7fc0;
    uint16_t* p = data<uint16_t>();
    for (int64_t i = 0; i < m_numel; ++i) p[i] = nan;
  } else {
    std::fill(m_bytes->begin(), m_bytes->end(), static_cast<unsigned char>(0xAB));
  }
}

Tensor randomInputTensor(DataType type, const Shape& shape, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed ^ (seed >> 32)));
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::uniform_int_distribution<int> ints(1, 9);
  auto fill = [&](Tensor& f) {
    for (int64_t i = 0; i < f.numel(); ++i) {
      f.data<double>()[i] = isFloatingPoint(type)     ? dist(rng)
                            : type == DataType::kBool ? (ints(rng) & 1)
                                                      : ints(rng);
    }
  };
  if (type == DataType::kString || type == DataType::kFloat64) {
    Tensor f(DataType::kFloat64, shape);
    fill(f);
    return castTensor(f, type);
  }
  // Generated in float64 chunks, so the temporary never outgrows the input.
  Tensor out(type, shape);
  constexpr int64_t kChunk = 4096;
  const size_t element = dataTypeSize(type);
  for (int64_t start = 0; start < out.numel(); start += kChunk) {
    Tensor f(DataType::kFloat64, {std::min(kChunk, out.numel() - start)});
    fill(f);
    const Tensor cast = castTensor(f, type);
    std::memcpy(static_cast<unsigned char*>(out.rawData()) + start * element, cast.rawData(),
                cast.byteSize());
  }
  return out;
}

Result<Tensor> randomInput(DataType type, const Shape& shape, uint64_t seed,
                           const std::string& what) {
  // A value whose model leaves the element type open (ONNX elem_type 0) has no element
  // to generate; randomInputTensor would copy from a null buffer.
  if (type == DataType::kUndefined)
    return invalidArgument(what + ": element type undefined (the model declares none)");
  KILN_RETURN_IF_ERROR(checkTensorSize(type, shape, what));
  if (type == DataType::kString)  // held as float64 first
    KILN_RETURN_IF_ERROR(checkTensorSize(DataType::kFloat64, shape, what));
  return randomInputTensor(type, shape, seed);
}

}  // namespace kiln
