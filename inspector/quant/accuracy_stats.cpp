#include "quant/accuracy_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::quant {
namespace {

int64_t argmax(const float* row, int64_t n) {
  return std::max_element(row, row + n) - row;
}

}  // namespace

Status AccuracyAccumulator::add(const Tensor& reference, const Tensor& test) {
  if (reference.type() != DataType::kFloat32 || test.type() != DataType::kFloat32)
    return invalidArgument("output '" + m_result.name + "': accuracy needs float32 outputs, got " +
                           dataTypeName(reference.type()) + " and " + dataTypeName(test.type()));
  if (reference.shape() != test.shape())
    return invalidArgument("output '" + m_result.name + "': shapes differ (" +
                           shapeToString(reference.shape()) + " vs " + shapeToString(test.shape()) +
                           ")");
  const float* r = reference.data<float>();
  const float* t = test.data<float>();
  for (int64_t i = 0; i < reference.numel(); ++i) {
    const double err = std::fabs(static_cast<double>(t[i]) - r[i]);
    m_result.maxAbsError = std::max(m_result.maxAbsError, err);
    m_sumAbs += err;
    m_dot += static_cast<double>(t[i]) * r[i];
    m_refNorm += static_cast<double>(r[i]) * r[i];
    m_testNorm += static_cast<double>(t[i]) * t[i];
    m_refMax = std::max(m_refMax, std::fabs(static_cast<double>(r[i])));
    m_relPending.push_back({err, std::fabs(static_cast<double>(r[i]))});
  }
  m_result.count += reference.numel();
  if (reference.rank() == 2 && reference.dim(1) > 1) {
    const int64_t rows = reference.dim(0), classes = reference.dim(1);
    for (int64_t row = 0; row < rows; ++row)
      m_result.top1Agreements +=
          argmax(r + row * classes, classes) == argmax(t + row * classes, classes);
    m_result.top1Rows += rows;
  }
  return Status::ok();
}

OutputAccuracy AccuracyAccumulator::result() const {
  OutputAccuracy out = m_result;
  if (out.count == 0) return out;
  out.meanAbsError = m_sumAbs / static_cast<double>(out.count);
  const double floor = std::max(1e-3 * m_refMax, 1e-12);
  double sumRel = 0;
  for (const auto& [err, ref] : m_relPending) {
    const double rel = err / std::max(ref, floor);
    out.maxRelError = std::max(out.maxRelError, rel);
    sumRel += rel;
  }
  out.meanRelError = sumRel / static_cast<double>(out.count);
  const double norms = std::sqrt(m_refNorm) * std::sqrt(m_testNorm);
  out.cosine = norms > 0 ? m_dot / norms : (m_refNorm == m_testNorm ? 1.0 : 0.0);
  return out;
}

Result<std::vector<OutputAccuracy>> compareOutputs(
    const std::vector<std::vector<NamedTensor>>& reference,
    const std::vector<std::vector<NamedTensor>>& test) {
  if (reference.size() != test.size() || reference.empty())
    return invalidArgument("accuracy: " + std::to_string(reference.size()) +
                           " reference runs and " + std::to_string(test.size()) + " test runs");
  std::vector<AccuracyAccumulator> outputs;
  for (const NamedTensor& out : reference.front()) outputs.emplace_back(out.name);
  for (size_t run = 0; run < reference.size(); ++run) {
    if (reference[run].size() != outputs.size() || test[run].size() != outputs.size())
      return invalidArgument("accuracy: run " + std::to_string(run) +
                             " has a different number of outputs");
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (test[run][i].name != reference[run][i].name)
        return invalidArgument("accuracy: output '" + test[run][i].name + "' where '" +
                               reference[run][i].name + "' was expected");
      KILN_RETURN_IF_ERROR(outputs[i].add(reference[run][i].tensor, test[run][i].tensor));
    }
  }
  std::vector<OutputAccuracy> results;
  for (const AccuracyAccumulator& a : outputs) results.push_back(a.result());
  return results;
}

std::string formatAccuracy(const std::vector<OutputAccuracy>& outputs) {
  std::string text;
  char line[320];
  for (const OutputAccuracy& o : outputs) {
    std::snprintf(line, sizeof line,
                  "%s: max abs %.4g, mean abs %.4g, max rel %.3g%%, mean rel %.3g%%, cosine %.6f",
                  o.name.c_str(), o.maxAbsError, o.meanAbsError, 100 * o.maxRelError,
                  100 * o.meanRelError, o.cosine);
    text += line;
    if (o.top1Rows) {
      std::snprintf(line, sizeof line, ", top-1 %lld/%lld (%.1f%%)",
                    static_cast<long long>(o.top1Agreements), static_cast<long long>(o.top1Rows),
                    100 * o.top1Agreement());
      text += line;
    }
    text += "\n";
  }
  return text;
}

}  // namespace kiln::quant
