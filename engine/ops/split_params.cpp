// Split's shared part sizes (contract: split_params.h).
#include "ops/split_params.h"

#include <algorithm>
#include <string>

#include "kiln/tensor.h"

namespace kiln::ops {

bool splitSizesFromInput(int opset) {
  return opset >= 13 || opset == 1;
}

Result<std::vector<int64_t>> splitSizes(const Node& node, int opset, int64_t dim, size_t outputs,
                                        const std::vector<int64_t>& given) {
  if (!given.empty()) {
    if (given.size() != outputs)
      return invalidArgument("split has " + std::to_string(given.size()) + " entries for " +
                             std::to_string(outputs) + " outputs");
    int64_t sum = 0;
    for (int64_t s : given) {
      if (s < 0) return invalidArgument("split has a negative size");
      // Compared before adding: sizes near INT64_MAX overflowed the sum.
      if (s > dim - sum)
        return invalidArgument("split sizes " + shapeToString(given) +
                               " add up to more than the dim " + std::to_string(dim));
      sum += s;
    }
    if (sum != dim)
      return invalidArgument("split sizes add up to " + std::to_string(sum) + ", not the dim " +
                             std::to_string(dim));
    return given;
  }
  int64_t parts = static_cast<int64_t>(outputs);
  if (opset >= 18) {
    if (!node.hasAttr("num_outputs")) return invalidArgument("needs split or num_outputs");
    parts = node.attrInt("num_outputs", parts);
    if (parts != static_cast<int64_t>(outputs) || parts <= 0)
      return invalidArgument("num_outputs " + std::to_string(parts) + " does not match the " +
                             std::to_string(outputs) + " outputs");
  }
  if (parts <= 0) return invalidArgument("has no outputs");
  if (opset < 18 && dim % parts != 0)
    return invalidArgument("dim " + std::to_string(dim) + " does not split into " +
                           std::to_string(parts) + " equal parts");
  const int64_t chunk = (dim + parts - 1) / parts;
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < parts; ++i)
    sizes.push_back(std::clamp(dim - i * chunk, int64_t{0}, chunk));
  return sizes;
}

Result<std::vector<int64_t>> splitSizes(const Node& node, int opset, int64_t dim, size_t outputs,
                                        bool hasSplitInput,
                                        const SplitInputReader& readSplitInput) {
  std::vector<int64_t> given;
  if (hasSplitInput && splitSizesFromInput(opset)) {
    KILN_RETURN_IF_ERROR(readSplitInput(&given));
  } else if (opset < 13 && node.hasAttr("split")) {
    given = node.attrInts("split");
  }
  return splitSizes(node, opset, dim, outputs, given);
}

}  // namespace kiln::ops
