// Error statistics of one tensor against its expected value, over one or more
// runs: max/mean/median absolute and relative error, error quantiles, cosine
// similarity, NaN/Inf counts on each side, elements outside the tolerance, top-k
// agreement along the last axis (classifier outputs), a log-scale histogram of the
// absolute error and a coarse heatmap of where it is. The one statistics module of
// Kiln: what `kiln compare` prints and writes as JSON, what the studio's Compare view
// and precision debugger plot, and what `kiln build --int8 --accuracy-data` reports
// against FP32. No Qt.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compare/tensor_compare.h"
#include "kiln/reference_backend.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::compare {

// Absolute errors binned by decade: bin i holds errors in [10^(kFirstDecade+i),
// 10^(kFirstDecade+i+1)); errors below 10^kFirstDecade (exact zeros included) go to
// `belowFirst`, errors at or above the last edge to the last bin.
struct ErrorHistogram {
  static constexpr int kFirstDecade = -10;
  static constexpr int kBins = 14;  // 1e-10 .. 1e4
  int64_t belowFirst = 0;
  std::vector<int64_t> counts = std::vector<int64_t>(kBins, 0);
};

// The tensor viewed as rows x columns (columns = its last dim, rows = the rest),
// pooled to at most kMaxCells x kMaxCells cells; each cell holds the largest
// absolute error among its elements (NaN where an element pair is not finite).
struct ErrorHeatmap {
  static constexpr int kMaxCells = 64;
  int rows = 0, columns = 0;  // cells
  int64_t tensorRows = 0, tensorColumns = 0;
  std::vector<double> cells;  // row-major, rows * columns
};

struct ErrorQuantile {
  double quantile = 0;  // 0.5, 0.9, 0.99, 0.999
  double absError = 0;
};

struct ErrorStats {
  std::string name;
  std::string dtype;  // of the actual tensor
  Shape shape;
  bool comparable = true;  // false: dtype or shape differ (`problem` says how)
  std::string problem;
  int64_t elements = 0;     // element pairs compared, over every run
  int64_t finitePairs = 0;  // pairs where both are finite: the error statistics' population
  int runs = 0;
  double maxAbs = 0, meanAbs = 0, medianAbs = 0;
  double maxRel = 0, meanRel = 0, medianRel = 0;  // over elements whose expected value is not 0
  std::vector<ErrorQuantile> quantiles;
  double cosine = 1;  // of the finite pairs (1 when both are all zero)
  int64_t nanActual = 0, infActual = 0, nanExpected = 0, infExpected = 0;
  int64_t outsideTolerance = 0;
  int64_t worstIndex = -1;  // flat index (in its run) of the largest absolute error
  double worstActual = 0, worstExpected = 0;
  // Top-k along the last axis; topK == 0 when not computed.
  int topK = 0;
  int64_t topRows = 0;
  double top1Agreement = 0;  // fraction of rows whose arg-max agrees
  double topKOverlap = 0;    // mean fraction of the expected top-k found in the actual top-k
  ErrorHistogram histogram;
  ErrorHeatmap heatmap;  // of the first run
  bool pass = true;
  std::string reason;  // why not (first element outside the tolerance, NaN, shape)
};

// Accumulates element pairs of one tensor over runs, then summarizes them.
class ErrorAccumulator {
 public:
  // `topK` > 0 computes top-k agreement along the last axis (when it has >= 2 entries).
  ErrorAccumulator(std::string name, Tolerance tolerance, int topK);
  // One run's pair. Different dtype or shape (from the first run's) makes the
  // result not comparable; string tensors compare exactly.
  void add(const Tensor& actual, const Tensor& expected);
  ErrorStats finish();

 private:
  void addTopK(const std::vector<double>& a, const std::vector<double>& e, int64_t columns);
  void addHeatmap(const std::vector<double>& absErrors, int64_t columns);

  ErrorStats m_stats;
  Tolerance m_tolerance;
  std::vector<float> m_abs, m_rel;  // finite pairs, for the quantiles
  double m_sumAbs = 0, m_sumRel = 0, m_dot = 0, m_normA = 0, m_normE = 0;
  double m_topOverlapSum = 0;
  int64_t m_top1Agree = 0;
};

// One tensor, one run.
ErrorStats computeErrorStats(const std::string& name, const Tensor& actual, const Tensor& expected,
                             const Tolerance& tolerance, int topK = 0);

// Every output over paired runs: `actual[i]` and `expected[i]` are the outputs of
// input set i in graph output order. Errors: no runs, run or output counts that
// differ, or an output name that disagrees with the expected one (named).
Result<std::vector<ErrorStats>> compareOutputRuns(
    const std::vector<std::vector<NamedTensor>>& actual,
    const std::vector<std::vector<NamedTensor>>& expected, const Tolerance& tolerance, int topK);

// JSON form (snake_case keys); `withPlots` adds the histogram and heatmap arrays.
nlohmann::json errorStatsJson(const ErrorStats& stats, bool withPlots);
// The inverse (accuracy_json.cpp), for reports read back from a file; an error names the
// tensor and the field of the wrong type.
Result<ErrorStats> errorStatsFromJson(const nlohmann::json& json);
// One aligned text line: name, verdict, max/mean/median abs, max rel, cosine, NaN/Inf.
std::string formatErrorStatsLine(const ErrorStats& stats, size_t nameWidth);
// One line per tensor, for reports without a verdict (the INT8 build against FP32):
// "logits: max abs 0.012, mean abs 0.003, max rel 4.1%, mean rel 0.8%, cosine
// 0.999870, top-1 11/12 (91.7%)"; a tensor that is not comparable says why.
std::string formatAccuracySummary(const std::vector<ErrorStats>& stats);

}  // namespace kiln::compare
