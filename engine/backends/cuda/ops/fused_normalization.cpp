// CUDA kernels of the ai.kiln normalizations the passes create (contract and
// reference: cpu/ops/fused_normalization.cpp):
//   ScaledMaskedSoftmax(X, [M]; scale)     Y = softmax(X * scale + M) over the last axis
//   AddLayerNorm(A, B, gamma, [beta]; eps)  S = A + B, Y = LayerNorm(S) [, S]
//     (rms = 1: Y = S / sqrt(mean(S^2) + eps) * gamma [+ beta], RMSNormalization's form)
//     (residual_after = 1: Y = LayerNorm(A) * gamma + beta + B, the post-norm residual; no S)
// Storage float32, float16 or bfloat16 (one type for every input), arithmetic in
// float. A row of up to kWarpRowLimit elements belongs to one warp and stays in its
// registers between the passes (max/sum, then mean/variance), so X, M, A and B are
// read once and Y written once; each lane moves 16 bytes at a time (4 float32 or 8
// 16-bit elements; 4 16-bit elements where a row is not a multiple of 8) where the last
// dims are contiguous and aligned. Longer rows get a block
// each and re-read their inputs per pass. Inputs broadcast to the output as numpy
// does: each row finds its start through the broadcast strides, and a broadcast
// last dim is read with stride 0 (through single-element packs).
//
// This is the host half (checks, row maps, outputs, registration); the kernels are
// fused_normalization_impl.cu's (contract: fused_normalization_impl.h).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/device_type_sets.h"
#include "backends/cuda/ops/fused_normalization_impl.h"
#include "backends/cuda/ops/normalization_common.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

using namespace fused_norm;

// "" when every present input has one float storage type (float64 runs on the host).
std::string supportsOneFloatStorage(const Node& node, const std::vector<DataType>& types) {
  DataType first = DataType::kUndefined;
  for (DataType t : types) {
    if (t == DataType::kUndefined) continue;
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return std::string("no GPU kernel for ") + node.opType + " on " + dataTypeName(t);
    if (first != DataType::kUndefined && t != first) return "inputs of mixed float types";
    first = t;
  }
  return "";
}

// Numpy broadcasting of two shapes, with the node's error when they do not fit.
Status broadcastShape(const GpuKernelContext& ctx, const Shape& a, const Shape& b,
                      const char* names, Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return ctx.error(std::string(names) + " of shapes " + shapeToString(a) + " and " +
                       shapeToString(b) + " do not broadcast");
    (*out)[i] = da == 1 ? db : da;
  }
  return Status::ok();
}

Status rowMap(const GpuKernelContext& ctx, const Shape& in, const Shape& out, RowMap* map) {
  map->direct = shapeNumel(in) == shapeNumel(out);
  if (map->direct) return Status::ok();
  if (out.size() > static_cast<size_t>(nm::kStridedMaxRank))
    return ctx.unsupported("a broadcast input of rank > " + std::to_string(nm::kStridedMaxRank));
  if (shapeNumel(out) / std::max<int64_t>(out.back(), 1) > int64_t{UINT32_MAX})
    return ctx.unsupported("a broadcast input over more than 2^32 rows");
  const nm::StridedIndex info = nm::broadcastIndex(in, out);
  map->lastStride = info.strides[out.size() - 1];
  map->rank = 0;
  for (size_t d = 0; d + 1 < out.size(); ++d) {
    if (out[d] == 1) continue;
    const int64_t stride = info.strides[d];
    const int last = map->rank - 1;
    if (last >= 0 && map->strides[last] == stride * out[d]) {  // dim d continues the last
      map->dims[last] *= static_cast<uint32_t>(out[d]);
      map->strides[last] = stride;
      continue;
    }
    map->dims[map->rank] = static_cast<uint32_t>(out[d]);
    map->strides[map->rank++] = stride;
  }
  return Status::ok();
}

