// The persistent LSTM kernel (contract: lstm_persistent.h; the op and the step loop it
// replaces: rnn.cpp, rnn_impl.cu). Grid: (batch blocks, directions); a block of `warps`
// warps owns `rows` batch entries (16 per m-tile) of one direction for every step.
//  - Shared memory: R of the direction as [4H][H + 8] (the row padding makes every
//    ldmatrix of 8 rows conflict-free), the hidden state H_prev as 16-bit [2][rows][H + 8]
//    (double-buffered: a step reads one and writes the other).
//  - A warp owns one m-tile of 16 entries and 2 groups of 8 hidden units; for each
//    group it computes the four gate tiles i, o, f, c (columns g*H + j of R's rows), so
//    each lane ends a step holding all four gates of the same (entry, unit) pairs in its
//    accumulators (m16n8k16's C layout: rows L/4 and +8, units 2(L%4) and +1) and updates
//    C (in registers for the whole sequence) and H there.
//  - The accumulators start from the step's projection row, X W^T + (Wb + Rb): rnn.cpp
//    folds Rb into the projection's bias for this kernel. The block's rows of step s + 1
//    are copied (cp.async) into a second shared buffer [2][rows][4H + 8] while step s
//    computes, so one barrier a step covers both H and the rows.
// Activations in float on the special function unit (sigmoidFast, tanhFast below).
#include "backends/cuda/ops/lstm_persistent.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/ops/async_copy.cuh"
#include "backends/cuda/ops/mma_f16.cuh"
#include "backends/cuda/row_kernels.cuh"
#include "backends/cuda/type_dispatch.cuh"

