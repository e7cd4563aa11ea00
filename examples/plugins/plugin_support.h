// Small helpers the example plugins share: element sizes, the last-error text every
// plugin and creator keeps, field lookup and float16 conversion for the CPU paths.
// Example code: it depends on kiln/plugin.h only, as a user's plugin library would.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "kiln/plugin.h"

namespace kiln_examples {

namespace kp = kiln::plugin;

inline size_t elementSize(kp::DataType type) {
  switch (type) {
    case kp::DataType::kFloat32:
    case kp::DataType::kInt32:
      return 4;
    case kp::DataType::kInt64:
      return 8;
    case kp::DataType::kFloat16:
    case kp::DataType::kBFloat16:
      return 2;
    case kp::DataType::kUInt8:
    case kp::DataType::kInt8:
    case kp::DataType::kBool:
      return 1;
  }
  return 0;
}

inline int64_t volume(const kp::Dims& dims) {
  int64_t n = 1;
  for (int32_t i = 0; i < dims.nbDims; ++i) n *= dims.d[i];
  return n;
}

// The text getLastError() returns; set() never throws (a failed copy keeps a fixed text).
class ErrorText {
 public:
  void set(const char* message) noexcept {
    try {
      m_text = message ? message : "";
    } catch (...) {
      m_text.clear();
    }
  }
  void clear() noexcept { m_text.clear(); }
  const char* c_str() const noexcept { return m_text.c_str(); }

 private:
  std::string m_text;
};

inline const kp::Field* findField(const kp::FieldCollection* fields, const char* name) {
  if (!fields || !fields->fields) return nullptr;
  for (int32_t i = 0; i < fields->nbFields; ++i)
    if (fields->fields[i].name && std::strcmp(fields->fields[i].name, name) == 0)
      return &fields->fields[i];
  return nullptr;
}

// IEEE half <-> float (round to nearest even), for the float16 CPU paths.
inline float halfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    exponent = 113;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00 : 0x7c00);
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds past the largest half
  if (abs < 0x38800000u) {                       // subnormal half (or zero)
    const uint32_t shift = 113 - (abs >> 23);
    if (shift > 24) return sign;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    uint32_t half = mantissa >> (shift + 13);
    const uint32_t rest = mantissa & ((1u << (shift + 13)) - 1), mid = 1u << (shift + 12);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return sign | static_cast<uint16_t>(half);
}

}  // namespace kiln_examples
