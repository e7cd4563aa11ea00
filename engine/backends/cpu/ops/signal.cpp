// Fourier kernels: DFT (opset 17 axis attribute, opset 20 axis input; forward,
// inverse, one-sided and its inverse) and STFT, on a shared mixed-radix FFT.
// Signals are [..., 1] (real) or [..., 2] (complex: real, imaginary) tensors.
#include "backends/cpu/ops/signal.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cpu/ops/misc.h"

namespace kiln::cpu {

using Complex = std::complex<double>;

FftPlan::FftPlan(int64_t n, bool inverse) : m_n(n) {
  const double sign = inverse ? 1.0 : -1.0;
  m_twiddles.resize(n);
  for (int64_t k = 0; k < n; ++k) m_twiddles[k] = std::polar(1.0, sign * 2.0 * M_PI * k / n);
  int64_t rest = n;
  for (int64_t p = 2; p * p <= rest; p += p == 2 ? 1 : 2) {
    while (rest % p == 0) {
      m_factors.push_back(p);
      rest /= p;
    }
  }
  if (rest > 1) m_factors.push_back(rest);
  int64_t largest = 1;
  for (int64_t p : m_factors) largest = std::max(largest, p);
  m_scratch.resize(largest);
}

void FftPlan::transform(const Complex* in, int64_t inStride, Complex* out) {
  m_inStride = inStride;
  if (m_n == 1) {
    out[0] = in[0];
    return;
  }
  work(out, in, 1, 0);
}

// Decimation in time: `out` receives the DFT of the n / step inputs spaced `step`
// apart; each stage splits it into `radix` interleaved sub-transforms.
void FftPlan::work(Complex* out, const Complex* in, int64_t step, size_t stage) {
  const int64_t radix = m_factors[stage];
  const int64_t span = m_n / step / radix;  // length of each sub-transform
  if (span == 1) {
    for (int64_t q = 0; q < radix; ++q) out[q] = in[q * step * m_inStride];
  } else {
    for (int64_t q = 0; q < radix; ++q)
      work(out + q * span, in + q * step * m_inStride, step * radix, stage + 1);
  }
  butterfly(out, step, radix, span);
}

// Combines `radix` sub-transforms of length `span` into one of length radix * span.
void FftPlan::butterfly(Complex* out, int64_t step, int64_t radix, int64_t span) {
  for (int64_t u = 0; u < span; ++u) {
    for (int64_t q = 0; q < radix; ++q) m_scratch[q] = out[u + q * span];
    for (int64_t q1 = 0; q1 < radix; ++q1) {
      const int64_t k = u + q1 * span;
      Complex sum = m_scratch[0];
      int64_t twiddle = 0;
      for (int64_t q = 1; q < radix; ++q) {
        twiddle += step * k;  // step * k < n, so one wrap suffices
        if (twiddle >= m_n) twiddle -= m_n;
        sum += m_scratch[q] * m_twiddles[twiddle];
      }
      out[k] = sum;
    }
  }
}

namespace {

// Refuses transform lengths whose twiddle tables could not be allocated.
constexpr int64_t kMaxDftLength = int64_t{1} << 28;

// Reads a real/complex signal tensor as complex lines along `axis`:
// outer x length x inner, where inner excludes the trailing real/complex dim.
struct SignalLayout {
  int64_t outer = 1, length = 0, inner = 1;
  bool complex = false;
};

SignalLayout signalLayout(const Shape& shape, int64_t axis) {
  SignalLayout l;
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t d = 0; d < axis; ++d) l.outer *= shape[d];
  for (int64_t d = axis + 1; d < rank - 1; ++d) l.inner *= shape[d];
  l.length = shape[axis];
  l.complex = shape[rank - 1] == 2;
  return l;
}

struct DftOptions {
  int64_t axis = 1;
  int64_t length = 0;  // dft_length
  bool inverse = false, onesided = false;
};

Status readDftOptions(const KernelContext& ctx, const Tensor& x, DftOptions* o) {
  const int64_t rank = x.rank();
  if (rank < 2 || (x.dim(-1) != 1 && x.dim(-1) != 2)) {
    return ctx.error("input must be [batch, ..., 1 or 2], got " + shapeToString(x.shape()));
  }
  int64_t axis = ctx.opset() < 20 ? ctx.node().attrInt("axis", 1) : -2;
  if (ctx.opset() >= 20 && ctx.hasInput(2))
    KILN_RETURN_IF_ERROR(readScalarInt(ctx, 2, "axis", &axis));
  // The trailing real/complex dim is never transformed: valid axes are [-r, -2] U [0, r-2].
  if (axis < -rank || axis > rank - 2 || axis == -1) {
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  o->axis = axis < 0 ? axis + rank : axis;
  o->inverse = ctx.node().attrInt("inverse", 0) != 0;
  o->onesided = ctx.node().attrInt("onesided", 0) != 0;
  // An inverse one-sided transform rebuilds an even-length real signal by default.
  o->length = o->inverse && o->onesided ? 2 * (x.dim(o->axis) - 1) : x.dim(o->axis);
  if (ctx.hasInput(1)) KILN_RETURN_IF_ERROR(readScalarInt(ctx, 1, "dft_length", &o->length));
  if (o->length <= 0 || o->length > kMaxDftLength) {
    return ctx.error("dft_length must be in [1, 2^28], got " + std::to_string(o->length));
  }
  if (o->onesided && !o->inverse && x.dim(-1) == 2) return ctx.error("onesided needs a real input");
  return Status::ok();
}

// Loads one line of the input into `buffer` (n values, zero-padded or truncated).
// For the inverse one-sided transform, the missing half of the spectrum is rebuilt
// by Hermitian symmetry and the imaginary parts at DC and Nyquist are dropped.
template <class T>
void loadLine(const T* src, const SignalLayout& l, int64_t o, int64_t i, bool hermitian,
              std::vector<Complex>& buffer) {
  const int64_t n = static_cast<int64_t>(buffer.size());
  const int64_t channels = l.complex ? 2 : 1;
  const int64_t available = hermitian ? std::min(l.length, n / 2 + 1) : std::min(l.length, n);
  std::fill(buffer.begin(), buffer.end(), Complex());
  for (int64_t j = 0; j < available; ++j) {
    const T* v = src + ((o * l.length + j) * l.inner + i) * channels;
    buffer[j] = Complex(static_cast<double>(v[0]), l.complex ? static_cast<double>(v[1]) : 0.0);
  }
  if (!hermitian) return;
  buffer[0].imag(0.0);
  if (n % 2 == 0) buffer[n / 2].imag(0.0);
  for (int64_t k = n / 2 + 1; k < n; ++k) buffer[k] = std::conj(buffer[n - k]);
}

Status dftKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  DftOptions o;
  KILN_RETURN_IF_ERROR(readDftOptions(ctx, x, &o));
  const SignalLayout in = signalLayout(x.shape(), o.axis);
  const bool hermitian = o.inverse && o.onesided;  // one-sided spectrum -> real signal
  const int64_t n = o.length;
  const int64_t outLength = o.onesided && !o.inverse ? n / 2 + 1 : n;
  const int64_t outChannels = hermitian ? 1 : 2;
  Shape outShape = x.shape();
  outShape[o.axis] = outLength;
  outShape.back() = outChannels;
  const double scale = o.inverse ? 1.0 / static_cast<double>(n) : 1.0;
  return dispatchFloatTypes(x.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* dst = ctx.allocateOutput(0, x.type(), outShape).template data<T>();
    FftPlan plan(n, o.inverse);
    std::vector<Complex> line(n), spectrum(n);
    for (int64_t outer = 0; outer < in.outer; ++outer) {
      for (int64_t i = 0; i < in.inner; ++i) {
        loadLine(src, in, outer, i, hermitian, line);
        plan.transform(line.data(), 1, spectrum.data());
        for (int64_t k = 0; k < outLength; ++k) {
          T* v = dst + ((outer * outLength + k) * in.inner + i) * outChannels;
          v[0] = static_cast<T>(spectrum[k].real() * scale);
          if (outChannels == 2) v[1] = static_cast<T>(spectrum[k].imag() * scale);
        }
      }
    }
    return Status::ok();
  });
}

