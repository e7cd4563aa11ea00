// StridedCopy's geometry (contract: strided_copy_params.h).
#include "ops/strided_copy_params.h"

#include <string>

#include "ops/output_size.h"

namespace kiln::ops {
namespace {

// "[a, b, c]": attribute lists in errors.
std::string listString(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

// The largest index Y reaches in X (Y not empty), or an error when a step would overflow.
Result<int64_t> lastIndexReached(const StridedCopyGeometry& g) {
  int64_t last = g.offset;
  for (size_t k = 0; k < g.shape.size(); ++k) {
    int64_t step = 0;
    if (__builtin_mul_overflow(g.shape[k] - 1, g.strides[k], &step) ||
        __builtin_add_overflow(last, step, &last))
      return invalidArgument("offset " + std::to_string(g.offset) + " and strides " +
                             listString(g.strides) + " over dims " + listString(g.shape) +
                             " overflow int64");
  }
  return last;
}

}  // namespace

Result<StridedCopyGeometry> stridedCopyGeometry(const Node& node, int64_t inputElements) {
  StridedCopyGeometry g;
  g.shape = node.attrInts("shape");
  g.strides = node.attrInts("strides");
  g.offset = node.attrInt("offset", 0);
  if (g.shape.size() != g.strides.size())
    return invalidArgument("shape " + listString(g.shape) + " and strides " +
                           listString(g.strides) + " differ in rank");
  for (size_t k = 0; k < g.strides.size(); ++k)
    if (g.strides[k] < 0)
      return invalidArgument("stride " + std::to_string(k) +
                             " is negative: " + std::to_string(g.strides[k]));
  if (g.offset < 0) return invalidArgument("offset is negative: " + std::to_string(g.offset));
  KILN_RETURN_IF_ERROR(checkOutputElements(g.shape, "output"));
  for (int64_t d : g.shape)
    if (d == 0) return g;  // Y is empty: nothing is read
  KILN_ASSIGN_OR_RETURN(const int64_t last, lastIndexReached(g));
  if (inputElements != kUnknownInputElements && last >= inputElements)
    return invalidArgument("reads element " + std::to_string(last) + " of an input of " +
                           std::to_string(inputElements) + " elements");
  return g;
}

bool stridedCopyIsContiguousRun(const StridedCopyGeometry& g) {
  int64_t inner = 1;  // elements of the dims after k
  for (size_t k = g.shape.size(); k-- > 0;) {
    if (g.shape[k] == 0) return false;
    if (g.shape[k] == 1) continue;
    if (g.strides[k] != inner) return false;
    inner *= g.shape[k];
  }
  return true;
}

}  // namespace kiln::ops
