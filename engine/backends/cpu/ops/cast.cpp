// Cast and CastLike between every element type a Tensor holds: the numeric types, bool,
// string, the float8 formats (with the opset-19 `saturate` attribute; E8M0 with the opset-24
// `round_mode`), float4e2m1 and int4/uint4/int2/uint2 (stored unpacked, one element per byte).
// Uncommon sources are first normalised (small floats decoded to float32, sub-byte ints
// widened, strings parsed) so that the core is one numeric-to-numeric loop.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cpu/ops/elementwise.h"

namespace kiln::cpu {
namespace {

// ---- float8. One description covers the four ONNX formats: FN has no infinity and one
// NaN pattern (S.1111.111), FNUZ has no infinity, no negative zero and NaN = 0x80, and
// E5M2 is IEEE-like.
struct Fp8Format {
  int mantissaBits;
  int bias;
  bool hasInf;
  bool unsignedZero;
  uint8_t maxCode;  // largest finite magnitude
};
constexpr Fp8Format kE4M3FN{3, 7, false, false, 0x7E};    // max 448
constexpr Fp8Format kE4M3FNUZ{3, 8, false, true, 0x7F};   // max 240
constexpr Fp8Format kE5M2{2, 15, true, false, 0x7B};      // max 57344
constexpr Fp8Format kE5M2FNUZ{2, 16, false, true, 0x7F};  // max 57344

const Fp8Format* fp8Format(DataType type) {
  switch (type) {
    case DataType::kFp8E4M3:
      return &kE4M3FN;
    case DataType::kFp8E4M3Uz:
      return &kE4M3FNUZ;
    case DataType::kFp8E5M2:
      return &kE5M2;
    case DataType::kFp8E5M2Uz:
      return &kE5M2FNUZ;
    default:
      return nullptr;
  }
}

float fp8ToFloat(uint8_t bits, const Fp8Format& f) {
  const uint8_t magnitude = bits & 0x7F;
  const bool negative = (bits & 0x80) != 0;
  if (f.unsignedZero && bits == 0x80) return std::numeric_limits<float>::quiet_NaN();
  if (!f.unsignedZero && !f.hasInf && magnitude == 0x7F)
    return std::numeric_limits<float>::quiet_NaN();
  if (f.hasInf && magnitude >= 0x7C) {
    if (magnitude > 0x7C) return std::numeric_limits<float>::quiet_NaN();
    return negative ? -std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::infinity();
  }
  const int exponent = magnitude >> f.mantissaBits;
  const int mantissa = magnitude & ((1 << f.mantissaBits) - 1);
  const float value = exponent == 0 ? std::ldexp(float(mantissa), 1 - f.bias - f.mantissaBits)
                                    : std::ldexp(float(mantissa + (1 << f.mantissaBits)),
                                                 exponent - f.bias - f.mantissaBits);
  return negative ? -value : value;
}

// Round to nearest even. Out-of-range values (infinity included) become the largest finite
// value when saturating, else infinity (E5M2) or NaN, as the Cast spec's table says.
uint8_t floatToFp8(float x, const Fp8Format& f, bool saturate) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const uint8_t nan = f.unsignedZero ? 0x80 : static_cast<uint8_t>(sign | 0x7F);
  if (std::isnan(x)) return nan;
  const uint8_t overflow =
      saturate ? static_cast<uint8_t>(sign | f.maxCode) : (f.hasInf ? sign | 0x7C : nan);
  const double a = std::fabs(double(x));
  if (std::isinf(a)) return overflow;
  if (a == 0) return f.unsignedZero ? 0 : sign;
  // a = q * 2^(e - m) with the exponent clamped to the smallest normal one; then the code
  // is ((e - eMin) << m) + q for normals and subnormals alike, and q == 2^(m+1) after
  // rounding carries into the exponent by itself.
  const int eMin = 1 - f.bias;
  int e = std::ilogb(a);
  if (e < eMin) e = eMin;
  const double q = std::nearbyint(std::ldexp(a, f.mantissaBits - e));
  const double code = std::ldexp(double(e - eMin), f.mantissaBits) + q;
  if (code > f.maxCode) return overflow;
  if (code == 0) return f.unsignedZero ? 0 : sign;
  return static_cast<uint8_t>(sign | static_cast<uint8_t>(code));
}

// ---- Numeric conversions.

// double -> float rounding to odd, so that a second rounding to half or bfloat16 is exact
// (plain double -> float -> half could round twice).
float toFloatRoundOdd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || std::isnan(d)) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 1) == 0) f = std::nextafter(f, static_cast<float>(d > f ? INFINITY : -INFINITY));
  return f;
}

