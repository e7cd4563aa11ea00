// ai.kiln Roll(X; shifts) -> Y: torch.roll over every axis at once, its shifts read and checked
// once for both backends.
//   Y[c_0, ..., c_n] = X[(c_0 - shifts[0]) mod d_0, ..., (c_n - shifts[n]) mod d_n]
// Y has X's shape and type. fold_slices_into_roll makes it: an export's torch.roll is
// Concat(Slice(X, s:d), Slice(X, 0:s)) along one axis (Swin's cyclic window shift, once per
// axis), which moves X twice; the Roll moves it once for every axis together. `shifts` has one
// entry per dim of X, any value (taken mod the dim; a dim of 0 takes none). Host-only, no
// backend header; errors are messages without the node's name (the kernels add it).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::ops {

constexpr const char* kRollOp = "Roll";

// The node's shifts for an input of dims `in`, each in [0, d) (0 for a dim of 0). Error:
// "shifts has 2 entries for rank 4".
Result<std::vector<int64_t>> rollShifts(const Node& node, const Shape& in);

}  // namespace kiln::ops
