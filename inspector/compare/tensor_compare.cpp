#include "compare/tensor_compare.h"

#include <cmath>
#include <cstdio>

namespace kiln::compare {

Tolerance defaultTolerance(DataType type) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kFloat64:
      return {1e-5, 1e-3};
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFp8E4M3:
    case DataType::kFp8E5M2:
      return {1e-2, 1e-2};
    default:
      return {0, 0};
  }
}

bool withinTolerance(double a, double e, const Tolerance& tol) {
  if (std::isnan(e) || std::isnan(a)) return std::isnan(e) && std::isnan(a);
  if (std::isinf(e) || std::isinf(a)) return a == e;
  return std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
}

CompareResult compareTensors(const Tensor& actual, const Tensor& expected, const Tolerance& tol) {
  CompareResult r;
  if (actual.type() != expected.type()) {
    r.match = false;
    r.reason = std::string("dtype ") + dataTypeName(actual.type()) + ", expected " +
               dataTypeName(expected.type());
    return r;
  }
  if (actual.shape() != expected.shape()) {
    r.match = false;
    r.reason =
        "shape " + shapeToString(actual.shape()) + ", expected " + shapeToString(expected.shape());
    return r;
  }
  if (actual.type() == DataType::kString) {
    for (int64_t i = 0; i < actual.numel(); ++i) {
      if (actual.strings()[i] != expected.strings()[i]) {
        r.match = false;
        r.reason = "element " + std::to_string(i) + ": '" + actual.strings()[i] + "', expected '" +
                   expected.strings()[i] + "'";
        return r;
      }
    }
    return r;
  }
  const bool exactInts = !isFloatingPoint(actual.type());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    bool ok;
    double a, e;
    if (exactInts && actual.type() != DataType::kUInt64) {
      int64_t ai = actual.valueAsInt64(i), ei = expected.valueAsInt64(i);
      a = static_cast<double>(ai);
      e = static_cast<double>(ei);
      ok = ai == ei;
    } else {
      a = actual.valueAsDouble(i);
      e = expected.valueAsDouble(i);
      ok = withinTolerance(a, e, tol);
    }
    if (std::isfinite(a) && std::isfinite(e)) {
      double abs = std::fabs(a - e);
      r.maxAbsError = std::max(r.maxAbsError, abs);
      if (e != 0) r.maxRelError = std::max(r.maxRelError, abs / std::fabs(e));
    }
    if (!ok && r.match) {
      r.match = false;
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %lld: %.9g, expected %.9g", static_cast<long long>(i),
                    a, e);
      r.reason = buf;
    }
  }
  return r;
}

}  // namespace kiln::compare