// STFT framing: frame_length from the input, else the window's length.
Status readStftFrames(const KernelContext& ctx, const Tensor& signal, int64_t* step,
                      int64_t* frameLength, std::vector<double>* window) {
  KILN_RETURN_IF_ERROR(readScalarInt(ctx, 1, "frame_step", step));
  *frameLength = -1;
  if (ctx.hasInput(3)) KILN_RETURN_IF_ERROR(readScalarInt(ctx, 3, "frame_length", frameLength));
  if (ctx.hasInput(2)) {
    const Tensor& w = ctx.input(2);
    if (w.rank() != 1 || !isFloatingPoint(w.type()))
      return ctx.error("window must be a 1-D float tensor");
    if (*frameLength >= 0 && w.dim(0) != *frameLength)
      return ctx.error("window length must equal frame_length");
    *frameLength = w.dim(0);
    for (int64_t i = 0; i < w.numel(); ++i) window->push_back(w.valueAsDouble(i));
  }
  if (*frameLength < 0) return ctx.error("STFT needs a window or a frame_length");
  if (*step <= 0) return ctx.error("frame_step must be positive");
  if (*frameLength == 0 || *frameLength > signal.dim(1)) {
    return ctx.error("frame_length " + std::to_string(*frameLength) +
                     " must be in [1, signal length " + std::to_string(signal.dim(1)) + "]");
  }
  if (window->empty()) window->assign(*frameLength, 1.0);
  return Status::ok();
}

