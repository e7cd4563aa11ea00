// Structure-aware mutations of ONNX models for the fuzz targets (fuzz_onnx_import, and
// fuzz_plan_load for a plan's model section): one meaningful change (a dim, an
// attribute's ints or floats, an initializer's dims, data type or data length, an opset
// or IR version, a node's inputs) to a parsed ModelProto, plus the "interesting" values
// both draw from (0, -1, powers of two near the int32/int64 limits, a value whose
// product with 3 wraps to 2, NaN, infinities).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <random>

namespace kiln::fuzz {

using Rng = std::minstd_rand;

// A small int (-4..11) one time in three, else one of the boundary values.
int64_t interestingInt(Rng& rng);
// One of the float boundary values (0, -0, 1, 1e30, inf, NaN, max, denormal ...).
float interestingFloat(Rng& rng);

// One structural change to `model`; false when it has nothing of the kind picked.
bool mutateOnnxModel(onnx::ModelProto* model, Rng& rng);

}  // namespace kiln::fuzz
