// TensorHistogram: |x| counts in kBins equal bins whose range doubles on demand, and
// the range each calibration method picks from them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kiln/calibration.h"

namespace kiln {
namespace {

// TensorRT quantizes to 127 levels on each side of zero; the entropy search
// compares the clipped distribution with its 128-bin quantization.
constexpr int kQuantizedBins = 128;

// KL(P || Q) of two unnormalized distributions; infinity when Q is 0 where P is not.
double klDivergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sumP = 0, sumQ = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sumP += p[i];
    sumQ += q[i];
  }
  if (sumP <= 0 || sumQ <= 0) return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    if (q[i] <= 0) return std::numeric_limits<double>::infinity();
    const double pi = p[i] / sumP, qi = q[i] / sumQ;
    kl += pi * std::log(pi / qi);
  }
  return kl;
}

// The first `used` bins merged into kQuantizedBins groups of (nearly) equal width,
// each group's count spread evenly over its non-empty bins. Equal widths matter: a
// last group that takes the whole remainder (used % 128 bins more) would make every
// threshold just below a multiple of 128 bins look best.
std::vector<double> quantizedDistribution(const std::vector<double>& bins, int used) {
  std::vector<double> expanded(static_cast<size_t>(used), 0.0);
  for (int g = 0; g < kQuantizedBins; ++g) {
    const int start = static_cast<int>(static_cast<int64_t>(g) * used / kQuantizedBins);
    const int stop = static_cast<int>(static_cast<int64_t>(g + 1) * used / kQuantizedBins);
    double total = 0;
    int nonEmpty = 0;
    for (int i = start; i < stop; ++i) {
      total += bins[i];
      nonEmpty += bins[i] > 0;
    }
    if (nonEmpty == 0) continue;
    for (int i = start; i < stop; ++i)
      if (bins[i] > 0) expanded[i] = total / nonEmpty;
  }
  return expanded;
}

}  // namespace

void TensorHistogram::grow(double needed) {
  if (m_binWidth == 0) {
    // The first range is a power of two above the first value: later doublings then
    // keep bin edges at round numbers.
    m_binWidth = std::exp2(std::ceil(std::log2(needed * (1 + 1e-9)))) / kBins;
    if (needed >= range()) m_binWidth *= 2;
  }
  while (needed >= range()) {
    for (int i = 0; i < kBins / 2; ++i) m_bins[i] = m_bins[2 * i] + m_bins[2 * i + 1];
    std::fill(m_bins.begin() + kBins / 2, m_bins.end(), 0.0);
    m_binWidth *= 2;
  }
}

void TensorHistogram::add(const float* values, int64_t count) {
  double batchMax = 0;
  bool seen = m_count > 0;  // the extremes start at the first finite value
  for (int64_t i = 0; i < count; ++i) {
    const float v = values[i];
    if (!std::isfinite(v)) continue;
    batchMax = std::max(batchMax, static_cast<double>(std::fabs(v)));
    if (!seen) m_min = m_max = v;
    seen = true;
    m_min = std::min(m_min, static_cast<double>(v));
    m_max = std::max(m_max, static_cast<double>(v));
  }
  if (batchMax > 0) grow(batchMax);
  for (int64_t i = 0; i < count; ++i) {
    const float v = values[i];
    if (!std::isfinite(v)) {
      ++m_nonFinite;
      continue;
    }
    const double a = std::fabs(v);
    const int bin = m_binWidth > 0 ? std::min(static_cast<int>(a / m_binWidth), kBins - 1) : 0;
    m_bins[bin] += 1;
    ++m_count;
  }
}

double TensorHistogram::amax(CalibrationMethod method, double percentile) const {
  const double absMax = std::max(std::fabs(m_min), std::fabs(m_max));
  if (m_count == 0 || absMax == 0) return 0;
  if (method == CalibrationMethod::kMinMax) return absMax;
  if (method == CalibrationMethod::kPercentile) {
    const double target = std::clamp(percentile, 0.0, 100.0) / 100.0 * static_cast<double>(m_count);
    double cumulative = 0;
    for (int i = 0; i < kBins; ++i) {
      cumulative += m_bins[i];
      if (cumulative >= target) return std::min((i + 1) * m_binWidth, absMax);
    }
    return absMax;
  }
  // Entropy: only bins up to the one holding max |x| matter; fewer than 128 of them
  // means every value already has its own level.
  const int lastUsed = std::min(static_cast<int>(absMax / m_binWidth), kBins - 1) + 1;
  if (lastUsed <= kQuantizedBins) return absMax;
  // The first bin holds every exact zero (ReLU outputs: often half the values); as
  // TensorRT's calibrator does, it counts like its neighbour, or that spike alone would
  // pull the threshold down to where the spike's group is narrowest.
  std::vector<double> bins = m_bins;
  bins[0] = bins[1];
  double best = std::numeric_limits<double>::infinity();
  int bestBins = lastUsed;
  std::vector<double> reference;
  for (int used = kQuantizedBins; used <= lastUsed; ++used) {
    reference.assign(bins.begin(), bins.begin() + used);
    for (int i = used; i < kBins; ++i) reference[used - 1] += bins[i];  // outliers clip
    const double kl = klDivergence(reference, quantizedDistribution(bins, used));
    if (kl < best) {
      best = kl;
      bestBins = used;
    }
  }
  return std::min(bestBins * m_binWidth, absMax);
}

const char* calibrationMethodName(CalibrationMethod method) {
  switch (method) {
    case CalibrationMethod::kEntropy:
      return "entropy";
    case CalibrationMethod::kMinMax:
      return "minmax";
    case CalibrationMethod::kPercentile:
      return "percentile";
  }
  return "entropy";
}

bool parseCalibrationMethod(const std::string& text, CalibrationMethod* out) {
  for (CalibrationMethod m :
       {CalibrationMethod::kEntropy, CalibrationMethod::kMinMax, CalibrationMethod::kPercentile}) {
    if (text == calibrationMethodName(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

CalibrationTable tableFromHistograms(const CalibrationHistograms& histograms,
                                     CalibrationMethod method, double percentile, int samples) {
  CalibrationTable table;
  table.method = calibrationMethodName(method);
  if (method == CalibrationMethod::kPercentile) {
    char text[32];
    std::snprintf(text, sizeof text, " %g", percentile);
    table.method += text;
  }
  table.samples = samples;
  for (const auto& [name, histogram] : histograms) {
    TensorRange range;
    range.amax = histogram.amax(method, percentile);
    table.tensors[name] = range;
  }
  return table;
}

std::vector<float> perChannelWeightScales(const Tensor& weights, int axis) {
  const int64_t channels = weights.rank() == 0 ? 1 : weights.dim(axis);
  int64_t inner = 1;
  for (int d = axis + 1; d < weights.rank(); ++d) inner *= weights.dim(d);
  std::vector<float> amax(static_cast<size_t>(channels), 0.f);
  const float* w = weights.data<float>();
  for (int64_t i = 0; i < weights.numel(); ++i) {
    const int64_t c = (i / inner) % channels;
    amax[c] = std::max(amax[c], std::fabs(w[i]));
  }
  for (float& a : amax) a = a > 0 ? a / 127.f : 1.f;
  return amax;
}

}  // namespace kiln
