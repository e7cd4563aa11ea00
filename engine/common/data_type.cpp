#include "kiln/data_type.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace kiln {

size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat32: case DataType::kInt32: case DataType::kUInt32: return 4;
    case DataType::kFloat64: case DataType::kInt64: case DataType::kUInt64: case DataType::kComplex64: return 8;
    case DataType::kComplex128: return 16;
    case DataType::kFloat16: case DataType::kBFloat16: case DataType::kInt16: case DataType::kUInt16: return 2;
    case DataType::kInt8: case DataType::kUInt8: case DataType::kBool: case DataType::kFp8E4M3:
    case DataType::kFp8E4M3Uz: case DataType::kFp8E5M2: case DataType::kFp8E5M2Uz:
    case DataType::kInt4: case DataType::kUInt4: case DataType::kFloat4E2M1: case DataType::kFp8E8M0:
    case DataType::kInt2: case DataType::kUInt2: return 1;
    case DataType::kString: case DataType::kUndefined: return 0;
  }
  return 0;
}

int packedElementBits(DataType type) {
  switch (type) {
    case DataType::kInt4: case DataType::kUInt4: case DataType::kFloat4E2M1: return 4;
    case DataType::kInt2: case DataType::kUInt2: return 2;
    default: return 0;
  }
}

const char* dataTypeName(DataType type) {
  switch (type) {
    case DataType::kUndefined: return "undefined";
    case DataType::kFloat32: return "float32";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kFloat64: return "float64";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kComplex64: return "complex64";
    case DataType::kComplex128: return "complex128";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFp8E4M3: return "fp8e4m3";
    case DataType::kFp8E4M3Uz: return "fp8e4m3fnuz";
    case DataType::kFp8E5M2: return "fp8e5m2";
    case DataType::kFp8E5M2Uz: return "fp8e5m2fnuz";
    case DataType::kUInt4: return "uint4";
    case DataType::kInt4: return "int4";
    case DataType::kFloat4E2M1: return "float4e2m1";
    case DataType::kFp8E8M0: return "fp8e8m0";
    case DataType::kUInt2: return "uint2";
    case DataType::kInt2: return "int2";
  }
  return "unknown";
}

bool parseDataType(const std::string& text, DataType* out) {
  static const std::map<std::string, DataType> kAliases = {
      {"fp32", DataType::kFloat32}, {"float", DataType::kFloat32}, {"fp16", DataType::kFloat16},
      {"half", DataType::kFloat16}, {"bf16", DataType::kBFloat16}, {"double", DataType::kFloat64},
      {"fp64", DataType::kFloat64}, {"fp8", DataType::kFp8E4M3}};
  auto it = kAliases.find(text);
  if (it != kAliases.end()) {
    *out = it->second;
    return true;
  }
  for (int code = 1; code <= kLastDataTypeCode; ++code) {
    if (text == dataTypeName(static_cast<DataType>(code))) {
      *out = static_cast<DataType>(code);
      return true;
    }
  }
  return false;
}

bool isFloatingPoint(DataType type) {
  switch (type) {
    case DataType::kFloat32: case DataType::kFloat64: case DataType::kFloat16: case DataType::kBFloat16:
    case DataType::kFp8E4M3: case DataType::kFp8E4M3Uz: case DataType::kFp8E5M2: case DataType::kFp8E5M2Uz:
    case DataType::kFloat4E2M1: case DataType::kFp8E8M0:
      return true;
    default: return false;
  }
}

bool isInteger(DataType type) {
  switch (type) {
    case DataType::kInt8: case DataType::kUInt8: case DataType::kInt16: case DataType::kUInt16:
    case DataType::kInt32: case DataType::kUInt32: case DataType::kInt64: case DataType::kUInt64:
    case DataType::kInt4: case DataType::kUInt4: case DataType::kInt2: case DataType::kUInt2:
      return true;
    default: return false;
  }
}