namespace kiln::cuda::rnn {
namespace {

constexpr int kMaxWarps = 8;
// Groups of 8 hidden units a warp computes: 2 keeps a lane's accumulators, C and addresses
// within 128 registers (two blocks of 8 warps a multiprocessor, no spills); 3 and 4 took
// 220-247 registers, which halves the warps resident and leaves Sequencer2D's 1,792-warp
// grids two waves deep.
constexpr int kGroupsPerWarp = 2;
constexpr int kPad = 8;  // 16-bit elements after each shared row

struct PersistentArgs {
  const void* xproj;
  int64_t xprojStride;
  const void* r;
  float* h;
  float* c;
  const void* hOperand;
  void* y;
  int64_t seq, batch;
  int hidden, dirs, rows, warpsPerTile;
  bool reverseOnly, batchFirst;
};

// The gates' activations on the special function unit: tanh.approx.f32 (relative error
// below 2^-10.99, about half a float16 ulp) and a sigmoid from ex2.approx and a fast
// division (exact to a few float ulps, 0 where exp(-x) overflows). The step loop's cell
// kernel uses the precise library functions.
__device__ __forceinline__ float tanhFast(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float sigmoidFast(float x) {
  return __fdividef(1.f, 1.f + __expf(-x));
}

template <class T, int kGroups>
__global__ void __launch_bounds__(kMaxWarps * 32, 2) lstmPersistent(PersistentArgs a) {
  extern __shared__ __align__(16) unsigned char shared[];
  const int H = a.hidden, ld = H + kPad, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  T* sR = reinterpret_cast<T*>(shared);  // [4H][ld]
  T* sH = sR + 4 * H * ld;               // [2][rows][ld]
  const int xld = 4 * H + kPad;
  T* sX = sH + 2 * a.rows * ld;  // the steps' projection rows, [2][rows][xld]
  const int d = blockIdx.y;
  const bool reverse = a.reverseOnly || d == 1;
  const int64_t first = int64_t(blockIdx.x) * a.rows;

  // R and the initial H of this block's entries.
  const T* r = static_cast<const T*>(a.r) + int64_t(d) * 4 * H * H;
  const int chunks = H / 8;  // 16-byte chunks a row of R
  if (reinterpret_cast<uintptr_t>(r) % 16 == 0) {
    for (int e = threadIdx.x; e < 4 * H * chunks; e += blockDim.x)
      *reinterpret_cast<uint4*>(sR + (e / chunks) * ld + (e % chunks) * 8) =
          reinterpret_cast<const uint4*>(r)[e];
  } else {
    for (int e = threadIdx.x; e < 4 * H * H; e += blockDim.x) sR[(e / H) * ld + e % H] = r[e];
  }
  const T* h0 = static_cast<const T*>(a.hOperand) + int64_t(d) * a.batch * H;
  for (int e = threadIdx.x; e < a.rows * H; e += blockDim.x) {
    const int64_t b = first + e / H;
    sH[(e / H) * ld + e % H] = b < a.batch ? h0[b * H + e % H] : fromFloat<T>(0.f);
  }

  // This lane's (entry, unit) pairs: m-tile rows L/4 (+8), units of groups g0 .. g0 + kGroups.
  const int tile = warp / a.warpsPerTile;
  const int g0 = (warp % a.warpsPerTile) * kGroups;
  const int rowInTile = lane / 4, unitInGroup = 2 * (lane % 4);
  int64_t entry[2];
  bool live[2];
  for (int half = 0; half < 2; ++half) {
    entry[half] = first + tile * 16 + rowInTile + half * 8;
    live[half] = entry[half] < a.batch;
  }
  float c[kGroups][4];
  const int64_t stateBase = int64_t(d) * a.batch * H;
#pragma unroll
  for (int jj = 0; jj < kGroups; ++jj)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int half = e / 2, unit = (g0 + jj) * 8 + unitInGroup + e % 2;
      c[jj][e] = live[half] ? a.c[stateBase + entry[half] * H + unit] : 0.f;
    }

  const T* xproj = static_cast<const T*>(a.xproj) + int64_t(d) * a.xprojStride;
  // Step s's projection rows of this block's entries into sX[s % 2] (cp.async, 16 bytes a
  // copy; entries past the batch get zeros), one commit group a step.
  const int rowChunks = 4 * H / 8;
  auto stageStep = [&](int64_t s) {
    const int64_t t = reverse ? a.seq - 1 - s : s;
    T* to = sX + (s % 2) * a.rows * xld;
    for (int e = threadIdx.x; e < a.rows * rowChunks; e += blockDim.x) {
      const int row = e / rowChunks, chunk = e % rowChunks;
      const int64_t b = first + row;
      const bool valid = b < a.batch;
      const int64_t source = a.batchFirst ? b * a.seq + t : t * a.batch + b;
      copyAsync16(to + row * xld + chunk * 8, valid ? xproj + source * 4 * H + chunk * 8 : xproj,
                  valid);
    }
    commitCopies();
  };
  stageStep(0);

  T* y = static_cast<T*>(a.y);
  for (int64_t s = 0; s < a.seq; ++s) {
    // Step s's rows have landed and every warp is done with step s - 1: H_prev (written
    // last step) is complete and sX[(s + 1) % 2] free for the next step's rows.
    waitCopies<0>();
    __syncthreads();
    if (s + 1 < a.seq) stageStep(s + 1);
    const int64_t t = reverse ? a.seq - 1 - s : s;
    const T* hRead = sH + (s % 2) * a.rows * ld;
    T* hWrite = sH + ((s + 1) % 2) * a.rows * ld;
    const T* xRead = sX + (s % 2) * a.rows * xld;
    // The step's X W^T + Wb + Rb: where the accumulators start.
    float acc[kGroups][4][4];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const T* row = xRead + (tile * 16 + rowInTile + half * 8) * xld;
#pragma unroll
      for (int jj = 0; jj < kGroups; ++jj)
#pragma unroll
        for (int g = 0; g < 4; ++g)
          loadPack<2>(row, g * H + (g0 + jj) * 8 + unitInGroup, 1, &acc[jj][g][2 * half]);
    }

    // acc += H_prev R^T: per k-step one A fragment (the m-tile's 16 x 16 of H_prev) and,
    // per group, two ldmatrix.x4 for the four gates' 16 x 8 tiles of R^T.
    const T* aBase = hRead + (tile * 16 + lane % 16) * ld + (lane / 16) * 8;
    for (int k0 = 0; k0 < H; k0 += 16) {
      uint32_t af[4];
      ldmatrixX4<false>(af, aBase + k0);
#pragma unroll
      for (int jj = 0; jj < kGroups; ++jj) {
        // Matrix m of an x4: gate (m / 2) (+2 for the second), k half m % 2; lane's row L % 8.
        const int m = lane / 8;
        const T* bBase = sR + ((m / 2) * H + (g0 + jj) * 8 + lane % 8) * ld + k0 + (m % 2) * 8;
        uint32_t bf[4];
        ldmatrixX4<false>(bf, bBase);
        mma16816<T>(acc[jj][0], af, bf[0], bf[1]);
        mma16816<T>(acc[jj][1], af, bf[2], bf[3]);
        ldmatrixX4<false>(bf, bBase + 2 * H * ld);
        mma16816<T>(acc[jj][2], af, bf[0], bf[1]);
        mma16816<T>(acc[jj][3], af, bf[2], bf[3]);
      }
    }

    // The cell: i, o, f, c gates (ONNX order) of each pair, C and H updated.
    const bool last = s + 1 == a.seq;
#pragma unroll
    for (int jj = 0; jj < kGroups; ++jj) {
      const int unit = (g0 + jj) * 8 + unitInGroup;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float hNew[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int k = 2 * half + e;
          const float i = sigmoidFast(acc[jj][0][k]);
          const float f = sigmoidFast(acc[jj][2][k]);
          const float candidate = tanhFast(acc[jj][3][k]);
          c[jj][k] = f * c[jj][k] + i * candidate;
          hNew[e] = sigmoidFast(acc[jj][1][k]) * tanhFast(c[jj][k]);
        }
        const int row = tile * 16 + rowInTile + half * 8;
        storePack<2>(hWrite + row * ld, unit, hNew);
        if (!live[half]) continue;
        const int64_t b = entry[half];
        if (y) {
          const int64_t offset = a.batchFirst ? ((b * a.seq + t) * a.dirs + d) * H + unit
                                              : ((t * a.dirs + d) * a.batch + b) * H + unit;
          storePack<2>(y, offset, hNew);
        }
        if (last) {
          const int64_t state = stateBase + b * H + unit;
          a.h[state] = hNew[0];
          a.h[state + 1] = hNew[1];
          a.c[state] = c[jj][2 * half];
          a.c[state + 1] = c[jj][2 * half + 1];
        }
      }
    }
  }
}

