// Element data types of Kiln tensors, with the ONNX TensorProto codes they map to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {

// Values equal ONNX TensorProto::DataType so conversions are a cast.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFp8E4M3 = 17,  // FLOAT8E4M3FN
  kFp8E4M3Uz = 18,
  kFp8E5M2 = 19,
  kFp8E5M2Uz = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,  // FLOAT4E2M1: no infinity or NaN, max 6
  kFp8E8M0 = 24,     // FLOAT8E8M0: a power of two 2^(code - 127), 0xFF is NaN
  kUInt2 = 25,
  kInt2 = 26,
};

// The last TensorProto code Kiln knows.
constexpr int kLastDataTypeCode = 26;

// Bytes per element; 0 for kString and kUndefined, 1 for the packed sub-byte types
// (Kiln stores int4/uint4/float4e2m1/int2/uint2 unpacked, one element per byte; the
// signed ones sign-extended).
size_t dataTypeSize(DataType type);
// Bits per element in ONNX's packed serialization: 4 or 2 for the sub-byte types, 0 otherwise.
int packedElementBits(DataType type);
// Lower-case name as trtexec and ONNX tools print it: "float32", "float16", "int64", ...
const char* dataTypeName(DataType type);
// Parses dataTypeName() spellings plus common aliases ("fp32", "half", "fp16", "bf16").
bool parseDataType(const std::string& text, DataType* out);
bool isFloatingPoint(DataType type);      // float16/bfloat16/float32/float64/fp8/float4
bool isInteger(DataType type);            // signed or unsigned ints, not bool
bool isSupportedDataType(DataType type);  // everything a Tensor can hold (not complex)

// IEEE half and bfloat16 conversions (round to nearest even).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);
float fp8E4M3ToFloat(uint8_t bits);
uint8_t floatToFp8E4M3(float value, bool saturate = true);
float fp8E5M2ToFloat(uint8_t bits);
uint8_t floatToFp8E5M2(float value, bool saturate = true);
// The "fnuz" variants: no infinities, no negative zero, 0x80 is NaN.
float fp8E4M3FnuzToFloat(uint8_t bits);
float fp8E5M2FnuzToFloat(uint8_t bits);
uint8_t floatToFp8E4M3Fnuz(float value);
uint8_t floatToFp8E5M2Fnuz(float value);
// float4 E2M1 codes in the low 4 bits. Encoding rounds to nearest even and saturates to
// +-6 (infinities too); NaN, which E2M1 lacks, becomes -0 as the ONNX reference's does.
float float4E2M1ToFloat(uint8_t code);
uint8_t floatToFloat4E2M1(float value);
// float8 E8M0 (a biased exponent, no sign, no zero). Encoding drops the sign and rounds
// the mantissa away as Cast-24's round_mode says; with saturate, values that would round
// past the largest code stay at 2^127 instead of becoming NaN.
enum class E8M0Rounding { kUp, kDown, kNearest };
float fp8E8M0ToFloat(uint8_t code);
uint8_t floatToFp8E8M0(float value, bool saturate = true,
                       E8M0Rounding rounding = E8M0Rounding::kUp);

// Storage wrappers so templates can tell half and bfloat16 from uint16_t.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float v) : bits(floatToHalf(v)) {}
  operator float() const { return halfToFloat(bits); }
};
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float v) : bits(floatToBFloat16(v)) {}
  operator float() const { return bfloat16ToFloat(bits); }
};

}  // namespace kiln
