// The blocked loop GEMM (GotoBLAS layout): B is packed in blocks of kKc x kNc
// into panels of kNr columns, A in blocks of kMc x kKc into panels of kMr rows,
// and a kMr x kNr register tile walks both panels. Packing applies the
// transposes, so the tile loop always reads contiguous memory. A single row or
// column of output skips packing for a matrix-vector loop, where packing would
// cost as much as the product.
#include "backends/cpu/tactics/loop_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/tactics/target_clones.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kMr = 6;     // register tile rows
constexpr int64_t kNr = 16;    // register tile columns
constexpr int64_t kKc = 256;   // panel depth: one kKc x kNr panel of B (16 KiB) stays in L1
constexpr int64_t kMc = 72;    // A block rows (a multiple of kMr): kMc x kKc (72 KiB) in L2
constexpr int64_t kNc = 1024;  // B block columns: kKc x kNc (1 MiB) streams from L2/L3

// op(M) of a row-major matrix M with leading dimension ld.
struct Operand {
  const float* data;
  int64_t ld;
  bool trans;
  // Element strides of op(M) along its rows and along its columns.
  int64_t rowStride() const { return trans ? 1 : ld; }
  int64_t colStride() const { return trans ? ld : 1; }
};

// Packs a kc x lanes block, element (p, l) at src[p * pStride + l * lStride],
// into a panel [kc][kWidth] whose lanes past `lanes` are zero. Reads run along
// whichever index is contiguous in memory.
template <int64_t kWidth>
void packPanel(const float* src, int64_t pStride, int64_t lStride, int64_t kc, int64_t lanes,
               float* dst) {
  if (lStride == 1 && lanes == kWidth) {
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t l = 0; l < kWidth; ++l) dst[p * kWidth + l] = src[p * pStride + l];
    }
    return;
  }
  for (int64_t l = 0; l < kWidth; ++l) {
    const float* lane = src + l * lStride;
    for (int64_t p = 0; p < kc; ++p) dst[p * kWidth + l] = l < lanes ? lane[p * pStride] : 0.0f;
  }
}

// Packs op(A)[i0 + r][p0 + p] (r < mc, p < kc) into panels of kMr rows.
void packA(const Operand& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  const float* base = a.data + i0 * a.rowStride() + p0 * a.colStride();
  for (int64_t ir = 0; ir < mc; ir += kMr, dst += kc * kMr) {
    packPanel<kMr>(base + ir * a.rowStride(), a.colStride(), a.rowStride(), kc,
                   std::min(kMr, mc - ir), dst);
  }
}

// Packs op(B)[p0 + p][j0 + c] (p < kc, c < nc) into panels of kNr columns.
void packB(const Operand& b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  const float* base = b.data + p0 * b.rowStride() + j0 * b.colStride();
  for (int64_t jr = 0; jr < nc; jr += kNr, dst += kc * kNr) {
    packPanel<kNr>(base + jr * b.colStride(), b.rowStride(), b.colStride(), kc,
                   std::min(kNr, nc - jr), dst);
  }
}

// tile = A panel x B panel over kc steps. The fixed kMr x kNr bounds let the
// compiler unroll both loops and keep the accumulators in vector registers.
void microKernel(int64_t kc, const float* a, const float* b, float* tile) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p, a += kMr, b += kNr) {
    // Columns outside rows: GCC then vectorizes across c instead of across p.
    for (int64_t c = 0; c < kNr; ++c) {
      for (int64_t r = 0; r < kMr; ++r) acc[r][c] += a[r] * b[c];
    }
  }
  std::memcpy(tile, acc, sizeof(acc));
}

// y[rows x cols] += alpha * tile.
void addTile(const float* tile, float alpha, int64_t rows, int64_t cols, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) y[r * ldy + c] += alpha * tile[r * kNr + c];
  }
}