bool isSupportedDataType(DataType type) {
  return type != DataType::kUndefined && type != DataType::kComplex64 && type != DataType::kComplex128 &&
         static_cast<int>(type) >= 1 && static_cast<int>(type) <= kLastDataTypeCode;
}

static uint32_t floatBits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

static float bitsFloat(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0) return bitsFloat(sign);
    // Subnormal half: value = mantissa * 2^-24.
    float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  if (exponent == 31) return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToHalf(float value) {
  const uint32_t b = floatBits(value);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  const uint32_t absBits = b & 0x7fffffffu;
  if (absBits >= 0x7f800000u) return sign | (absBits > 0x7f800000u ? 0x7e00 : 0x7c00);
  if (absBits >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: infinity
  if (absBits < 0x38800000u) {
    // Result is subnormal or zero: round(|v| * 2^24) to nearest even.
    float scaled = bitsFloat(absBits) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t mantissa = absBits & 0x7fffffu;
  uint32_t exponent = (absBits >> 23) - 112;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

float bfloat16ToFloat(uint16_t bits) { return bitsFloat(static_cast<uint32_t>(bits) << 16); }

uint16_t floatToBFloat16(float value) {
  uint32_t b = floatBits(value);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40);
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

// Generic small-float decode: `mantBits` mantissa bits, exponent `bias`.
static float decodeSmallFloat(uint8_t bits, int expBits, int mantBits, int bias) {
  const int sign = bits >> 7;
  const int exponent = (bits >> mantBits) & ((1 << expBits) - 1);
  const int mantissa = bits & ((1 << mantBits) - 1);
  float v;
  if (exponent == 0) v = std::ldexp(static_cast<float>(mantissa), 1 - bias - mantBits);
  else v = std::ldexp(1.0f + static_cast<float>(mantissa) / (1 << mantBits), exponent - bias);
  return sign ? -v : v;
}

float fp8E4M3ToFloat(uint8_t bits) {
  if ((bits & 0x7f) == 0x7f) return std::nanf("");
  return decodeSmallFloat(bits, 4, 3, 7);
}

float fp8E5M2ToFloat(uint8_t bits) {
  const int exponent = (bits >> 2) & 0x1f;
  if (exponent == 31) {
    if (bits & 3) return std::nanf("");
    return (bits & 0x80) ? -INFINITY : INFINITY;
  }
  return decodeSmallFloat(bits, 5, 2, 15);
}

// Encodes by searching the nearest representable code (ties to even code): fp8 has
// only 256 codes, so exactness matters more than speed here.
static uint8_t encodeNearest(float value, float (*decode)(uint8_t), uint8_t maxCode) {
  const float mag = std::fabs(value);
  uint8_t best = 0;
  float bestErr = INFINITY;
  for (int code = 0; code <= maxCode; ++code) {
    float err = std::fabs(decode(static_cast<uint8_t>(code)) - mag);
    if (err < bestErr || (err == bestErr && (code & 1) == 0 && (best & 1) == 1)) {
      bestErr = err;
      best = static_cast<uint8_t>(code);
    }
  }
  return best | (std::signbit(value) ? 0x80 : 0);
}

// E4M3FN (bias 7, 3 mantissa bits, no infinity, S.1111.111 NaN, max 448) by the
// ONNX Cast rules: round to nearest even; out of range (infinity included) becomes
// +-448 when saturating, else NaN; NaN stays NaN with its sign. With the exponent
// clamped to the smallest normal one (2^-6), a = q * 2^(e - 3) and the code is
// (e + 6) * 8 + q for normals and subnormals alike; q == 16 after rounding carries
// into the next exponent by itself.
uint8_t floatToFp8E4M3(float value, bool saturate) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  if (std::isnan(value)) return sign | 0x7f;
  const uint8_t overflow = sign | (saturate ? 0x7e : 0x7f);
  const double a = std::fabs(static_cast<double>(value));
  if (std::isinf(a)) return overflow;
  if (a == 0) return sign;
  const int e = std::max(std::ilogb(a), -6);
  const double code = (e + 6) * 8.0 + std::nearbyint(std::ldexp(a, 3 - e));
  if (code > 126) return overflow;
  return sign | static_cast<uint8_t>(code);
}

uint8_t floatToFp8E5M2(float value, bool saturate) {
  if (std::isnan(value)) return 0x7f;
  const uint8_t sign = value < 0 ? 0x80 : 0;
  if (std::isinf(value)) return sign | (saturate ? 0x7b : 0x7c);
  if (std::fabs(value) > 57344.0f) {
    if (saturate) return sign | 0x7b;
    return std::fabs(value) >= 61440.0f ? (sign | 0x7c) : (sign | 0x7b);
  }
  return encodeNearest(value, fp8E5M2ToFloat, 0x7b);
}

float fp8E4M3FnuzToFloat(uint8_t bits) {
  if (bits == 0x80) return std::nanf("");
  return decodeSmallFloat(bits, 4, 3, 8);
}

float fp8E5M2FnuzToFloat(uint8_t bits) {
  if (bits == 0x80) return std::nanf("");
  return decodeSmallFloat(bits, 5, 2, 16);
}

// Saturating encoders: out-of-range values clamp to the largest finite code.
uint8_t floatToFp8E4M3Fnuz(float value) {
  if (std::isnan(value)) return 0x80;
  uint8_t code = encodeNearest(std::clamp(value, -240.0f, 240.0f), fp8E4M3FnuzToFloat, 0x7f);
  return (code & 0x7f) == 0 ? 0 : code;  // no negative zero
}

uint8_t floatToFp8E5M2Fnuz(float value) {
  if (std::isnan(value)) return 0x80;
  uint8_t code = encodeNearest(std::clamp(value, -57344.0f, 57344.0f), fp8E5M2FnuzToFloat, 0x7f);
  return (code & 0x7f) == 0 ? 0 : code;
}

float float4E2M1ToFloat(uint8_t code) {
  // Magnitudes of the 8 codes S.EE.M: subnormal 0 and 0.5, then 1, 1.5, 2, 3, 4, 6.
  static const float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = kMagnitudes[code & 0x7];
  return (code & 0x8) ? -v : v;
}

uint8_t floatToFloat4E2M1(float value) {
  if (std::isnan(value)) return 0x8;
  const uint8_t sign = std::signbit(value) ? 0x8 : 0;
  const float a = std::fabs(value);
  // Midpoints between neighbouring magnitudes; a tie goes to the even code (M bit 0).
  static const float kMidpoints[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  uint8_t code = 0;
  while (code < 7 && a > kMidpoints[code]) ++code;
  if (code < 7 && a == kMidpoints[code] && (code & 1)) ++code;
  return sign | code;
}

float fp8E8M0ToFloat(uint8_t code) {
  if (code == 0xff) return std::nanf("");
  return std::ldexp(1.0f, static_cast<int>(code) - 127);
}

uint8_t floatToFp8E8M0(float value, bool saturate, E8M0Rounding rounding) {
  const uint32_t bits = floatBits(value);
  uint32_t exponent = (bits >> 23) & 0xff;
  if (exponent == 0xff) return 0xff;  // NaN and infinities
  const uint32_t mantissa = bits & 0x7fffffu;
  bool roundUp = false;
  if (rounding == E8M0Rounding::kUp) {
    roundUp = mantissa != 0;
  } else if (rounding == E8M0Rounding::kNearest) {
    // Round on the first dropped mantissa bit; a tie rounds up except for subnormals
    // (where the implicit leading bit is 0), as the ONNX reference does.
    const bool guard = (mantissa & 0x400000u) != 0;
    const bool rest = (mantissa & 0x3fffffu) != 0;
    roundUp = guard && (rest || exponent > 0);
  }
  if (roundUp && !(saturate && exponent == 0xfe)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

}  // namespace kiln