template <class T>
__global__ void foldRecurrentBias(const T* b, T* out, int64_t gateWidth) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < gateWidth;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = fromFloat<T>(toFloat(b[i]) + toFloat(b[gateWidth + i]));
}

size_t sharedBytes(int64_t hidden, int rows, size_t elem) {
  return static_cast<size_t>((4 * hidden + 2 * rows) * (hidden + kPad) +
                             2 * rows * (4 * hidden + kPad)) *
         elem;
}

}  // namespace

std::string persistentLstmRefusal(DataType type, const CellParams& p, bool hasPeepholes) {
  if (p.cell != Cell::kLstm) return "not an LSTM";
  if (type != DataType::kFloat16 && type != DataType::kBFloat16) return "not 16-bit storage";
  if (p.hidden % 16 != 0 || p.hidden > kPersistentLstmMaxHidden)
    return "hidden size not a multiple of 16 up to 128";
  if (p.lens) return "sequence_lens";
  if (p.clip > 0.f) return "clip";
  if (p.inputForget) return "input_forget";
  if (hasPeepholes) return "peepholes";
  for (int64_t d = 0; d < p.dirs; ++d) {
    const ActParams* acts = p.acts + d * p.actsPerDirection;
    if (acts[0].kind != ActKind::kSigmoid || acts[1].kind != ActKind::kTanh ||
        acts[2].kind != ActKind::kTanh)
      return "activations other than sigmoid, tanh, tanh";
  }
  return "";
}

Status launchFoldRecurrentBias(DataType type, const void* b, void* out, int64_t gateWidth,
                               cudaStream_t stream) {
  return dispatchDeviceType<device_types::kFloat16 | device_types::kBFloat16>(
      type, [&](auto tag) -> Status {
        using T = decltype(tag);
        foldRecurrentBias<T><<<gridFor(gateWidth), kBlockSize, 0, stream>>>(
            static_cast<const T*>(b), static_cast<T*>(out), gateWidth);
        KILN_CUDA_CHECK_LAUNCH("foldRecurrentBias");
        return Status::ok();
      });
}

PersistentLstmShape persistentLstmShape(const CellParams& p, int smCount) {
  PersistentLstmShape shape;
  shape.groupsPerWarp = kGroupsPerWarp;
  const int warpsPerTile = static_cast<int>(p.hidden / 8 / shape.groupsPerWarp);
  int tiles = std::clamp(kMaxWarps / warpsPerTile, 1, 4);
  if (tiles == 3) tiles = 2;
  // Fewer entries a block while the grid would leave multiprocessors idle.
  while (tiles > 1 && (p.batch + 16 * tiles - 1) / (16 * tiles) * p.dirs < smCount) tiles /= 2;
  shape.rowsPerBlock = 16 * tiles;
  shape.warps = tiles * warpsPerTile;
  return shape;
}

Status launchPersistentLstm(const PersistentLstmLaunch& l, int smCount, cudaStream_t stream) {
  const CellParams& p = l.p;
  const PersistentLstmShape shape = persistentLstmShape(p, smCount);
  PersistentArgs a;
  a.xproj = l.xproj;
  a.xprojStride = l.xprojStride;
  a.r = l.r;
  a.h = l.h;
  a.c = l.c;
  a.hOperand = l.hOperand;
  a.y = l.y;
  a.seq = p.seq;
  a.batch = p.batch;
  a.hidden = static_cast<int>(p.hidden);
  a.dirs = static_cast<int>(p.dirs);
  a.rows = shape.rowsPerBlock;
  a.warpsPerTile = shape.warps / (shape.rowsPerBlock / 16);
  a.reverseOnly = p.reverseOnly;
  a.batchFirst = p.batchFirst;
  const dim3 grid(static_cast<unsigned>((p.batch + a.rows - 1) / a.rows),
                  static_cast<unsigned>(p.dirs));
  return dispatchDeviceType<device_types::kFloat16 | device_types::kBFloat16>(
      l.type, [&](auto tag) -> Status {
        using T = decltype(tag);
        const size_t bytes = sharedBytes(p.hidden, a.rows, sizeof(T));
        auto run = [&](auto kernel) -> Status {
          KILN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(bytes)));
          kernel<<<grid, shape.warps * 32, bytes, stream>>>(a);
          KILN_CUDA_CHECK_LAUNCH("lstmPersistent");
          return Status::ok();
        };
        return run(lstmPersistent<T, kGroupsPerWarp>);
      });
}

}  // namespace kiln::cuda::rnn