// y[j * incy] += alpha * sum_p x[p * incx] op(B)[p][j]: one output row.
KILN_TACTIC_CLONES void gemv(int64_t n, int64_t k, float alpha, const float* x, int64_t incx,
                             const Operand& b, float* y, int64_t incy) {
  std::vector<float> xs(static_cast<size_t>(k));
  for (int64_t p = 0; p < k; ++p) xs[p] = alpha * x[p * incx];
  if (b.trans) {
    // Rows of B are contiguous: one dot product per output, in kNr independent
    // lanes so the sum vectorizes without reassociation.
    for (int64_t j = 0; j < n; ++j) {
      const float* row = b.data + j * b.ld;
      float lanes[kNr] = {};
      int64_t p = 0;
      for (; p + kNr <= k; p += kNr) {
        for (int64_t l = 0; l < kNr; ++l) lanes[l] += xs[p + l] * row[p + l];
      }
      float sum = 0.0f;
      for (; p < k; ++p) sum += xs[p] * row[p];
      for (int64_t l = 0; l < kNr; ++l) sum += lanes[l];
      y[j * incy] += sum;
    }
    return;
  }
  // Columns of B are contiguous: axpy rows of B into a contiguous accumulator.
  std::vector<float> acc(static_cast<size_t>(n), 0.0f);
  for (int64_t p = 0; p < k; ++p) {
    const float* row = b.data + p * b.ld;
    const float s = xs[p];
    for (int64_t j = 0; j < n; ++j) acc[j] += s * row[j];
  }
  for (int64_t j = 0; j < n; ++j) y[j * incy] += acc[j];
}

void scaleOutput(int64_t m, int64_t n, float beta, float* y, int64_t ldy) {
  if (beta == 1.0f) return;
  for (int64_t i = 0; i < m; ++i) {
    float* row = y + i * ldy;
    if (beta == 0.0f) {
      std::fill(row, row + n, 0.0f);
    } else {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

// The calling thread's packing buffer, grown to at least `count` floats and kept
// across calls (at most ~1.1 MiB): allocated per call, its pages would fault in
// afresh each time, which costs more than the product itself for small shapes.
float* packBuffer(int64_t count) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < static_cast<size_t>(count)) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

KILN_TACTIC_CLONES void blockedGemm(const Operand& a, const Operand& b, int64_t m, int64_t n,
                                    int64_t k, float alpha, float* y, int64_t ldy) {
  const int64_t roundedN = (std::min(n, kNc) + kNr - 1) / kNr * kNr;
  const int64_t roundedM = (std::min(m, kMc) + kMr - 1) / kMr * kMr;
  const int64_t bSize = std::min(k, kKc) * roundedN;
  float* bPack = packBuffer(bSize + std::min(k, kKc) * roundedM);
  float* aPack = bPack + bSize;
  float tile[kMr * kNr];
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nc = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = std::min(kKc, k - pc);
      packB(b, pc, kc, jc, nc, bPack);
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = std::min(kMc, m - ic);
        packA(a, ic, mc, pc, kc, aPack);
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            microKernel(kc, aPack + ir * kc, bPack + jr * kc, tile);
            addTile(tile, alpha, std::min(kMr, mc - ir), std::min(kNr, nc - jr),
                    y + (ic + ir) * ldy + jc + jr, ldy);
          }
        }
      }
    }
  }
}

}  // namespace

void loopGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* y,
              int64_t ldy) {
  if (m <= 0 || n <= 0) return;
  scaleOutput(m, n, beta, y, ldy);
  if (k <= 0 || alpha == 0.0f) return;
  const Operand opA{a, lda, transA}, opB{b, ldb, transB};
  if (m == 1) {
    // The row of op(A) is strided when A is transposed.
    gemv(n, k, alpha, a, transA ? lda : 1, opB, y, 1);
  } else if (n == 1) {
    // y^T = op(B)^T op(A)^T: the column of op(B) against op(A) transposed.
    gemv(m, k, alpha, b, transB ? 1 : ldb, Operand{a, lda, !transA}, y, ldy);
  } else {
    blockedGemm(opA, opB, m, n, k, alpha, y, ldy);
  }
}

}  // namespace kiln::cpu
