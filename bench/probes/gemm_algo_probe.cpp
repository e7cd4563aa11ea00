// kiln_gemm_algo_probe: how much faster than cuBLASLt's heuristic a wider GEMM search runs
// on the lent GPU, for the transformer shapes of issue 22 (a probe, not a test).
//
// Usage: kiln_gemm_algo_probe M,N,K[,gelu] ...
//   Each problem is Kiln's 16-bit MatMul / FusedMatMul layout: A [M,K] and B [K,N] row-major,
//   fp32 accumulate, a bias epilogue (with ",gelu": GELU(tanh form) + bias), D [M,N] fp16.
//   For each it times, on random data, with CUDA events (the best of 3 samples of 10 runs):
//     heuristic-8   the heuristic's first 8 algorithms (what Kiln's builder offers today);
//     heuristic-64  the heuristic asked for 64;
//     per-id        the heuristic limited to each algorithm id cuBLASLt lists (16 each);
//     exhaustive    every id x tile x stages x cluster shape x swizzle that AlgoCheck accepts
//                   (capped by KILN_PROBE_MAX_CONFIGS, default 3000).
//   Prints one line per search: the count timed, the best time, TFLOP/s, and the winner's
//   id / tile / stages / cluster / splitK.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                                         \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)
#define CHECK_LT(x)                                                                          \
  do {                                                                                       \
    cublasStatus_t s_ = (x);                                                                 \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      std::fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, int(s_)); \
      std::exit(2);                                                                          \
    }                                                                                        \
  } while (0)

struct Problem {
  int64_t m = 0, n = 0, k = 0;
  bool gelu = false;
};

struct Gemm {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  const void *A = nullptr, *B = nullptr;
  void* D = nullptr;
  void* workspace = nullptr;
  size_t workspaceLimit = 64u << 20;
  cudaStream_t stream = nullptr;
};

struct Timed {
  float ms = 1e30f;
  cublasLtMatmulAlgo_t algo{};
};

int configOf(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  int value = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written) !=
      CUBLAS_STATUS_SUCCESS)
    return -1;
  return value;
}

std::string describe(const cublasLtMatmulAlgo_t& algo) {
  char text[160];
  std::snprintf(
      text, sizeof(text), "id %d tile %d stages %d cluster %d splitK %d swizzle %d custom %d",
      configOf(algo, CUBLASLT_ALGO_CONFIG_ID), configOf(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
      configOf(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
      configOf(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
      configOf(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
      configOf(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
      configOf(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION));
  return text;
}

// Mean time of one launch (best of 3 samples of 10), or a negative value when it fails.
float timeAlgo(const Gemm& g, const cublasLtMatmulAlgo_t& algo, size_t workspace) {
  const float alpha = 1.f, beta = 0.f;
  auto once = [&] {
    return cublasLtMatmul(g.handle, g.op, &alpha, g.B, g.a, g.A, g.b, &beta, g.D, g.d, g.D, g.d,
                          &algo, g.workspace, workspace, g.stream);
  };
  for (int i = 0; i < 2; ++i)
    if (once() != CUBLAS_STATUS_SUCCESS) return -1.f;
  if (cudaStreamSynchronize(g.stream) != cudaSuccess) return -1.f;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  float best = 1e30f;
  for (int sample = 0; sample < 3; ++sample) {
    CHECK_CUDA(cudaEventRecord(start, g.stream));
    for (int i = 0; i < 10; ++i) once();
    CHECK_CUDA(cudaEventRecord(stop, g.stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, ms / 10.f);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return best;
}

// The heuristic's algorithms for `count`, optionally limited to one algorithm id.
std::vector<cublasLtMatmulHeuristicResult_t> heuristic(const Gemm& g, int count, int algoId) {
  cublasLtMatmulPreference_t preference = nullptr;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&preference));
  const uint64_t limit = g.workspaceLimit;
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof(limit)));
  std::vector<cublasLtMatmulHeuristicResult_t> results(count);
  int found = 0;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  if (algoId >= 0) {
    const uint32_t mode = CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID;
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_SEARCH_MODE,
                                                  &mode, sizeof(mode)));
    for (auto& r : results)
      CHECK_LT(cublasLtMatmulAlgoInit(g.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F,
                                      CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, algoId, &r.algo));
  }
  status = cublasLtMatmulAlgoGetHeuristic(g.handle, g.op, g.a, g.b, g.d, g.d, preference, count,
                                          results.data(), &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS) found = 0;
  results.resize(found);
  results.erase(std::remove_if(results.begin(), results.end(),
                               [](const auto& r) { return r.state != CUBLAS_STATUS_SUCCESS; }),
                results.end());
  return results;
}

void report(const char* search, const Problem& p, int timed, const Timed& best) {
  const double tflops = 2.0 * p.m * p.n * p.k / (best.ms * 1e-3) / 1e12;
  std::printf("  %-13s %5d timed  best %.4f ms  %6.1f TFLOP/s  %s\n", search, timed, best.ms,
              tflops, timed ? describe(best.algo).c_str() : "-");
  std::fflush(stdout);
}

Timed timeAll(const Gemm& g, const std::vector<cublasLtMatmulHeuristicResult_t>& results,
              int* timed) {
  Timed best;
  for (const auto& r : results) {
    const float ms = timeAlgo(g, r.algo, r.workspaceSize);
    if (ms < 0) continue;
    ++*timed;
    if (ms < best.ms) best = {ms, r.algo};
  }
  return best;
}

template <typename T>
std::vector<T> capability(const cublasLtMatmulAlgo_t& algo,
                          cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS ||
      bytes == 0)
    return {};
  std::vector<T> values(bytes / sizeof(T));
  cublasLtMatmulAlgoCapGetAttribute(&algo, attr, values.data(), bytes, &bytes);
  return values;
}

