// What the elementwise family shares on the host and across its host/device seam
// (elementwise.cpp: unary math and activations; elementwise_binary.cpp: binary arithmetic,
// comparisons, logic, PRelu, SwiGLU, Pow; elementwise_nary_cast.cpp: Sum/Mean/Max/Min,
// Where, Cast, CastLike; their device halves *_impl.cu): the type sets and support
// predicates, the input checks, and the broadcast plan (Operand) the host works out and
// the kernels read. Plain C++ (g++ and nvcc); the device helpers are in
// elementwise_common.cuh. Internal to kiln_cuda.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/device_shapes.h"
#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/op_common.h"
#include "kiln/data_type.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

// Registered by registerElementwiseGpuKernels (elementwise.cpp) after its unary ops.
void registerBinaryElementwiseGpuKernels(GpuKernelRegistry& registry);
void registerNaryAndCastGpuKernels(GpuKernelRegistry& registry);

namespace ew {

// Every type a device half's launcher dispatches on: the floats, the integers and bool.
constexpr uint32_t kElementwiseDeviceTypes =
    device_types::kFloats | device_types::kIntegers | device_types::kBool;

// ---- Type sets (mirroring the CPU's TypeSet) and support predicates.

enum class TypeSet {
  kAll,      // every numeric type and bool
  kNumeric,  // float32/16/bf16/64 and the integers
  kFloat,    // float32/16/bf16/64
  kInteger,  // int8..uint64
  kSigned,   // floats and signed integers
  kBool,
};

inline bool isGpuFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64;
}
inline bool isGpuSignedInt(DataType t) {
  return t == DataType::kInt8 || t == DataType::kInt16 || t == DataType::kInt32 ||
         t == DataType::kInt64;
}
inline bool isGpuUnsignedInt(DataType t) {
  return t == DataType::kUInt8 || t == DataType::kUInt16 || t == DataType::kUInt32 ||
         t == DataType::kUInt64;
}

inline bool inTypeSet(DataType t, TypeSet set) {
  if (t == DataType::kBool) return set == TypeSet::kAll || set == TypeSet::kBool;
  if (isGpuFloat(t)) return set != TypeSet::kInteger && set != TypeSet::kBool;
  if (isGpuSignedInt(t)) return set != TypeSet::kFloat && set != TypeSet::kBool;
  if (isGpuUnsignedInt(t)) {
    return set == TypeSet::kAll || set == TypeSet::kNumeric || set == TypeSet::kInteger;
  }
  return false;
}

inline std::string typeReason(DataType t) {
  return std::string("no GPU kernel for ") + dataTypeName(t) + " inputs";
}

// Every known input type in kSet.
template <TypeSet kSet>
std::string supportsSet(const Node&, const std::vector<DataType>& types) {
  for (DataType t : types) {
    if (t != DataType::kUndefined && !inTypeSet(t, kSet)) return typeReason(t);
  }
  return "";
}

// The support predicates the family's registrations name.
inline constexpr GpuSupportFn kSupportsAll = &supportsSet<TypeSet::kAll>;
inline constexpr GpuSupportFn kSupportsNumeric = &supportsSet<TypeSet::kNumeric>;
inline constexpr GpuSupportFn kSupportsFloat = &supportsSet<TypeSet::kFloat>;
inline constexpr GpuSupportFn kSupportsInteger = &supportsSet<TypeSet::kInteger>;
inline constexpr GpuSupportFn kSupportsSigned = &supportsSet<TypeSet::kSigned>;
inline constexpr GpuSupportFn kSupportsBool = &supportsSet<TypeSet::kBool>;

// Where: a bool condition and X, Y of any GPU type.
inline std::string supportsWhere(const Node&, const std::vector<DataType>& types) {
  for (size_t i = 0; i < types.size(); ++i) {
    DataType t = types[i];
    if (t == DataType::kUndefined) continue;
    if (i == 0 ? t != DataType::kBool : !inTypeSet(t, TypeSet::kAll)) return typeReason(t);
  }
  return "";
}

// Cast: numeric or bool on both sides; float8, int4/2, float4 and strings stay on the host.
inline std::string supportsCast(const Node& node, const std::vector<DataType>& types) {
  if (!types.empty() && types[0] != DataType::kUndefined && !inTypeSet(types[0], TypeSet::kAll))
    return typeReason(types[0]);
  const int64_t to = node.attrInt("to", 0);
  if (to <= 0 || to > kLastDataTypeCode || !inTypeSet(static_cast<DataType>(to), TypeSet::kAll))
    return "no GPU kernel for casts to data type code " + std::to_string(to);
  return "";
}

// CastLike: the target type is input 1's.
inline std::string supportsCastLike(const Node& node, const std::vector<DataType>& types) {
  return supportsSet<TypeSet::kAll>(node, types);
}

inline Status checkType(const GpuKernelContext& ctx, const char* what, DataType type, TypeSet set) {
  if (inTypeSet(type, set)) return Status::ok();
  return ctx.unsupported(std::string(what) + " has data type " + dataTypeName(type) +
                         ", which this operator does not take");
}

using cuda::requireInputs;  // op_common.h's

// The most dims a broadcast plan holds (device_shapes.h's kMaxRank).
constexpr int kMaxOperandRank = kMaxRank;

// The coalesced output dims and an operand's element strides over them (0 on broadcast
// dims).
using OperandShape = ShapeInfo;

// ---- Broadcast planning (host).

// An operand read at output index i: i itself, element 0, or through strides.
enum OperandMode : int { kContiguous = 0, kScalar = 1, kStrided = 2 };

struct Operand {
  OperandShape info;  // coalesced output dims and this operand's strides (kStrided only)
  int mode = kContiguous;
  bool small = false;  // every index fits 32 bits: cheaper division
  // kStrided with an innermost output dim that is a multiple of 8: a pack of up to 8
  // consecutive outputs stays in one row, so its operand elements are consecutive
  // (innerStride 1) or all the same (innerStride 0) and one index computation serves it.
  bool packRows = false;
  int innerStride = 0;
};

// The ops row's broadcast (ops/broadcast_params.h), its error named after the node.
Status broadcastPair(const GpuKernelContext& ctx, const Shape& a, const Shape& b, Shape* out);

// Plans how each of `inputs` is read at the indices of `out`. Size-1 output dims are
// dropped and adjacent dims merge where every input is contiguous (or broadcast) across
// both, so [N,C,H,W] + [1,C,1,1] reads through 3 dims: N, C and H*W. Unsupported when more
// than kMaxOperandRank dims remain.
Status planOperands(const GpuKernelContext& ctx, const Shape& out,
                    const std::vector<const Shape*>& inputs, Operand* operands);

// A float attribute, or `fallback` when the node has none.
inline float attr(const GpuKernelContext& ctx, const char* name, float fallback) {
  return ctx.node().attrFloat(name, fallback);
}

}  // namespace ew
}  // namespace kiln::cuda
