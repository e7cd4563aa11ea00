// Internal interface of the signal kernels (DFT, STFT, windows, MelWeightMatrix),
// which registerMiscKernels registers as part of the misc family.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

void registerSignalKernels(KernelRegistry& registry);  // signal.cpp: DFT, STFT
void registerWindowKernels(KernelRegistry& registry);  // signal_windows.cpp

// A complex FFT of one length, any size: mixed-radix Cooley-Tukey over the prime
// factors of n (so O(n log n) for smooth sizes, O(n^2) only for large primes).
// Unnormalized in both directions. Not thread-safe: it owns a scratch buffer.
class FftPlan {
 public:
  FftPlan(int64_t n, bool inverse);
  int64_t size() const { return m_n; }
  // out[k] = sum_j in[j * inStride] * exp(-+2 pi i j k / n); `out` holds n values.
  void transform(const std::complex<double>* in, int64_t inStride, std::complex<double>* out);

 private:
  void work(std::complex<double>* out, const std::complex<double>* in, int64_t step, size_t stage);
  void butterfly(std::complex<double>* out, int64_t step, int64_t radix, int64_t span);

  int64_t m_n;
  int64_t m_inStride = 1;
  std::vector<int64_t> m_factors;  // radices, outermost first
  std::vector<std::complex<double>> m_twiddles;
  std::vector<std::complex<double>> m_scratch;
};

}  // namespace kiln::cpu
