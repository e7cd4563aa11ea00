// Generated signal-processing constants: the Hann, Hamming and Blackman windows and
// MelWeightMatrix (a bank of triangular mel filters over DFT bins).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/misc.h"
#include "backends/cpu/ops/signal.h"

namespace kiln::cpu {
namespace {

// Refuses generated constants too large to allocate (a corrupt size input).
constexpr int64_t kMaxGeneratedElements = int64_t{1} << 32;

enum class WindowKind { kHann, kHamming, kBlackman };

// w[n] for a window of `size` points: periodic windows divide by size (ready for
// spectral analysis), symmetric ones by size - 1.
std::vector<double> windowValues(WindowKind kind, int64_t size, bool periodic) {
  std::vector<double> w(size);
  const double denom = static_cast<double>(periodic ? size : size - 1);
  for (int64_t n = 0; n < size; ++n) {
    if (denom <= 0) {  // a 1-point symmetric window: the peak only
      w[n] = 1.0;
      continue;
    }
    const double phase = 2.0 * M_PI * static_cast<double>(n) / denom;
    switch (kind) {
      case WindowKind::kHann:
        w[n] = 0.5 - 0.5 * std::cos(phase);
        break;
      // ONNX uses alpha = 25/46 (the exact Hamming), not the rounded 0.54.
      case WindowKind::kHamming:
        w[n] = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(phase);
        break;
      case WindowKind::kBlackman:
        w[n] = 0.42 - 0.5 * std::cos(phase) + 0.08 * std::cos(2.0 * phase);
        break;
    }
  }
  return w;
}

template <WindowKind kKind>
Status windowKernel(KernelContext& ctx) {
  int64_t size = 0;
  KILN_RETURN_IF_ERROR(readScalarInt(ctx, 0, "size", &size));
  if (size < 0 || size > kMaxGeneratedElements)
    return ctx.error("size " + std::to_string(size) + " is out of range");
  const auto type = static_cast<DataType>(ctx.node().attrInt("output_datatype", 1));
  const bool periodic = ctx.node().attrInt("periodic", 1) != 0;
  return writeDoublesOutput(ctx, 0, type, {size}, windowValues(kKind, size, periodic));
}

double hertzToMel(double hz) {
  return 2595.0 * std::log10(1.0 + hz / 700.0);
}
double melToHertz(double mel) {
  return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
}

struct MelOptions {
  int64_t melBins = 0, dftLength = 0, sampleRate = 0;
  double lowerHz = 0, upperHz = 0;
};

Status readMelOptions(const KernelContext& ctx, MelOptions* o) {
  KILN_RETURN_IF_ERROR(readScalarInt(ctx, 0, "num_mel_bins", &o->melBins));
  KILN_RETURN_IF_ERROR(readScalarInt(ctx, 1, "dft_length", &o->dftLength));
  KILN_RETURN_IF_ERROR(readScalarInt(ctx, 2, "sample_rate", &o->sampleRate));
  KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 3, "lower_edge_hertz", &o->lowerHz));
  KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 4, "upper_edge_hertz", &o->upperHz));
  if (o->melBins <= 0 || o->dftLength <= 0 || o->sampleRate <= 0) {
    return ctx.error("num_mel_bins, dft_length and sample_rate must be positive");
  }
  if (!(o->lowerHz >= 0 && o->lowerHz < o->upperHz) || !std::isfinite(o->upperHz)) {
    return ctx.error("need 0 <= lower_edge_hertz < upper_edge_hertz");
  }
  if (static_cast<double>(o->melBins) * static_cast<double>(o->dftLength / 2 + 1) >
      kMaxGeneratedElements) {
    return ctx.error("the mel weight matrix is too large");
  }
  return Status::ok();
}

// Rows are the dft_length / 2 + 1 spectrogram bins, columns the mel bins. Filter
// edges sit at num_mel_bins + 2 points evenly spaced in mel, snapped down to a DFT
// bin; each filter rises from its left edge to 1 at its centre and falls to its
// right edge (ONNX Runtime's construction, which the ONNX tests use).
Status melWeightMatrixKernel(KernelContext& ctx) {
  MelOptions o;
  KILN_RETURN_IF_ERROR(readMelOptions(ctx, &o));
  const int64_t rows = o.dftLength / 2 + 1, cols = o.melBins;
  const double lowMel = hertzToMel(o.lowerHz);
  const double melStep = (hertzToMel(o.upperHz) - lowMel) / static_cast<double>(cols + 2);
  std::vector<int64_t> edges(cols + 2);
  for (int64_t i = 0; i < cols + 2; ++i) {
    const double hz = melToHertz(lowMel + melStep * static_cast<double>(i));
    const double bin = std::floor(static_cast<double>(o.dftLength + 1) * hz / o.sampleRate);
    edges[i] = static_cast<int64_t>(std::clamp(bin, -1.0, 1e15));  // clamp keeps the cast defined
  }
  std::vector<double> w(rows * cols, 0.0);
  // Rows past the spectrum (upper_edge_hertz above Nyquist) are skipped.
  auto first = [&](int64_t j) { return std::max<int64_t>(j, 0); };
  auto last = [&](int64_t j) { return std::min<int64_t>(j, rows - 1); };
  for (int64_t i = 0; i < cols; ++i) {
    const int64_t left = edges[i], centre = edges[i + 1], right = edges[i + 2];
    if (centre == left && centre >= 0 && centre < rows) w[centre * cols + i] = 1.0;
    for (int64_t j = first(left); j <= last(centre) && centre > left; ++j) {
      w[j * cols + i] = static_cast<double>(j - left) / static_cast<double>(centre - left);
    }
    for (int64_t j = first(centre); j <= last(right - 1); ++j) {
      w[j * cols + i] = static_cast<double>(right - j) / static_cast<double>(right - centre);
    }
  }
  const auto type = static_cast<DataType>(ctx.node().attrInt("output_datatype", 1));
  return writeDoublesOutput(ctx, 0, type, {rows, cols}, w);
}

}  // namespace

void registerWindowKernels(KernelRegistry& registry) {
  registry.add("HannWindow", 17, 1000, &windowKernel<WindowKind::kHann>);
  registry.add("HammingWindow", 17, 1000, &windowKernel<WindowKind::kHamming>);
  registry.add("BlackmanWindow", 17, 1000, &windowKernel<WindowKind::kBlackman>);
  registry.add("MelWeightMatrix", 17, 1000, &melWeightMatrixKernel);
}

}  // namespace kiln::cpu