Status requireLastAxis(const GpuKernelContext& ctx, int64_t rank) {
  const int64_t axis = ctx.node().attrInt("axis", -1);
  if (axis == -1 || (rank > 0 && axis == rank - 1)) return Status::ok();
  return ctx.error("attribute 'axis' " + std::to_string(axis) + " is not the last axis of rank " +
                   std::to_string(rank) + " (only the last axis is supported)");
}

bool aligned(const void* p, size_t bytes) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// The elements each access moves: kFusedWidePack for 16-bit types, else kFusedPack (16
// bytes either way), or kFusedPack for 16-bit types (8 bytes) where n is not a multiple of
// 8 or a buffer not aligned to 16 bytes, when every row is contiguous and n a multiple of
// the pack and every buffer aligned to one; else 1.
int packWidth(size_t elementBytes, int64_t n, std::initializer_list<const RowMap*> maps,
              std::initializer_list<const void*> pointers) {
  for (const RowMap* m : maps)
    if (m && m->lastStride != 1) return 1;
  auto fits = [&](int pack) {
    if (n % pack != 0) return false;
    for (const void* p : pointers)
      if (!aligned(p, elementBytes * pack)) return false;
    return true;
  };
  if (elementBytes == 2 && fits(kFusedWidePack)) return kFusedWidePack;
  return fits(kFusedPack) ? kFusedPack : 1;
}

std::string packText(int pack) {
  return pack > 1 ? ", packs of " + std::to_string(pack) : "";
}

Status scaledMaskedSoftmaxKernel(GpuKernelContext& ctx) {
  if (ctx.inputCount() < 1 || !ctx.hasInput(0)) return ctx.error("input 'X' is missing");
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor* mask = ctx.inputCount() > 1 && ctx.hasInput(1) ? &ctx.input(1) : nullptr;
  Shape shape = x.shape;
  if (mask) KILN_RETURN_IF_ERROR(broadcastShape(ctx, x.shape, mask->shape, "X and M", &shape));
  if (shape.empty()) return ctx.error("input 'X' must have rank >= 1");
  KILN_RETURN_IF_ERROR(requireLastAxis(ctx, static_cast<int64_t>(shape.size())));
  SoftmaxLaunch launch;
  SoftmaxArgs& args = launch.args;
  args.n = shape.back();
  args.rows = args.n == 0 ? 0 : shapeNumel(shape) / args.n;
  args.scale = ctx.node().attrFloat("scale", 1.0f);
  args.maskReplaces = mask && ctx.node().attrInt("mask_replaces", 0) != 0;
  KILN_RETURN_IF_ERROR(rowMap(ctx, x.shape, shape, &args.x));
  if (mask) KILN_RETURN_IF_ERROR(rowMap(ctx, mask->shape, shape, &args.mask));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, x.type, shape));
  if (args.rows == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, x.type, device_types::kStorageFloats));
  launch.x = x.data;
  launch.mask = mask ? mask->data : nullptr;
  launch.y = y.data;
  launch.type = x.type;
  if (args.n <= kFusedWarpRowLimit) {
    launch.pack = packWidth(dataTypeSize(x.type), args.n, {&args.x, mask ? &args.mask : nullptr},
                            {x.data, launch.mask, y.data});
    ctx.setImplementation("kiln warp-per-row softmax" + packText(launch.pack));
  }
  return launchScaledMaskedSoftmax(launch, ctx.stream());
}

// gamma and beta: [n] in A's storage type.
Status checkParam(const GpuKernelContext& ctx, const DeviceTensor& t, const char* name,
                  DataType type, int64_t n) {
  if (t.type != type)
    return ctx.unsupported(std::string("input '") + name + "' of type " + dataTypeName(t.type) +
                           " with A of type " + dataTypeName(type));
  if (t.rank() != 1 || t.shape[0] != n)
    return ctx.error(std::string("input '") + name + "' of shape " + shapeToString(t.shape) +
                     " must be [" + std::to_string(n) + "] (the normalized last dim)");
  return Status::ok();
}

