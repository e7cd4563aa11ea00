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
};

// Bytes per element; 0 for kString and kUndefined, 1 for the packed 4-bit types
// (Kiln stores int4/uint4 unpacked, one element per byte).
size_t dataTypeSize(DataType type);
// Lower-case name as trtexec and ONNX tools print it: "float32", "float16", "int64", ...
const char* dataTypeName(DataType type);
// Parses dataTypeName() spellings plus common aliases ("fp32", "half", "fp16", "bf16").
bool parseDataType(const std::string& text, DataType* out);
bool isFloatingPoint(DataType type);  // float16/bfloat16/float32/float64/fp8
bool isInteger(DataType type);        // signed or unsigned ints, not bool
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