// One element, with ONNX Cast semantics: float -> int truncates, anything -> bool is != 0.
template <class To, class From>
To convertValue(From v) {
  using CF = ComputeType<From>;
  const CF x = static_cast<CF>(v);
  if constexpr (std::is_same_v<To, bool>) {
    return x != CF(0);
  } else if constexpr (kIsInteger<To> && std::is_floating_point_v<CF>) {
    return truncateToInteger<To>(double(x));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<CF, float>)
      return To(x);
    else
      return To(toFloatRoundOdd(double(x)));
  } else {
    return static_cast<To>(x);
  }
}

Status convertNumeric(KernelContext& ctx, const Tensor& in, Tensor& out) {
  return dispatchTypeSet<TypeSet::kAll>(ctx, in.type(), [&](auto fromTag) -> Status {
    using From = typename decltype(fromTag)::type;
    return dispatchTypeSet<TypeSet::kAll>(ctx, out.type(), [&](auto toTag) -> Status {
      using To = typename decltype(toTag)::type;
      mapUnary(in.data<From>(), out.data<To>(), in.numel(),
               [](From v) { return convertValue<To>(v); });
      return Status::ok();
    });
  });
}

// ---- Sub-byte integers (int4/uint4/int2/uint2, one value per byte).

bool isSubByteInteger(DataType type) {
  return type == DataType::kInt4 || type == DataType::kUInt4 || type == DataType::kInt2 ||
         type == DataType::kUInt2;
}

// Values round half to even. Until Cast-23 they then saturate (the ONNX int4 reference
// clipped); from Cast-24 the reference casts like any integer narrowing and keeps the low
// bits, so 8 -> int4 is -8 and -1 -> uint2 is 3. NaN, which has no integer value, becomes 0.
Status convertToSubByteInt(KernelContext& ctx, const Tensor& in, Tensor& out, bool wrap) {
  const int bits = packedElementBits(out.type());
  const bool isSigned = out.type() == DataType::kInt4 || out.type() == DataType::kInt2;
  const double lo = isSigned ? -double(1 << (bits - 1)) : 0;
  const double hi = isSigned ? double((1 << (bits - 1)) - 1) : double((1 << bits) - 1);
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const uint64_t signBit = uint64_t{1} << (bits - 1);
  return dispatchTypeSet<TypeSet::kAll>(ctx, in.type(), [&](auto tag) -> Status {
    using From = typename decltype(tag)::type;
    const From* src = in.data<From>();
    auto* dst = static_cast<unsigned char*>(out.rawData());
    for (int64_t i = 0; i < in.numel(); ++i) {
      int64_t r = 0;
      if constexpr (kIsFloat<From>) {
        const double v = double(ComputeType<From>(src[i]));
        if (!wrap) {
          r = std::isnan(v) ? 0 : static_cast<int64_t>(std::nearbyint(std::clamp(v, lo, hi)));
        } else if (std::isfinite(v)) {
          r = truncateToInteger<int64_t>(std::nearbyint(v));
        }
      } else {
        r = static_cast<int64_t>(src[i]);
        if (!wrap) r = static_cast<int64_t>(std::clamp(double(r), lo, hi));
      }
      uint64_t low = static_cast<uint64_t>(r) & mask;
      if (isSigned && (low & signBit)) low |= ~mask;  // sign-extend into the byte
      dst[i] = static_cast<unsigned char>(low);
    }
    return Status::ok();
  });
}

// ---- Strings.

// Shortest decimal digits that read back to the same value of `type` ("12345", no point)
// and the decimal exponent of the first digit.
void shortestDigits(double v, DataType type, std::string* digits, int* exponent) {
  char buffer[64];
  char* end = buffer;
  if (type == DataType::kFloat64) {
    end = std::to_chars(buffer, buffer + sizeof(buffer), v, std::chars_format::scientific).ptr;
  } else if (type == DataType::kFloat32) {
    end =
        std::to_chars(buffer, buffer + sizeof(buffer), float(v), std::chars_format::scientific).ptr;
  } else {
    // float16/bfloat16: the fewest digits that convert back to the same 16-bit value.
    auto same = [type](float a, float b) {
      return type == DataType::kFloat16 ? floatToHalf(a) == floatToHalf(b)
                                        : floatToBFloat16(a) == floatToBFloat16(b);
    };
    for (int precision = 0; precision < 9; ++precision) {
      end = std::to_chars(buffer, buffer + sizeof(buffer), float(v), std::chars_format::scientific,
                          precision)
                .ptr;
      if (same(std::strtof(std::string(buffer, end).c_str(), nullptr), float(v))) break;
    }
  }
  const std::string text(buffer, end);  // "d.ddde+XX"
  const size_t e = text.find('e');
  digits->clear();
  for (size_t i = 0; i < e; ++i) {
    if (text[i] != '.') digits->push_back(text[i]);
  }
  while (digits->size() > 1 && digits->back() == '0') digits->pop_back();
  *exponent = std::atoi(text.c_str() + e + 1);
}

