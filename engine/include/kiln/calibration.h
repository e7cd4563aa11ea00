// Post-training INT8 calibration (TensorRT guide 7.3): a histogram of |x| for every
// float activation over the calibration batches, one symmetric range (amax) per
// tensor chosen by entropy (KL divergence), min-max or percentile, and the editable
// text cache an implicit INT8 build reads (BuilderConfig::calibration).
//
// Cache file (UTF-8 text, one entry a line, '#' starts a comment):
//   kiln-calibration 1
//   method entropy
//   samples 32
//   preprocessing model.preprocess          (optional: the spec saved beside it)
//   tensor input 2.64                       (name, amax: scale = amax / 127)
//   tensor "name with spaces" 0.5
//   tensor conv1_out pin fp16               (stays fp16/fp32: its readers do not quantize)
// A name with whitespace, '"', '\' or '#' is written in double quotes with '\' escapes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/data_type.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

enum class CalibrationMethod { kEntropy, kMinMax, kPercentile };
const char* calibrationMethodName(CalibrationMethod method);  // "entropy", "minmax", "percentile"
bool parseCalibrationMethod(const std::string& text, CalibrationMethod* out);

// Histogram of |x| over every value one tensor took during calibration: kBins
// bins of equal width over [0, range()). When a larger value arrives the range
// doubles and neighbouring bins merge in pairs, so one pass over the data suffices.
class TensorHistogram {
 public:
  static constexpr int kBins = 2048;

  void add(const float* values, int64_t count);  // NaN and infinities are counted apart
  const std::vector<double>& bins() const { return m_bins; }
  double binWidth() const { return m_binWidth; }
  double range() const { return m_binWidth * kBins; }
  double minValue() const { return m_min; }  // signed extremes of the finite values
  double maxValue() const { return m_max; }
  int64_t count() const { return m_count; }
  int64_t nonFinite() const { return m_nonFinite; }

  // The amax each method picks (0 for an empty or all-zero histogram):
  //   kMinMax: max |x|;
  //   kPercentile: the upper edge of the bin where the cumulative count reaches
  //     `percentile` percent (0 < percentile <= 100);
  //   kEntropy: TensorRT's entropy calibration: the threshold (bin edge, at least 128
  //     bins) whose 128-level quantization of the clipped distribution has the least
  //     KL divergence from it.
  double amax(CalibrationMethod method, double percentile = 99.99) const;

 private:
  void grow(double needed);
  std::vector<double> m_bins = std::vector<double>(kBins, 0.0);
  double m_binWidth = 0;  // 0 until the first non-zero value
  double m_min = 0, m_max = 0;
  int64_t m_count = 0, m_nonFinite = 0;
};

// A tensor's entry in the cache: its range, or a pin that keeps it in float.
struct TensorRange {
  double amax = 0;                         // symmetric: values in [-amax, amax]; scale amax / 127
  DataType pinned = DataType::kUndefined;  // kFloat32 / kFloat16: not quantized
  double scale() const { return amax / 127.0; }
};

struct CalibrationTable {
  std::string method;  // "entropy", "minmax", "percentile 99.99", ... as calibrated
  int samples = 0;
  std::string preprocessingFile;  // the preprocessing spec saved beside the cache, or ""
  std::map<std::string, TensorRange> tensors;

  const TensorRange* find(const std::string& tensor) const;
};

// Parses cache text; errors name `displayName` and the line ("cache 'c.txt' line 7:
// tensor 'x': range '-1' must be a positive number").
Result<CalibrationTable> parseCalibrationCache(const std::string& text,
                                               const std::string& displayName);
Result<CalibrationTable> loadCalibrationCache(const std::string& path);
std::string formatCalibrationCache(const CalibrationTable& table);
Status saveCalibrationCache(const CalibrationTable& table, const std::string& path);

// Every float activation's histogram, from which any method's table follows without
// running the network again (the studio shows all three side by side).
using CalibrationHistograms = std::map<std::string, TensorHistogram>;
CalibrationTable tableFromHistograms(const CalibrationHistograms& histograms,
                                     CalibrationMethod method, double percentile, int samples);

struct CalibrationProgress {
  int batchesDone = 0;
  int batchesTotal = 0;
};

// Another backend for calibrateNetwork than the CPU reference (the CUDA runtime's is
// in kiln/cuda_calibration.h). It must compute what the FP32 reference computes: the
// histograms take its values as they are.
class CalibrationRunner {
 public:
  virtual ~CalibrationRunner() = default;
  // How summaries name it: "cuda (NVIDIA H100 80GB HBM3)".
  virtual std::string name() const = 0;
  // Runs one batch (graph input name -> tensor) and puts every value named in `names`
  // (values top-level nodes write, graph outputs among them) into `values`. A failure,
  // or a name left out, makes calibrateNetwork run this batch and the rest on the CPU.
  virtual Status run(const std::map<std::string, Tensor>& batch,
                     const std::vector<std::string>& names,
                     std::map<std::string, Tensor>* values) = 0;
};

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::kEntropy;
  double percentile = 99.99;
  // Called from the calibrating thread after each batch.
  std::function<void(const CalibrationProgress&)> onProgress;
  const std::atomic<bool>* cancel = nullptr;  // polled between batches: kCancelled
  // Null: every batch runs on the CPU reference. Otherwise batches run on `runner`
  // until it fails once; that batch and the rest then run on the CPU.
  CalibrationRunner* runner = nullptr;
  // One-line notices from the calibrating thread (the runner's failure, said once).
  std::function<void(const std::string&)> onNotice;
};
struct CalibrationResult {
  CalibrationTable table;
  CalibrationHistograms histograms;
  // What ran the batches: "cpu", the runner's name, or "NAME for 2 of 5 batches, then cpu".
  std::string backend = "cpu";
  std::string fallback;  // why the CPU took over from the runner ("" when it did not)
  double seconds = 0;    // wall time of the batches, the runner's setup included
};

// Runs `network` for each batch (graph input name -> tensor) on `options.runner` or
// the CPU reference and histograms every float32 value its top-level nodes produce
// and every float32 graph input. Errors: no batches, a batch the network rejects on
// the CPU (named by index), a cancelled run.
Result<CalibrationResult> calibrateNetwork(
    const Network& network, const std::vector<std::map<std::string, Tensor>>& batches,
    const CalibrationOptions& options);

// Symmetric per-channel scales of a weight: max |w| over each slice along `axis`,
// divided by 127 (a zero slice gets scale 1 so it quantizes to zeros).
std::vector<float> perChannelWeightScales(const Tensor& weights, int axis);

}  // namespace kiln