void probe(Gemm& g, const Problem& p) {
  std::printf("GEMM M=%lld N=%lld K=%lld %s\n", (long long)p.m, (long long)p.n, (long long)p.k,
              p.gelu ? "gelu+bias" : "bias");
  int timed = 0;
  const Timed first = timeAll(g, heuristic(g, 1, -1), &timed);
  report("heuristic-1", p, timed, first);
  timed = 0;
  const Timed best8 = timeAll(g, heuristic(g, 8, -1), &timed);
  report("heuristic-8", p, timed, best8);
  timed = 0;
  const Timed best64 = timeAll(g, heuristic(g, 64, -1), &timed);
  report("heuristic-64", p, timed, best64);
  std::vector<int> ids(256);
  int idCount = 0;
  CHECK_LT(cublasLtMatmulAlgoGetIds(g.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F,
                                    CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, int(ids.size()), ids.data(),
                                    &idCount));
  ids.resize(idCount);
  timed = 0;
  Timed perId;
  for (int id : ids) {
    int one = 0;
    const Timed t = timeAll(g, heuristic(g, 16, id), &one);
    timed += one;
    if (t.ms < perId.ms) perId = t;
  }
  report("per-id", p, timed, perId);
  const char* capText = std::getenv("KILN_PROBE_MAX_CONFIGS");
  const int cap = capText ? std::atoi(capText) : 3000;
  const int clusters[] = {CUBLASLT_CLUSTER_SHAPE_AUTO,  CUBLASLT_CLUSTER_SHAPE_1x1x1,
                          CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1,
                          CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
                          CUBLASLT_CLUSTER_SHAPE_1x4x1};
  timed = 0;
  int checked = 0;
  Timed exhaustive;
  for (int id : ids) {
    cublasLtMatmulAlgo_t algo;
    if (cublasLtMatmulAlgoInit(g.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F,
                               CUDA_R_16F, CUDA_R_16F, id, &algo) != CUBLAS_STATUS_SUCCESS)
      continue;
    std::vector<uint32_t> tiles = capability<uint32_t>(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
    std::vector<uint32_t> stages = capability<uint32_t>(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
    if (tiles.empty()) tiles = {CUBLASLT_MATMUL_TILE_UNDEFINED};
    if (stages.empty()) stages = {0};
    const std::vector<int32_t> swizzle =
        capability<int32_t>(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT);
    const int swizzles = !swizzle.empty() && swizzle[0] ? 2 : 1;
    for (uint32_t tile : tiles)
      for (uint32_t stage : stages)
        for (int cluster : clusters)
          for (int sw = 0; sw < swizzles; ++sw) {
            if (timed >= cap) break;
            cublasLtMatmulAlgo_t c = algo;
            cublasLtMatmulAlgoConfigSetAttribute(&c, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                 sizeof(tile));
            cublasLtMatmulAlgoConfigSetAttribute(&c, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage,
                                                 sizeof(stage));
            cublasLtMatmulAlgoConfigSetAttribute(&c, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                 &cluster, sizeof(cluster));
            uint32_t swz = uint32_t(sw);
            cublasLtMatmulAlgoConfigSetAttribute(&c, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz,
                                                 sizeof(swz));
            cublasLtMatmulHeuristicResult_t check{};
            ++checked;
            if (cublasLtMatmulAlgoCheck(g.handle, g.op, g.a, g.b, g.d, g.d, &c, &check) !=
                    CUBLAS_STATUS_SUCCESS ||
                check.workspaceSize > g.workspaceLimit)
              continue;
            const float ms = timeAlgo(g, c, check.workspaceSize);
            if (ms < 0) continue;
            ++timed;
            if (ms < exhaustive.ms) exhaustive = {ms, c};
          }
  }
  std::printf("  (exhaustive: %d configurations checked, %d ids)\n", checked, idCount);
  report("exhaustive", p, timed, exhaustive);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s M,N,K[,gelu] ...\n", argv[0]);
    return 1;
  }
  Gemm g;
  CHECK_LT(cublasLtCreate(&g.handle));
  CHECK_CUDA(cudaStreamCreate(&g.stream));
  CHECK_CUDA(cudaMalloc(&g.workspace, g.workspaceLimit));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 0.5f);
  for (int i = 1; i < argc; ++i) {
    Problem p;
    long long m = 0, n = 0, k = 0;
    char extra[16] = {0};
    if (std::sscanf(argv[i], "%lld,%lld,%lld,%15s", &m, &n, &k, extra) < 3) {
      std::fprintf(stderr, "bad problem '%s' (M,N,K[,gelu])\n", argv[i]);
      return 1;
    }
    p.m = m, p.n = n, p.k = k, p.gelu = std::string(extra) == "gelu";
    std::vector<__half> hostA(p.m * p.k), hostB(p.k * p.n), hostBias(p.n);
    for (auto& v : hostA) v = __float2half(normal(rng));
    for (auto& v : hostB) v = __float2half(normal(rng) * 0.05f);
    for (auto& v : hostBias) v = __float2half(normal(rng));
    void *A, *B, *D, *bias;
    CHECK_CUDA(cudaMalloc(&A, hostA.size() * 2));
    CHECK_CUDA(cudaMalloc(&B, hostB.size() * 2));
    CHECK_CUDA(cudaMalloc(&D, p.m * p.n * 2));
    CHECK_CUDA(cudaMalloc(&bias, p.n * 2));
    CHECK_CUDA(cudaMemcpy(A, hostA.data(), hostA.size() * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(B, hostB.data(), hostB.size() * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(bias, hostBias.data(), p.n * 2, cudaMemcpyHostToDevice));
    g.A = A, g.B = B, g.D = D;
    // Column-major view as in Kiln's runGemm: D^T (n x m) = B^T (n x k) * A^T (k x m).
    CHECK_LT(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasLtEpilogue_t epilogue =
        p.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    CHECK_LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof(epilogue)));
    CHECK_LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof(bias)));
    CHECK_LT(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16F, p.n, p.k, p.n));
    CHECK_LT(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16F, p.k, p.m, p.k));
    CHECK_LT(cublasLtMatrixLayoutCreate(&g.d, CUDA_R_16F, p.n, p.m, p.n));
    probe(g, p);
    cublasLtMatmulDescDestroy(g.op);
    cublasLtMatrixLayoutDestroy(g.a);
    cublasLtMatrixLayoutDestroy(g.b);
    cublasLtMatrixLayoutDestroy(g.d);
    CHECK_CUDA(cudaFree(A));
    CHECK_CUDA(cudaFree(B));
    CHECK_CUDA(cudaFree(D));
    CHECK_CUDA(cudaFree(bias));
  }
  cudaFree(g.workspace);
  cublasLtDestroy(g.handle);
  return 0;
}
