// Tensor: a dense, row-major, host-resident array with a data type and a
// concrete shape. Copies share storage (like a view); use clone() for a deep
// copy. Strings are held in a separate vector.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kiln/data_type.h"

namespace kiln {

using Shape = std::vector<int64_t>;

// Elements of a shape (1 for a scalar); -1 if a dim is negative or the count overflows.
int64_t shapeNumel(const Shape& shape);
std::string shapeToString(const Shape& shape);  // "1x3x224x224", "scalar" for rank 0

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled; throws TensorSizeError if the shape fails kiln/tensor_size.h checks.
  Tensor(DataType type, Shape shape);

  template <class T>
  static Tensor fromVector(DataType type, Shape shape, const std::vector<T>& values) {
    Tensor t(type, std::move(shape));
    if (!values.empty()) std::memcpy(t.rawData(), values.data(), values.size() * sizeof(T));
    return t;
  }
  static Tensor scalarFloat(float v);
  static Tensor scalarInt64(int64_t v);
  static Tensor int64Vector(const std::vector<int64_t>& values);

  bool defined() const { return m_type != DataType::kUndefined; }
  DataType type() const { return m_type; }
  const Shape& shape() const { return m_shape; }
  int64_t dim(int i) const { return m_shape[i < 0 ? i + rank() : i]; }
  int rank() const { return static_cast<int>(m_shape.size()); }
  int64_t numel() const { return m_numel; }
  size_t byteSize() const;

  void* rawData() { return m_bytes ? m_bytes->data() : nullptr; }
  const void* rawData() const { return m_bytes ? m_bytes->data() : nullptr; }
  template <class T>
  T* data() {
    return static_cast<T*>(rawData());
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(rawData());
  }
  std::vector<std::string>& strings() { return *m_strings; }
  const std::vector<std::string>& strings() const { return *m_strings; }

  // Same storage, new shape (numel must fit the storage, else TensorSizeError).
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;
  // Element i as double / int64 (any numeric type); for reports and small shape tensors.
  double valueAsDouble(int64_t i) const;
  int64_t valueAsInt64(int64_t i) const;
  // All elements as int64 (numeric types only).
  std::vector<int64_t> toInt64Vector() const;
  // Fills every byte with a recognisable pattern (NaN for floats) before a kernel writes it.
  void poison();

 private:
  DataType m_type = DataType::kUndefined;
  Shape m_shape;
  int64_t m_numel = 0;
  std::shared_ptr<std::vector<unsigned char>> m_bytes;
  std::shared_ptr<std::vector<std::string>> m_strings;
};

// Seeded random data: floats in [-1, 1], integers in [1, 9], bools at random. For a
// shape from outside use randomInput() (kiln/tensor_size.h): it returns the error.
Tensor randomInputTensor(DataType type, const Shape& shape, uint64_t seed);

// Converts every element to `to` (ONNX Cast semantics: float->int truncates toward
// zero, to bool is != 0, strings parse/print numbers).
Tensor castTensor(const Tensor& input, DataType to);

// castTensor, except that a finite float value past float16's or bfloat16's range (`to`
// either) becomes that type's largest finite value of its sign, not an infinity, as
// TensorRT stores FP16 weights: a mask filled with float32's lowest stays a finite fill in
// an FP16 engine, so a row it hides entirely is not NaN (which 0 x NaN would then carry into
// every row reading it). Infinities and NaN stay. Other targets: castTensor's result.
// `saturated`, when given, receives how many values were held.
Tensor castTensorSaturating(const Tensor& input, DataType to, int64_t* saturated = nullptr);

}  // namespace kiln
