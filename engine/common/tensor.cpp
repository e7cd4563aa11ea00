#include "kiln/tensor.h"

#include <cmath>
#include <limits>
#include <random>

namespace kiln {

int64_t shapeNumel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
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
  m_numel = shapeNumel(m_shape);
  if (m_numel < 0) m_numel = 0;
  if (type == DataType::kString) {
    m_strings = std::make_shared<std::vector<std::string>>(m_numel);
    m_bytes = std::make_shared<std::vector<unsigned char>>();
  } else {
    m_bytes = std::make_shared<std::vector<unsigned char>>(m_numel * dataTypeSize(type));
  }
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
  t.m_numel = std::max<int64_t>(shapeNumel(t.m_shape), 0);
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
  Tensor f(DataType::kFloat64, shape);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::uniform_int_distribution<int> ints(1, 9);
  for (int64_t i = 0; i < f.numel(); ++i) {
    f.data<double>()[i] = isFloatingPoint(type)     ? dist(rng)
                          : type == DataType::kBool ? (ints(rng) & 1)
                                                    : ints(rng);
  }
  return castTensor(f, type);
}

}  // namespace kiln