Status addLayerNormKernel(GpuKernelContext& ctx) {
  if (ctx.inputCount() < 3 || !ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2))
    return ctx.error("AddLayerNorm needs inputs A, B and gamma");
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  if (b.type != a.type) return ctx.error("A and B must have one type");
  Shape shape;
  KILN_RETURN_IF_ERROR(broadcastShape(ctx, a.shape, b.shape, "A and B", &shape));
  if (shape.empty()) return ctx.error("inputs 'A' and 'B' must have rank >= 1");
  KILN_RETURN_IF_ERROR(requireLastAxis(ctx, static_cast<int64_t>(shape.size())));
  AddNormLaunch launch;
  AddNormArgs& args = launch.args;
  args.n = shape.back();
  args.rows = args.n == 0 ? 0 : shapeNumel(shape) / args.n;
  args.epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  args.rms = ctx.node().attrInt("rms", 0) != 0;
  args.residualAfter = ctx.node().attrInt("residual_after", 0) != 0;
  if (args.residualAfter && ctx.wantsOutput(1))
    return ctx.error("output 'S' with residual_after = 1 (there is no sum to write)");
  KILN_RETURN_IF_ERROR(checkParam(ctx, ctx.input(2), "gamma", a.type, args.n));
  const bool hasBeta = ctx.inputCount() > 3 && ctx.hasInput(3);
  if (hasBeta) KILN_RETURN_IF_ERROR(checkParam(ctx, ctx.input(3), "beta", a.type, args.n));
  KILN_RETURN_IF_ERROR(rowMap(ctx, a.shape, shape, &args.a));
  KILN_RETURN_IF_ERROR(rowMap(ctx, b.shape, shape, &args.b));
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, a.type, shape));
  void* sum = nullptr;
  if (ctx.wantsOutput(1)) {
    KILN_ASSIGN_OR_RETURN(DeviceTensor s, ctx.allocateOutput(1, a.type, shape));
    sum = s.data;
  }
  if (args.rows == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(requireDeviceType(ctx, a.type, device_types::kStorageFloats));
  launch.a = a.data;
  launch.b = b.data;
  launch.gamma = ctx.input(2).data;
  launch.beta = hasBeta ? ctx.input(3).data : nullptr;
  launch.y = y.data;
  launch.sum = sum;
  launch.type = a.type;
  if (args.n <= kFusedWarpRowLimit) {
    launch.pack = packWidth(dataTypeSize(a.type), args.n, {&args.a, &args.b},
                            {a.data, b.data, launch.gamma, launch.beta, y.data, sum});
    const int lanes = addNormLanesPerRow(args.n, launch.pack);
    const std::string norm = args.residualAfter ? (args.rms ? "rmsnorm + add" : "layernorm + add")
                             : args.rms         ? "add + rmsnorm"
                                                : "add + layernorm";
    ctx.setImplementation(lanes < 32 ? "kiln " + norm + ", " + std::to_string(32 / lanes) +
                                           " rows a warp" + packText(launch.pack)
                                     : "kiln warp-per-row " + norm + packText(launch.pack));
  }
  return launchAddLayerNorm(launch, ctx.stream());
}

}  // namespace

void registerFusedNormalizationGpuKernels(GpuKernelRegistry& registry) {
  for (auto [op, fn] : {std::pair{"ScaledMaskedSoftmax", &scaledMaskedSoftmaxKernel},
                        std::pair{"AddLayerNorm", &addLayerNormKernel}}) {
    GpuKernelEntry entry;
    entry.domain = kKilnDomain;
    entry.opType = op;
    entry.fn = fn;
    entry.supports = &supportsOneFloatStorage;
    registry.add(entry);
  }
}

}  // namespace kiln::cuda
