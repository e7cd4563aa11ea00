// Source generation for PointwiseChain kernels (contract: pointwise_codegen.h). The
// formulas mirror the CPU reference (cpu/ops/pointwise_chain.cpp) operation for
// operation, NaN handling included; the caller compiles without FMA contraction, so
// float32 results differ from the reference only by the device's libm (erff, tanhf,
// expf: a few ulp).
#include "backends/cuda/ops/pointwise_codegen.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace kiln::cuda {
namespace {

// Fixed text: the argument struct, 16-bit conversions (round to nearest even; NaN
// stays NaN), the clamps of the activations, the pack type.
constexpr const char* kPrelude = R"(struct PointwiseArgs {
  const void* in[16];
  void* out;
  long long n;
  long long dims[8];
  long long strides[16][8];
};
__device__ __forceinline__ float kiln_load_f32(float v) { return v; }
__device__ __forceinline__ float kiln_store_f32(float v) { return v; }
__device__ __forceinline__ float kiln_load_f16(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short kiln_store_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float kiln_load_bf16(unsigned short b) {
  return __int_as_float((int)(((unsigned int)b) << 16));
}
__device__ __forceinline__ unsigned short kiln_store_bf16(float f) {
  const unsigned int u = (unsigned int)__float_as_int(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float kiln_clamp01(float v) {
  const float m = v < 1.f ? v : 1.f;
  return 0.f < m ? m : 0.f;
}
// std::min(std::max(x, lo), hi), NaN passing through as on the CPU.
__device__ __forceinline__ float kiln_clip(float x, float lo, float hi) {
  const float m = x < lo ? lo : x;
  return hi < m ? hi : m;
}
template <int N, class T>
struct __align__(N * sizeof(T)) KilnPack {
  T v[N];
};
)";

const char* storageName(DataType t) {
  return t == DataType::kFloat32 ? "float" : "unsigned short";
}

const char* typeSuffix(DataType t) {
  return t == DataType::kFloat16 ? "f16" : t == DataType::kBFloat16 ? "bf16" : "f32";
}

// A float literal that is exactly `v` (inf and NaN too): its bit pattern.
std::string floatLiteral(float v) {
  unsigned int bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  char text[48];
  std::snprintf(text, sizeof(text), "__int_as_float(0x%08x)", bits);
  return text;
}

// prefix + n (GCC 12 warns falsely on "literal" + std::to_string(n), -Wrestrict).
std::string numbered(const char* prefix, size_t n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

std::string valueName(const PointwiseProgram& p, int id) {
  if (id < p.inputCount) return numbered("in", id);
  const int k = id - p.inputCount;
  if (k < static_cast<int>(p.constants.size())) return floatLiteral(p.constants[k]);
  return numbered("v", k - p.constants.size());
}

// The expression of one step over operand expressions x and y.
std::string stepExpression(const PointwiseStep& s, const std::string& x, const std::string& y) {
  const std::string a = floatLiteral(s.alpha), b = floatLiteral(s.beta);
  switch (s.op) {
    case PointwiseOp::kRelu:
      return "(" + x + " < 0.f ? 0.f : " + x + ")";
    case PointwiseOp::kSigmoid:
      return "1.f / (1.f + expf(-" + x + "))";
    case PointwiseOp::kTanh:
      return "tanhf(" + x + ")";
    case PointwiseOp::kExp:
      return "expf(" + x + ")";
    case PointwiseOp::kLog:
      return "logf(" + x + ")";
    case PointwiseOp::kSqrt:
      return "sqrtf(" + x + ")";
    case PointwiseOp::kNeg:
      return "-" + x;
    case PointwiseOp::kAbs:
      return "fabsf(" + x + ")";
    case PointwiseOp::kErf:
      return "erff(" + x + ")";
    case PointwiseOp::kReciprocal:
      return "1.f / " + x;
    case PointwiseOp::kGelu:
      if (s.alpha != 0.f)
        return "0.5f * " + x + " * (1.f + tanhf(0.7978845608028654f * (" + x + " + 0.044715f * " +
               x + " * " + x + " * " + x + ")))";
      return "0.5f * " + x + " * (1.f + erff(" + x + " * 0.7071067811865476f))";
    case PointwiseOp::kClip:
      return "kiln_clip(" + x + ", " + a + ", " + b + ")";
    case PointwiseOp::kLeakyRelu:
      return "(" + x + " < 0.f ? " + a + " * " + x + " : " + x + ")";
    case PointwiseOp::kHardSigmoid:
      return "kiln_clamp01(" + a + " * " + x + " + " + b + ")";
    case PointwiseOp::kHardSwish:
      return x + " * kiln_clamp01(" + x + " / 6.f + 0.5f)";
    case PointwiseOp::kSoftplus:
      return "(" + x + " > 0.f ? " + x + " + log1pf(expf(-" + x + ")) : log1pf(expf(" + x + ")))";
    case PointwiseOp::kCast:
      return std::string("kiln_load_") + typeSuffix(s.type) + "(kiln_store_" + typeSuffix(s.type) +
             "(" + x + "))";
    case PointwiseOp::kAdd:
      return x + " + " + y;
    case PointwiseOp::kSub:
      return x + " - " + y;
    case PointwiseOp::kMul:
      return x + " * " + y;
    case PointwiseOp::kDiv:
      return x + " / " + y;
    case PointwiseOp::kPow:
      return "powf(" + x + ", " + y + ")";
    case PointwiseOp::kMax:
      return "((" + x + " >= " + y + ") | (" + x + " != " + x + ") ? " + x + " : " + y + ")";
    case PointwiseOp::kMin:
      return "((" + x + " <= " + y + ") | (" + x + " != " + x + ") ? " + x + " : " + y + ")";
  }
  return "0.f";
}

// The program's statements, reading in0.. and defining v0..; the result is vLast.
void emitProgram(std::ostringstream& s, const PointwiseProgram& p, const char* indent) {
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PointwiseStep& step = p.steps[i];
    const std::string x = valueName(p, step.operands[0]);
    const std::string y = step.operands.size() > 1 ? valueName(p, step.operands[1]) : "";
    s << indent << "const float v" << i << " = " << stepExpression(step, x, y) << ";\n";
  }
}

std::string inputPointer(const PointwiseKernelSpec& spec, size_t k) {
  return std::string("((const ") + storageName(spec.inputTypes[k]) + "*)a.in[" + std::to_string(k) +
         "])";
}

// Statements defining o<k>, the element offset of every strided input k at output
// element `first` (a long long expression), from the collapsed dims and strides.
void emitStridedOffsets(std::ostringstream& s, const PointwiseKernelSpec& spec,
                        const std::string& first) {
  if (std::count(spec.access.begin(), spec.access.end(), InputAccess::kStrided) == 0) return;
  // 64-bit division is several times slower than 32-bit on the GPU.
  const char* index = spec.index32 ? "unsigned int" : "long long";
  s << "    " << index << " rest = (" << index << ")(" << first << ");\n";
  for (size_t k = 0; k < spec.access.size(); ++k)
    if (spec.access[k] == InputAccess::kStrided) s << "    long long o" << k << " = 0;\n";
  for (int d = spec.rank - 1; d >= 0; --d) {
    // The outermost index is what remains.
    s << "    { const " << index << " c = ";
    if (d > 0)
      s << "rest % (" << index << ")a.dims[" << d << "]; rest /= (" << index << ")a.dims[" << d
        << "];";
    else
      s << "rest;";
    for (size_t k = 0; k < spec.access.size(); ++k)
      if (spec.access[k] == InputAccess::kStrided)
        s << " o" << k << " += (long long)c * a.strides[" << k << "][" << d << "];";
    s << " }\n";
  }
}

bool innerContiguous(const PointwiseKernelSpec& spec, size_t k) {
  return spec.access[k] == InputAccess::kStrided && k < spec.innerContiguous.size() &&
         spec.innerContiguous[k];
}

void emitScalarKernel(std::ostringstream& s, const PointwiseProgram& p,
                      const PointwiseKernelSpec& spec) {
  s << "extern \"C\" __global__ void " << kPointwiseKernelName << "(const PointwiseArgs a) {\n"
    << "  const long long step = (long long)gridDim.x * blockDim.x;\n"
    << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += "
       "step) {\n";
  emitStridedOffsets(s, spec, "i");
  for (size_t k = 0; k < spec.access.size(); ++k) {
    const char* index = spec.access[k] == InputAccess::kFull ? "i" : nullptr;
    const std::string offset = index                                    ? index
                               : spec.access[k] == InputAccess::kScalar ? "0"
                                                                        : numbered("o", k);
    s << "    const float in" << k << " = kiln_load_" << typeSuffix(spec.inputTypes[k]) << "("
      << inputPointer(spec, k) << "[" << offset << "]);\n";
  }
  emitProgram(s, p, "    ");
  s << "    ((" << storageName(spec.outputType) << "*)a.out)[i] = kiln_store_"
    << typeSuffix(spec.outputType) << "(v" << p.steps.size() - 1 << ");\n  }\n}\n";
}

void emitVectorKernel(std::ostringstream& s, const PointwiseProgram& p,
                      const PointwiseKernelSpec& spec, int width) {
  const std::string w = std::to_string(width);
  s << "extern \"C\" __global__ void " << kPointwiseVecKernelName << "(const PointwiseArgs a) {\n"
    << "  const long long step = (long long)gridDim.x * blockDim.x;\n"
    << "  const long long packs = a.n / " << w << ";\n";
  for (size_t k = 0; k < spec.access.size(); ++k)
    if (spec.access[k] == InputAccess::kScalar)
      s << "  const float in" << k << " = kiln_load_" << typeSuffix(spec.inputTypes[k]) << "("
        << inputPointer(spec, k) << "[0]);\n";
  s << "  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < packs; p += "
       "step) {\n";
  // A strided input's pack starts at the offset of the pack's first element: the next
  // width elements are contiguous in it (innerContiguous) or one element (broadcast
  // along the innermost dim), since width divides the innermost dim (stridedPacks).
  emitStridedOffsets(s, spec, "p * " + w);
  for (size_t k = 0; k < spec.access.size(); ++k) {
    const std::string pack = "KilnPack<" + w + ", " + storageName(spec.inputTypes[k]) + ">";
    if (spec.access[k] == InputAccess::kFull)
      s << "    const " << pack << " x" << k << " = ((const " << pack << "*)a.in[" << k
        << "])[p];\n";
    else if (innerContiguous(spec, k))
      s << "    const " << pack << " x" << k << " = *(const " << pack << "*)("
        << inputPointer(spec, k) << " + o" << k << ");\n";
    else if (spec.access[k] == InputAccess::kStrided)
      s << "    const float in" << k << " = kiln_load_" << typeSuffix(spec.inputTypes[k]) << "("
        << inputPointer(spec, k) << "[o" << k << "]);\n";
  }
  const std::string outPack = "KilnPack<" + w + ", " + storageName(spec.outputType) + ">";
  s << "    " << outPack << " y;\n#pragma unroll\n    for (int j = 0; j < " << w << "; ++j) {\n";
  for (size_t k = 0; k < spec.access.size(); ++k)
    if (spec.access[k] == InputAccess::kFull || innerContiguous(spec, k))
      s << "      const float in" << k << " = kiln_load_" << typeSuffix(spec.inputTypes[k]) << "(x"
        << k << ".v[j]);\n";
  emitProgram(s, p, "      ");
  s << "      y.v[j] = kiln_store_" << typeSuffix(spec.outputType) << "(v" << p.steps.size() - 1
    << ");\n    }\n    ((" << outPack << "*)a.out)[p] = y;\n  }\n}\n";
}

}  // namespace

int PointwiseKernelSpec::packWidth() const {
  size_t widest = dataTypeSize(outputType);
  for (size_t k = 0; k < access.size(); ++k)
    if (access[k] != InputAccess::kScalar) widest = std::max(widest, dataTypeSize(inputTypes[k]));
  return static_cast<int>(16 / widest);
}

int PointwiseKernelSpec::vectorWidth() const {
  for (InputAccess a : access)
    if (a == InputAccess::kStrided && !stridedPacks) return 0;
  return packWidth();
}

std::string generatePointwiseSource(const PointwiseProgram& program,
                                    const PointwiseKernelSpec& spec) {
  std::ostringstream s;
  s << "// Generated by Kiln for a PointwiseChain: " << describePointwiseProgram(program) << "\n"
    << kPrelude;
  emitScalarKernel(s, program, spec);
  if (const int width = spec.vectorWidth()) emitVectorKernel(s, program, spec, width);
  return s.str();
}

}  // namespace kiln::cuda
