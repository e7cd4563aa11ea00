// castTensor: element conversion between every Tensor data type, used by the
// Cast kernel, the importer and the test tools.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "kiln/tensor.h"

namespace kiln {
namespace {

bool isUnsigned(DataType t) {
  return t == DataType::kUInt8 || t == DataType::kUInt16 || t == DataType::kUInt32 ||
         t == DataType::kUInt64 || t == DataType::kUInt4 || t == DataType::kUInt2 ||
         t == DataType::kBool;
}

// Shortest "%g" text that reads back as the same float (numpy prints this way).
std::string formatFloat(double v, bool isFloat32) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    double back = std::strtod(buf, nullptr);
    if (isFloat32 ? static_cast<float>(back) == static_cast<float>(v) : back == v) break;
  }
  return buf;
}

double parseNumber(const std::string& s) {
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "nan" || lower == "-nan") return std::nan("");
  if (lower == "inf" || lower == "infinity" || lower == "+inf") return INFINITY;
  if (lower == "-inf" || lower == "-infinity") return -INFINITY;
  return std::strtod(s.c_str(), nullptr);
}

template <class T>
T saturateToInt(double v) {
  if (std::isnan(v)) return 0;
  const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::lowest();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// Sub-byte integer targets: round half to even and saturate; NaN becomes 0.
double roundClamped(double v, double lo, double hi) {
  return std::isnan(v) ? 0.0 : std::clamp(std::nearbyint(v), lo, hi);
}

// Writes element i of `out` from a double (float targets) or integer value.
void storeDouble(Tensor& out, int64_t i, double v) {
  switch (out.type()) {
    case DataType::kFloat32:
      out.data<float>()[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      out.data<double>()[i] = v;
      break;
    case DataType::kFloat16:
      out.data<uint16_t>()[i] = floatToHalf(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      out.data<uint16_t>()[i] = floatToBFloat16(static_cast<float>(v));
      break;
    case DataType::kFp8E4M3:
      out.data<uint8_t>()[i] = floatToFp8E4M3(static_cast<float>(v));
      break;
    case DataType::kFp8E5M2:
      out.data<uint8_t>()[i] = floatToFp8E5M2(static_cast<float>(v));
      break;
    case DataType::kFp8E4M3Uz:
      out.data<uint8_t>()[i] = floatToFp8E4M3Fnuz(static_cast<float>(v));
      break;
    case DataType::kFp8E5M2Uz:
      out.data<uint8_t>()[i] = floatToFp8E5M2Fnuz(static_cast<float>(v));
      break;
    case DataType::kBool:
      out.data<uint8_t>()[i] = v != 0.0 ? 1 : 0;
      break;
    case DataType::kInt8:
      out.data<int8_t>()[i] = saturateToInt<int8_t>(v);
      break;
    case DataType::kUInt8:
      out.data<uint8_t>()[i] = saturateToInt<uint8_t>(v);
      break;
    case DataType::kInt16:
      out.data<int16_t>()[i] = saturateToInt<int16_t>(v);
      break;
    case DataType::kUInt16:
      out.data<uint16_t>()[i] = saturateToInt<uint16_t>(v);
      break;
    case DataType::kInt32:
      out.data<int32_t>()[i] = saturateToInt<int32_t>(v);
      break;
    case DataType::kUInt32:
      out.data<uint32_t>()[i] = saturateToInt<uint32_t>(v);
      break;
    case DataType::kInt64:
      out.data<int64_t>()[i] = saturateToInt<int64_t>(v);
      break;
    case DataType::kUInt64:
      out.data<uint64_t>()[i] = saturateToInt<uint64_t>(v);
      break;
    case DataType::kInt4:
      out.data<int8_t>()[i] = static_cast<int8_t>(roundClamped(v, -8.0, 7.0));
      break;
    case DataType::kUInt4:
      out.data<uint8_t>()[i] = static_cast<uint8_t>(roundClamped(v, 0.0, 15.0));
      break;
    case DataType::kInt2:
      out.data<int8_t>()[i] = static_cast<int8_t>(roundClamped(v, -2.0, 1.0));
      break;
    case DataType::kUInt2:
      out.data<uint8_t>()[i] = static_cast<uint8_t>(roundClamped(v, 0.0, 3.0));
      break;
    case DataType::kFloat4E2M1:
      out.data<uint8_t>()[i] = floatToFloat4E2M1(static_cast<float>(v));
      break;
    case DataType::kFp8E8M0:
      out.data<uint8_t>()[i] = floatToFp8E8M0(static_cast<float>(v));
      break;
    default:
      break;
  }
}

// Integer-to-integer stores wrap like a C cast (ONNX Cast between ints is modular).
void storeInteger(Tensor& out, int64_t i, int64_t v, uint64_t u, bool fromUnsigned) {
  switch (out.type()) {
    case DataType::kBool:
      out.data<uint8_t>()[i] = (fromUnsigned ? u != 0 : v != 0) ? 1 : 0;
      break;
    case DataType::kInt8:
      out.data<int8_t>()[i] = static_cast<int8_t>(v);
      break;
    case DataType::kUInt8:
      out.data<uint8_t>()[i] = static_cast<uint8_t>(v);
      break;
    case DataType::kInt16:
      out.data<int16_t>()[i] = static_cast<int16_t>(v);
      break;
    case DataType::kUInt16:
      out.data<uint16_t>()[i] = static_cast<uint16_t>(v);
      break;
    case DataType::kInt32:
      out.data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DataType::kUInt32:
      out.data<uint32_t>()[i] = static_cast<uint32_t>(v);
      break;
    case DataType::kInt64:
      out.data<int64_t>()[i] = v;
      break;
    case DataType::kUInt64:
      out.data<uint64_t>()[i] = fromUnsigned ? u : static_cast<uint64_t>(v);
      break;
    default:
      storeDouble(out, i, fromUnsigned ? static_cast<double>(u) : static_cast<double>(v));
      break;
  }
}

}  // namespace

Tensor castTensor(const Tensor& input, DataType to) {
  Tensor out(to, input.shape());
  const int64_t n = input.numel();
  const DataType from = input.type();
  if (from == to) return input.clone();
  if (from == DataType::kString) {
    for (int64_t i = 0; i < n; ++i) storeDouble(out, i, parseNumber(input.strings()[i]));
    return out;
  }
  if (to == DataType::kString) {
    for (int64_t i = 0; i < n; ++i) {
      if (isFloatingPoint(from))
        out.strings()[i] = formatFloat(input.valueAsDouble(i), from != DataType::kFloat64);
      else if (from == DataType::kUInt64)
        out.strings()[i] = std::to_string(input.data<uint64_t>()[i]);
      else
        out.strings()[i] = std::to_string(input.valueAsInt64(i));
    }
    return out;
  }
  const bool intToInt =
      (isInteger(from) || from == DataType::kBool) && (isInteger(to) || to == DataType::kBool);
  for (int64_t i = 0; i < n; ++i) {
    if (intToInt || (!isFloatingPoint(from) && !isFloatingPoint(to))) {
      uint64_t u = from == DataType::kUInt64 ? input.data<uint64_t>()[i]
                                             : static_cast<uint64_t>(input.valueAsInt64(i));
      storeInteger(out, i, input.valueAsInt64(i), u, isUnsigned(from));
    } else if (isFloatingPoint(to) && (isInteger(from) || from == DataType::kBool)) {
      storeDouble(out, i,
                  from == DataType::kUInt64 ? static_cast<double>(input.data<uint64_t>()[i])
                                            : static_cast<double>(input.valueAsInt64(i)));
    } else {
      storeDouble(out, i, input.valueAsDouble(i));
    }
  }
  return out;
}

Tensor castTensorSaturating(const Tensor& input, DataType to, int64_t* saturated) {
  Tensor out = castTensor(input, to);
  int64_t held = 0;
  const bool narrowFloat = to == DataType::kFloat16 || to == DataType::kBFloat16;
  if (narrowFloat && isFloatingPoint(input.type()) && input.type() != to) {
    const uint16_t infinity = to == DataType::kFloat16 ? 0x7c00 : 0x7f80;
    const uint16_t largest = to == DataType::kFloat16 ? 0x7bff : 0x7f7f;
    uint16_t* bits = out.data<uint16_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      if ((bits[i] & 0x7fff) != infinity || std::isinf(input.valueAsDouble(i))) continue;
      bits[i] = static_cast<uint16_t>((bits[i] & 0x8000) | largest);
      ++held;
    }
  }
  if (saturated) *saturated = held;
  return out;
}

}  // namespace kiln