// Floats print as numpy's astype(str) does, which the ONNX reference and its test data
// use: shortest round-trip digits, positional with at least one fractional digit, and
// scientific below 1e-4 or from 1e16 (float64), 1e6 (float32, bfloat16) or 1e3
// (float16). NaN and infinities
// use the spellings the Cast spec parses back: "NaN", "INF", "-INF".
std::string formatFloat(double v, DataType type) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  std::string out = std::signbit(v) ? "-" : "";
  if (v == 0) return out + "0.0";
  std::string digits;
  int exponent = 0;
  shortestDigits(std::fabs(v), type, &digits, &exponent);
  // numpy picks the notation from the value, not from its shortest digits: float32 1e-4
  // is 9.99999975e-05 and prints as "1e-04".
  const double a = std::fabs(v);
  const double upper = type == DataType::kFloat64 ? 1e16 : (type == DataType::kFloat16 ? 1e3 : 1e6);
  if (a < 1e-4 || a >= upper) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + suffix;
  }
  if (exponent < 0) return out + "0." + std::string(-exponent - 1, '0') + digits;
  const size_t intDigits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= intDigits)
    return out + digits + std::string(intDigits - digits.size(), '0') + ".0";
  return out + digits.substr(0, intDigits) + "." + digits.substr(intDigits);
}

Status formatStrings(KernelContext& ctx, const Tensor& in, Tensor& out) {
  std::vector<std::string>& dst = out.strings();
  return dispatchTypeSet<TypeSet::kAll>(ctx, in.type(), [&](auto tag) -> Status {
    using From = typename decltype(tag)::type;
    const From* src = in.data<From>();
    for (int64_t i = 0; i < in.numel(); ++i) {
      if constexpr (kIsFloat<From>) {
        dst[i] = formatFloat(double(ComputeType<From>(src[i])), in.type());
      } else if constexpr (std::is_same_v<From, bool>) {
        dst[i] = src[i] ? "True" : "False";  // as numpy prints them
      } else {
        dst[i] = std::to_string(src[i]);
      }
    }
    return Status::ok();
  });
}

// Parses plain and scientific numbers plus "NaN", "INF", "+INF", "-INF" (any case, which
// strtod accepts) and the "True"/"False" that bool tensors print as. Integers parse exactly
// when they fit int64.
bool parseNumber(const std::string& text, double* value, int64_t* integer, bool* isInteger) {
  if (text == "True" || text == "False") {
    *isInteger = true;
    *integer = text == "True" ? 1 : 0;
    *value = static_cast<double>(*integer);
    return true;
  }
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long long asInt = std::strtoll(begin, &end, 10);
  *isInteger = end != begin && *end == '\0' && errno == 0;
  if (*isInteger) {
    *integer = asInt;
    *value = static_cast<double>(asInt);
    return true;
  }
  *value = std::strtod(begin, &end);
  return end != begin && *end == '\0';
}

// Parses every string into a float64 tensor (or int64 for integer targets, keeping large
// integers exact); the caller converts that to the target type.
Status parseStrings(KernelContext& ctx, const Tensor& in, bool integerTarget, Tensor* parsed) {
  *parsed = Tensor(integerTarget ? DataType::kInt64 : DataType::kFloat64, in.shape());
  const std::vector<std::string>& src = in.strings();
  for (int64_t i = 0; i < in.numel(); ++i) {
    double value = 0;
    int64_t integer = 0;
    bool isInt = false;
    if (!parseNumber(src[i], &value, &integer, &isInt)) {
      return ctx.error("cannot parse string '" + src[i] + "' (element " + std::to_string(i) +
                       ") as a number");
    }
    if (integerTarget)
      parsed->data<int64_t>()[i] = isInt ? integer : truncateToInteger<int64_t>(value);
    else
      parsed->data<double>()[i] = value;
  }
  return Status::ok();
}

// ---- The conversion graph.

bool castableType(DataType type) {
  return inTypeSet(type, TypeSet::kAll) || type == DataType::kString || fp8Format(type) ||
         isSubByteInteger(type) || type == DataType::kFloat4E2M1 || type == DataType::kFp8E8M0;
}

// What a conversion needs beyond the two types: Cast's attributes and opset.
struct CastOptions {
  bool saturate = true;
  bool wrapSubByte = false;
  E8M0Rounding e8m0Rounding = E8M0Rounding::kUp;
};

// Decodes the float4 / float8e8m0 codes of `in` into float32.
Tensor decodeSmallFloats(const Tensor& in) {
  Tensor decoded(DataType::kFloat32, in.shape());
  const uint8_t* src = in.data<uint8_t>();
  float* dst = decoded.data<float>();
  const bool fp4 = in.type() == DataType::kFloat4E2M1;
  for (int64_t i = 0; i < in.numel(); ++i)
    dst[i] = fp4 ? float4E2M1ToFloat(src[i]) : fp8E8M0ToFloat(src[i]);
  return decoded;
}

