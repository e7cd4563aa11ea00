// GEMM through cuBLASLt for any GPU kernel (MatMul, Gemm, RNN cells, attention).
// Row-major operands; the chosen algorithm is cached in the layer's state, or in
// `cache` when a kernel runs several different GEMMs.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"

namespace kiln::cuda {

// One GEMM in row-major terms: D[b] = alpha * op(A[b]) * op(B[b]) (+ beta * C or + bias).
struct GemmProblem {
  DataType type = DataType::kFloat32;
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideD = 0;  // elements between batches
  float alpha = 1.f, beta = 0.f;
  bool bias = false;  // bias vector of length n added to every row
  bool relu = false;  // with bias: max(0, .) after it (cuBLASLt's RELU_BIAS epilogue)
  // With bias and not relu: GELU after it, cuBLASLt's GELU_BIAS epilogue, which computes
  // the tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  bool geluTanh = false;
  bool tf32 = false;
  // Algorithm choice (set by the layer kernels, not by steps inside other kernels):
  // `raceAlgorithms` times up to kGemmRaceCandidates of the heuristic's algorithms on the
  // first run of a GEMM of at least kGemmRaceMinFlops whose every run writes the same D
  // (beta = 0, or C a buffer apart from D) and keeps the fastest; `algorithm` >= 0 takes the
  // heuristic's algorithm of that index without timing (a plan's recorded choice; the first one
  // when the heuristic has fewer). Not part of the problem's identity: a plan chosen either way
  // serves the later runs.
  bool raceAlgorithms = false;
  int algorithm = -1;
  // Byte alignment of the A, B, D (and bias) pointers, up to 256: the algorithm must
  // accept them. Filled in by runGemm from the actual pointers.
  int alignA = 256, alignB = 256, alignD = 256;
  // Whether C is a buffer apart from D (a residual read in the epilogue), so that a run
  // with beta != 0 does not read what the run before it wrote. Filled in by runGemm.
  bool separateC = false;

  bool operator==(const GemmProblem& o) const {
    return type == o.type && m == o.m && n == o.n && k == o.k && transA == o.transA &&
           transB == o.transB && batch == o.batch && strideA == o.strideA && strideB == o.strideB &&
           strideD == o.strideD && alpha == o.alpha && beta == o.beta && bias == o.bias &&
           relu == o.relu && geluTanh == o.geluTanh && tf32 == o.tf32 && alignA == o.alignA &&
           alignB == o.alignB && alignD == o.alignD &&
           separateC == o.separateC;  // not how the algorithm is chosen
  }
};

// A cuBLASLt matmul descriptor and its A, B and D layouts (cuBLASLt's column-major
// operands), destroyed together; the float, INT8 and FP8 GEMM plans build on it.
struct LtMatmulDescriptors {
  LtMatmulDescriptors() = default;
  LtMatmulDescriptors(const LtMatmulDescriptors&) = delete;
  LtMatmulDescriptors& operator=(const LtMatmulDescriptors&) = delete;
  ~LtMatmulDescriptors();
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
};

// `g` as an INT8 "TN" GEMM in row-major terms D[rows, cols] = A[rows, depth] *
// W[cols, depth]^T: cuBLASLt's column-major D^T (cols x rows) = op_T(W as depth x cols)
// * (A as depth x rows), int32 accumulation, `scaleType` alpha/beta, D (and C) of
// `dType`; layouts a: W, b: A, d: D. The layout IMMA kernels take.
Status describeInt8TnGemm(LtMatmulDescriptors* g, cudaDataType_t scaleType, cudaDataType_t dType,
                          int64_t rows, int64_t cols, int64_t depth);

// The cuBLASLt heuristic's first algorithm for `op` on layouts a, b and d (C = D), with
// at most min(the engine's workspace limit, 64 MiB) of workspace and, when given,
// minimum pointer alignments {A, B, C, D} in bytes. `status` is cuBLASLt's answer;
// `found` is false when it has no algorithm (a kernel then says why or falls back).
struct LtAlgorithm {
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool found = false;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
};
// Up to `count` of the heuristic's algorithms, best guess first (only those it says run);
// a cuBLASLt error comes back as an error, none found as an empty list.
Result<std::vector<LtAlgorithm>> ltAlgorithms(GpuKernelContext& ctx, cublasLtMatmulDesc_t op,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t d, const uint32_t* alignments,
                                              int count);
Result<LtAlgorithm> firstLtAlgorithm(GpuKernelContext& ctx, cublasLtMatmulDesc_t op,
                                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                     cublasLtMatrixLayout_t d,
                                     const uint32_t* alignments = nullptr);

constexpr int kGemmRaceCandidates = 8;
constexpr double kGemmRaceMinFlops = 268435456.0;  // 2^28: smaller GEMMs take the first

// How many of the heuristic's algorithms a new plan for `p` asks for, and whether it times
// them: a recorded algorithm's index + 1 without timing; kGemmRaceCandidates timed for a
// race (raceAlgorithms, beta 0, at least kGemmRaceMinFlops); else the first, untimed.
struct GemmAlgorithmRequest {
  int count = 1;
  bool race = false;
};
GemmAlgorithmRequest gemmAlgorithmRequest(const GemmProblem& p);

// The heuristic's algorithm index the GEMM plan in `state` (runGemm's cache) runs, and
// the race's words for the inspector ("algorithm 2 of 8 by time {0=0.035ms, ...}"; "" when
// it ran the first without a race); -1 and "" without a plan.
int gemmAlgorithmIndex(const std::shared_ptr<void>& state);
// The algorithm index a recorded choice names after `prefix` ("algorithm:3" -> 3), or -1
// (another choice, no number).
int gemmAlgorithmOfChoice(const std::string& choice, const std::string& prefix);
std::string gemmAlgorithmNote(const std::shared_ptr<void>& state);
// The heuristic's indices of the algorithms that ran in the plan's race, with their times
// (empty without a race): the choices a layer offers a builder (offerChoices).
std::vector<std::pair<int, float>> gemmRacedAlgorithms(const std::shared_ptr<void>& state);

// What runs for `p`, for the inspector ("cublasLt heuristic algorithm (fp32 accumulate,
// bias epilogue)").
std::string gemmImplementation(const GemmProblem& p);
// TF32 for a float32 GEMM when the engine allows it.
bool useTf32(const GpuKernelContext& ctx, DataType type);
// Registers ai.kiln FusedMatMul (fused_matmul.cpp).
void registerFusedMatMulGpuKernel(GpuKernelRegistry& registry);

// D[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] (+ bias row of length n when p.bias),
// C = `c` (D's layout, a buffer apart from D: a residual added in the epilogue) or, when
// null, D itself. float32 (TF32 when p.tf32), float16 and bfloat16 storage; float
// accumulation. `madePlan` (optional): whether this call made a new plan (the first run of
// this problem).
Status runGemm(GpuKernelContext& ctx, const GemmProblem& p, const void* a, const void* b, void* d,
               const void* bias, std::shared_ptr<void>* cache = nullptr, bool* madePlan = nullptr,
               const void* c = nullptr);

}  // namespace kiln::cuda
