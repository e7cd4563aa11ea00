// Error statistics of a quantized (or otherwise reduced-precision) engine's outputs
// against a reference, accumulated over batches: max/mean absolute and relative
// error, cosine similarity and, for classifier outputs ([batch, classes]), top-1
// agreement. Used by `kiln build --int8 --accuracy-data` and the studio's
// calibration workspace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/reference_backend.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::quant {

struct OutputAccuracy {
  std::string name;
  int64_t count = 0;  // elements compared
  double maxAbsError = 0, meanAbsError = 0;
  // |test - ref| / max(|ref|, floor), floor = 1e-3 * max |ref| of the output, so
  // values near zero do not dominate.
  double maxRelError = 0, meanRelError = 0;
  double cosine = 1;           // of the flattened outputs, over every batch
  int64_t top1Rows = 0;        // rows compared for top-1 (0: not a classifier output)
  int64_t top1Agreements = 0;  // rows whose argmax agrees
  double top1Agreement() const {
    return top1Rows ? static_cast<double>(top1Agreements) / top1Rows : 0.0;
  }
};

// Accumulates one output's statistics over batches.
class AccuracyAccumulator {
 public:
  explicit AccuracyAccumulator(std::string name) { m_result.name = std::move(name); }
  // Both float32 of one shape; otherwise an error naming the output.
  Status add(const Tensor& reference, const Tensor& test);
  OutputAccuracy result() const;

 private:
  OutputAccuracy m_result;
  double m_dot = 0, m_refNorm = 0, m_testNorm = 0, m_sumAbs = 0, m_sumRel = 0;
  std::vector<std::pair<double, double>>
      m_relPending;  // (abs error, |ref|) until the floor is known
  double m_refMax = 0;
};

// Statistics of every output over paired runs: `reference[i]` and `test[i]` are the
// outputs of batch i in graph output order (names must agree).
Result<std::vector<OutputAccuracy>> compareOutputs(
    const std::vector<std::vector<NamedTensor>>& reference,
    const std::vector<std::vector<NamedTensor>>& test);

// One line per output: "logits: max abs 0.012, mean abs 0.003, max rel 4.1%, mean rel
// 0.8%, cosine 0.99987, top-1 11/12 (91.7%)".
std::string formatAccuracy(const std::vector<OutputAccuracy>& outputs);

}  // namespace kiln::quant
