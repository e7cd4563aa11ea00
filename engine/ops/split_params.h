// Split's part sizes both backends cut, decided once (issue 23's op table): where the
// explicit sizes come from (`split` input from opset 13, and at opset 1; the attribute
// before 13; each backend reads its input with its own reader), their checks, or equal
// parts. Host-only, no
// backend header; errors are messages without the node's name (the kernels add it).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln::ops {

// True when Split at `opset` reads its sizes from input 1 (when present) rather than
// from the `split` attribute.
bool splitSizesFromInput(int opset);

// The sizes of the `outputs` parts of a dim of `dim` elements: `given` (one per output,
// none negative, adding up to the dim, the sum checked before each addition so sizes near
// INT64_MAX cannot wrap it), or, when `given` is empty, equal parts (opset 18+:
// `num_outputs`, the last part smaller when it does not divide the dim; before 18 the
// outputs must divide it).
Result<std::vector<int64_t>> splitSizes(const Node& node, int opset, int64_t dim, size_t outputs,
                                        const std::vector<int64_t>& given);

// The same, with the explicit sizes found as every backend finds them: input 1 read by
// `readSplitInput` (called only when the node has that input and `opset` reads it), before
// opset 13 the `split` attribute, else none (equal parts). A reader's error comes back as
// it is; the others are messages without the node's name, as above.
using SplitInputReader = std::function<Status(std::vector<int64_t>*)>;
Result<std::vector<int64_t>> splitSizes(const Node& node, int opset, int64_t dim, size_t outputs,
                                        bool hasSplitInput, const SplitInputReader& readSplitInput);

}  // namespace kiln::ops