// Converts `in` into the already allocated `out` of the same shape.
Status convertTensor(KernelContext& ctx, const Tensor& in, Tensor& out,
                     const CastOptions& options) {
  const DataType from = in.type();
  const DataType to = out.type();
  const int64_t n = in.numel();
  if (from == to) {
    if (from == DataType::kString)
      out.strings() = in.strings();
    else if (n > 0)
      std::memcpy(out.rawData(), in.rawData(), in.byteSize());
    return Status::ok();
  }
  if (const Fp8Format* f = fp8Format(from)) {
    Tensor decoded(DataType::kFloat32, in.shape());
    const uint8_t* src = in.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) decoded.data<float>()[i] = fp8ToFloat(src[i], *f);
    return convertTensor(ctx, decoded, out, options);
  }
  if (from == DataType::kFloat4E2M1 || from == DataType::kFp8E8M0) {
    return convertTensor(ctx, decodeSmallFloats(in), out, options);
  }
  if (isSubByteInteger(from)) {
    const bool isSigned = from == DataType::kInt4 || from == DataType::kInt2;
    Tensor widened(isSigned ? DataType::kInt8 : DataType::kUInt8, in.shape());
    if (n > 0) std::memcpy(widened.rawData(), in.rawData(), static_cast<size_t>(n));
    return convertTensor(ctx, widened, out, options);
  }
  if (from == DataType::kString) {
    Tensor parsed;
    KILN_RETURN_IF_ERROR(parseStrings(ctx, in, isInteger(to) && !fp8Format(to), &parsed));
    return convertTensor(ctx, parsed, out, options);
  }
  if (to == DataType::kString) return formatStrings(ctx, in, out);
  const Fp8Format* f = fp8Format(to);
  if (f || to == DataType::kFloat4E2M1 || to == DataType::kFp8E8M0) {
    Tensor asFloat = in;
    if (from != DataType::kFloat32) {
      asFloat = Tensor(DataType::kFloat32, in.shape());
      KILN_RETURN_IF_ERROR(convertNumeric(ctx, in, asFloat));
    }
    const float* src = asFloat.data<float>();
    uint8_t* dst = out.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (f)
        dst[i] = floatToFp8(src[i], *f, options.saturate);
      else if (to == DataType::kFloat4E2M1)
        dst[i] = floatToFloat4E2M1(src[i]);  // always saturates
      else
        dst[i] = floatToFp8E8M0(src[i], options.saturate, options.e8m0Rounding);
    }
    return Status::ok();
  }
  if (isSubByteInteger(to)) return convertToSubByteInt(ctx, in, out, options.wrapSubByte);
  return convertNumeric(ctx, in, out);
}

Status castInto(KernelContext& ctx, DataType to) {
  const Tensor& in = ctx.input(0);
  if (!castableType(in.type())) {
    return ctx.unsupported(std::string("input has data type ") + dataTypeName(in.type()));
  }
  if (!castableType(to)) {
    return ctx.unsupported(std::string("cannot cast to data type ") + dataTypeName(to));
  }
  CastOptions options;
  options.saturate = ctx.node().attrInt("saturate", 1) != 0;
  options.wrapSubByte = ctx.opset() >= 24;
  const std::string roundMode = ctx.node().attrString("round_mode", "up");
  if (roundMode == "down")
    options.e8m0Rounding = E8M0Rounding::kDown;
  else if (roundMode == "nearest")
    options.e8m0Rounding = E8M0Rounding::kNearest;
  else if (roundMode != "up")
    return ctx.error("attribute 'round_mode' = '" + roundMode + "' is not up, down or nearest");
  Tensor& out = ctx.allocateOutput(0, to, in.shape());
  return convertTensor(ctx, in, out, options);
}

Status castKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  if (!ctx.node().hasAttr("to")) return ctx.error("attribute 'to' is required");
  const int64_t to = ctx.node().attrInt("to", 0);
  if (to <= 0 || to > kLastDataTypeCode) {
    return ctx.unsupported("attribute 'to' = " + std::to_string(to) + " is not a known data type");
  }
  return castInto(ctx, static_cast<DataType>(to));
}

// CastLike: Cast to the type of input 1 (whose values are ignored).
Status castLikeKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  return castInto(ctx, ctx.input(1).type());
}

}  // namespace

void registerCastKernels(KernelRegistry& registry) {
  // Cast-1 spelled `to` as a string; from 6 on it is the TensorProto code. Later versions
  // only add types (and `saturate`, 19).
  registry.add("Cast", 6, 1000, &castKernel);
  registry.add("CastLike", 15, 1000, &castLikeKernel);
}

}  // namespace kiln::cpu
