// Einsum's equation as labels, shared by the CPU kernel (backends/cpu/ops/einsum.cpp) and
// the shape rule (shape/shape_rules.cpp): numpy's einsum with explicit ("ij->ji") or
// implicit ("ij,jk") outputs, "..." broadcasting and repeated labels.
#pragma once

#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::ops {

// Letters are labelled by their char code; the dims "..." stands for get
// kEinsumEllipsisBase + j, right-aligned across the terms (j < ellipsisDims).
constexpr int kEinsumEllipsisBase = 128;

struct EinsumLabels {
  std::vector<std::vector<int>> inputs;  // one label per dim of each input
  std::vector<int> output;               // one label per output dim
  int ellipsisDims = 0;                  // the widest "..." of the terms
};

// Parses `equation` for inputs of ranks `ranks` (spaces ignored). An implicit output is the
// ellipsis dims, then the labels used once, in char order. InvalidArgument (one line) for a
// term count other than the inputs', an invalid character, a term that does not match its
// input's rank, or an output label repeated or missing from the inputs.
Status parseEinsumLabels(std::string equation, const std::vector<int>& ranks, EinsumLabels* out);

}  // namespace kiln::ops