// STFT: windowed DFTs of frames of a [batch, length, 1 or 2] signal, giving
// [batch, frames, bins, 2].
Status stftKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& signal = ctx.input(0);
  if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2)) {
    return ctx.error("signal must be [batch, length, 1 or 2], got " +
                     shapeToString(signal.shape()));
  }
  int64_t step = 0, frameLength = 0;
  std::vector<double> window;
  KILN_RETURN_IF_ERROR(readStftFrames(ctx, signal, &step, &frameLength, &window));
  const bool onesided = ctx.node().attrInt("onesided", 1) != 0;
  const bool complex = signal.dim(2) == 2;
  if (onesided && complex) return ctx.error("onesided needs a real signal");
  const int64_t batch = signal.dim(0), length = signal.dim(1);
  const int64_t frames = 1 + (length - frameLength) / step;
  const int64_t bins = onesided ? frameLength / 2 + 1 : frameLength;
  return dispatchFloatTypes(signal.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = signal.data<T>();
    T* dst = ctx.allocateOutput(0, signal.type(), {batch, frames, bins, 2}).template data<T>();
    FftPlan plan(frameLength, false);
    std::vector<Complex> frame(frameLength), spectrum(frameLength);
    const int64_t channels = complex ? 2 : 1;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < frames; ++f) {
        const T* start = src + (b * length + f * step) * channels;
        for (int64_t j = 0; j < frameLength; ++j) {
          const double re = static_cast<double>(start[j * channels]);
          const double im = complex ? static_cast<double>(start[j * channels + 1]) : 0.0;
          frame[j] = Complex(re, im) * window[j];
        }
        plan.transform(frame.data(), 1, spectrum.data());
        T* out = dst + (b * frames + f) * bins * 2;
        for (int64_t k = 0; k < bins; ++k) {
          out[2 * k] = static_cast<T>(spectrum[k].real());
          out[2 * k + 1] = static_cast<T>(spectrum[k].imag());
        }
      }
    }
    return Status::ok();
  });
}

}  // namespace

void registerSignalKernels(KernelRegistry& registry) {
  registry.add("DFT", 17, 1000, &dftKernel);
  registry.add("STFT", 17, 1000, &stftKernel);
  registerWindowKernels(registry);
}

}  // namespace kiln::cpu
