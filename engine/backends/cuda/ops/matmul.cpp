// MatMul and Gemm through cuBLASLt. Row-major ONNX matrices are handed to the
// column-major library as their transposes (C^T = B^T A^T), batches as strided
// batches (stride 0 for a broadcast operand), a 2-D right operand folds the left
// operand's batch into M, and Gemm's bias row becomes the BIAS epilogue; many small
// products (small_batched_matmul.h) take Kiln's kernel instead. The
// heuristic's first algorithm for each shape, or for the layer kernels the fastest of its
// first kGemmRaceCandidates timed on the layer's buffers, is cached in the layer's state.
#include <cublasLt.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common_host.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/libraries.h"
#include "backends/cuda/ops/choice_offers.h"
#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "backends/cuda/ops/gemm.h"
#include "backends/cuda/ops/small_batched_matmul.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

cudaDataType_t cudaTypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return CUDA_R_16F;
    case DataType::kBFloat16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// Descriptors and the chosen algorithm for one problem; `candidates` the heuristic's
// algorithms a race may still time (emptied once it has), `index` the chosen one's.
struct GemmPlan : LtMatmulDescriptors {
  GemmProblem problem;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  std::vector<LtAlgorithm> candidates;
  int index = 0;
  std::string note;            // the race's words
  std::vector<int> raced;      // the heuristic's indices that ran in the race
  std::vector<float> racedMs;  // and their times
};

Status makeLayout(cublasLtMatrixLayout_t* layout, DataType type, int64_t rows, int64_t cols,
                  int64_t ld, int64_t batch, int64_t stride) {
  KILN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(layout, cudaTypeOf(type), rows, cols, ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    KILN_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                       &count, sizeof(count)));
    KILN_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        *layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return Status::ok();
}

// Column-major view: D^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
Status buildPlan(GpuKernelContext& ctx, const GemmProblem& p, GemmPlan* plan) {
  plan->problem = p;
  cublasComputeType_t compute = p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  KILN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op, compute, CUDA_R_32F));
  cublasOperation_t opFirst = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst,
                                                   sizeof(opFirst)));
  KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond,
                                                   sizeof(opSecond)));
  if (p.bias) {
    const cublasLtEpilogue_t epilogue = p.relu       ? CUBLASLT_EPILOGUE_RELU_BIAS
                                        : p.geluTanh ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                     : CUBLASLT_EPILOGUE_BIAS;
    KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                     &epilogue, sizeof(epilogue)));
  }
  // Stored matrices: B is [k, n] row-major = n x k column-major (ld n), or [n, k] when transB.
  KILN_RETURN_IF_ERROR(makeLayout(&plan->a, p.type, p.transB ? p.k : p.n, p.transB ? p.n : p.k,
                                  p.transB ? p.k : p.n, p.batch, p.strideB));
  KILN_RETURN_IF_ERROR(makeLayout(&plan->b, p.type, p.transA ? p.m : p.k, p.transA ? p.k : p.m,
                                  p.transA ? p.m : p.k, p.batch, p.strideA));
  KILN_RETURN_IF_ERROR(makeLayout(&plan->d, p.type, p.n, p.m, p.n, p.batch, p.strideD));
  // Column-major A is our B, column-major B is our A.
  const uint32_t alignments[4] = {uint32_t(p.alignB), uint32_t(p.alignA), uint32_t(p.alignD),
                                  uint32_t(p.alignD)};
  const GemmAlgorithmRequest request = gemmAlgorithmRequest(p);
  KILN_ASSIGN_OR_RETURN(
      std::vector<LtAlgorithm> results,
      ltAlgorithms(ctx, plan->op, plan->a, plan->b, plan->d, alignments, request.count));
  if (results.empty()) {
    return ctx.unsupported("cuBLASLt has no algorithm for " + std::to_string(p.m) + "x" +
                           std::to_string(p.n) + "x" + std::to_string(p.k));
  }
  plan->index = p.algorithm >= 0 && p.algorithm < int(results.size()) ? p.algorithm : 0;
  plan->algo = results[plan->index].algo;
  plan->workspace = results[plan->index].workspace;
  if (p.algorithm >= 0 && plan->index != p.algorithm)
    plan->note = "; the plan's algorithm " + std::to_string(p.algorithm) +
                 " is not offered here (" + std::to_string(results.size()) + "): the first";
  if (request.race && results.size() > 1) plan->candidates = std::move(results);
  return Status::ok();
}

Status launch(GpuKernelContext& ctx, const GemmPlan& plan, const void* a, const void* b, void* d,
              const void* c) {
  const GemmProblem& p = plan.problem;
  void* workspace = nullptr;
  if (plan.workspace > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, ctx.libraryWorkspace(plan.workspace));
  }
  KILN_ASSIGN_OR_RETURN(cublasLtHandle_t handle, ctx.libraries().cublasLt());
  KILN_CUBLAS_CHECK(cublasLtMatmul(handle, plan.op, &p.alpha, b, plan.a, a, plan.b, &p.beta,
                                   c ? c : d, plan.d, d, plan.d, &plan.algo, workspace,
                                   plan.workspace, ctx.stream()));
  return Status::ok();
}

// Times each candidate algorithm on the layer's own buffers (beta = 0, or C apart from D:
// every run writes the same D) and keeps the fastest; one that fails is no candidate.
Status raceAlgorithms(GpuKernelContext& ctx, GemmPlan* plan, const void* a, const void* b, void* d,
                      const void* c) {
  const std::vector<LtAlgorithm> candidates = std::move(plan->candidates);
  plan->candidates.clear();
  float best = 1e30f;
  int bestIndex = -1;
  std::ostringstream times;
  for (size_t i = 0; i < candidates.size(); ++i) {
    plan->algo = candidates[i].algo;
    plan->workspace = candidates[i].workspace;
    const Result<float> ms =
        timeOnStream(ctx.stream(), [&] { return launch(ctx, *plan, a, b, d, c); });
    times << (i ? ", " : "") << i << "="
          << (ms.isOk() ? std::to_string(ms.value()) + "ms" : "failed");
    if (ms.isOk()) {
      plan->raced.push_back(static_cast<int>(i));
      plan->racedMs.push_back(ms.value());
    }
    if (ms.isOk() && ms.value() < best) {
      best = ms.value();
      bestIndex = static_cast<int>(i);
    }
  }
  if (bestIndex < 0) return ctx.unsupported("no cuBLASLt algorithm ran: " + times.str());
  plan->index = bestIndex;
  plan->algo = candidates[bestIndex].algo;
  plan->workspace = candidates[bestIndex].workspace;
  plan->note = "; algorithm " + std::to_string(bestIndex) + " of " +
               std::to_string(candidates.size()) + " by time {" + times.str() + "}";
  return Status::ok();
}

}  // namespace

std::string gemmImplementation(const GemmProblem& p) {
  return "cublasLt heuristic algorithm (" + std::string(p.tf32 ? "tf32" : "fp32 accumulate") +
         (p.bias ? (p.relu       ? ", relu+bias epilogue"
                    : p.geluTanh ? ", gelu(tanh form)+bias epilogue"
                                 : ", bias epilogue")
                 : "") +
         ")";
}

Status runGemm(GpuKernelContext& ctx, const GemmProblem& problem, const void* a, const void* b,
               void* d, const void* bias, std::shared_ptr<void>* cache, bool* madePlan,
               const void* c) {
  if (problem.m == 0 || problem.n == 0 || problem.batch == 0) return Status::ok();
  auto alignment = [](const void* pointer) {
    int align = 256;
    while (align > 1 && reinterpret_cast<uintptr_t>(pointer) % align != 0) align /= 2;
    return align;
  };
  GemmProblem p = problem;
  p.alignA = alignment(a);
  p.alignB = alignment(b);
  p.alignD = std::min({alignment(d), bias ? alignment(bias) : 256, c ? alignment(c) : 256});
  p.separateC = c != nullptr && c != d;
  auto& state = cache ? *cache : ctx.layerState();
  auto plan = std::static_pointer_cast<GemmPlan>(state);
  if (p.k == 0) {  // empty reduction: D = beta * D (bias ignored only when absent)
    return ctx.unsupported("GEMM with an empty reduction dim");
  }
  const bool fresh = !plan || !(plan->problem == p);
  if (madePlan) *madePlan = fresh;
  if (fresh) {
    plan = std::make_shared<GemmPlan>();
    KILN_RETURN_IF_ERROR(buildPlan(ctx, p, plan.get()));
    state = plan;
  }
  if (p.bias) {
    KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &bias, sizeof(bias)));
  }
  if (!plan->candidates.empty()) KILN_RETURN_IF_ERROR(raceAlgorithms(ctx, plan.get(), a, b, d, c));
  if (fresh) ctx.setImplementation(gemmImplementation(p) + plan->note);
  return launch(ctx, *plan, a, b, d, c);
}

GemmAlgorithmRequest gemmAlgorithmRequest(const GemmProblem& p) {
  if (p.algorithm >= 0) return {p.algorithm + 1, false};  // the recorded one: no timing
  const double flops = 2.0 * double(p.m) * double(p.n) * double(p.k) * double(p.batch);
  if (p.raceAlgorithms && (p.beta == 0.f || p.separateC) && flops >= kGemmRaceMinFlops)
    return {kGemmRaceCandidates, true};
  return {1, false};
}

int gemmAlgorithmOfChoice(const std::string& choice, const std::string& prefix) {
  if (choice.size() <= prefix.size() || choice.compare(0, prefix.size(), prefix) != 0) return -1;
  int index = 0;
  for (size_t i = prefix.size(); i < choice.size(); ++i) {
    if (choice[i] < '0' || choice[i] > '9' || index > 1000) return -1;
    index = index * 10 + (choice[i] - '0');
  }
  return index;
}

int gemmAlgorithmIndex(const std::shared_ptr<void>& state) {
  const auto plan = std::static_pointer_cast<GemmPlan>(state);
  return plan ? plan->index : -1;
}

std::vector<std::pair<int, float>> gemmRacedAlgorithms(const std::shared_ptr<void>& state) {
  const auto plan = std::static_pointer_cast<GemmPlan>(state);
  std::vector<std::pair<int, float>> out;
  if (plan)
    for (size_t i = 0; i < plan->raced.size(); ++i)
      out.push_back({plan->raced[i], plan->racedMs[i]});
  return out;
}

std::string gemmAlgorithmNote(const std::shared_ptr<void>& state) {
  const auto plan = std::static_pointer_cast<GemmPlan>(state);
  return plan ? plan->note : "";
}

bool useTf32(const GpuKernelContext& ctx, DataType type) {
  return type == DataType::kFloat32 && ctx.options().allowTf32;
}

namespace {

bool allOnes(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d == 1; });
}

constexpr const char* kChoiceAlgorithm = "algorithm:";

// A MatMul or Gemm layer's GEMM: raced, or the plan's recorded algorithm
// ("algorithm:N", GpuKernelContext::plannedChoice), looked up at the layer's first run only;
// a later plan of the layer (new pointer alignments) keeps the algorithm the last one ran.
GemmProblem layerGemmProblem(GpuKernelContext& ctx) {
  GemmProblem p;
  p.raceAlgorithms = true;
  const std::shared_ptr<void>& state = ctx.layerState();
  p.algorithm = state ? gemmAlgorithmIndex(state)
                      : gemmAlgorithmOfChoice(ctx.plannedChoice(), kChoiceAlgorithm);
  return p;
}

// runGemm; when it made a new plan, its algorithm becomes the layer's choice for the plan,
// and a plan's choice taken back says so.
Status runLayerGemm(GpuKernelContext& ctx, const GemmProblem& p, const void* a, const void* b,
                    void* d, const void* bias) {
  const bool firstPlan = !ctx.layerState();  // p.algorithm >= 0 then is the plan's choice
  bool madePlan = false;
  KILN_RETURN_IF_ERROR(runGemm(ctx, p, a, b, d, bias, nullptr, &madePlan));
  if (!madePlan) return Status::ok();  // the same plan as the last run
  const int index = gemmAlgorithmIndex(ctx.layerState());
  const std::string choice = kChoiceAlgorithm + std::to_string(index);
  ctx.setChoice(choice);
  std::vector<TimedChoice> raced;  // every algorithm the race ran, for a builder to time
  for (const auto& [i, ms] : gemmRacedAlgorithms(ctx.layerState()))
    raced.push_back({kChoiceAlgorithm + std::to_string(i), ms});
  ctx.offerChoices(choicesWorthTiming(raced));
  if (firstPlan && p.algorithm >= 0 && index == p.algorithm)
    ctx.setImplementation(gemmImplementation(p) + " (the plan's choice: " + choice + ")");
  return Status::ok();
}

// Many small products (small_batched_matmul.h): Kiln's kernel instead of cuBLASLt's tiles.
Status runSmallBatched(GpuKernelContext& ctx, const GemmProblem& p, const void* a, const void* b,
                       void* d) {
  SmallBatchedMatMul product;
  product.type = p.type;
  product.a = a;
  product.b = b;
  product.d = d;
  product.batch = p.batch;
  product.strideA = p.strideA;
  product.strideB = p.strideB;
  product.m = static_cast<int>(p.m);
  product.n = static_cast<int>(p.n);
  product.k = static_cast<int>(p.k);
  ctx.setImplementation("kiln small batched MatMul (" + std::to_string(p.batch) + " products of " +
                        std::to_string(p.m) + "x" + std::to_string(p.k) + " by " +
                        std::to_string(p.k) + "x" + std::to_string(p.n) +
                        ", a thread an output, float sums)");
  return launchSmallBatchedMatMul(product, ctx.stream());
}

Status matMulKernel(GpuKernelContext& ctx) {
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  if (a.type != b.type) return ctx.error("operands have different types");
  if (a.rank() == 0 || b.rank() == 0) return ctx.error("MatMul operands must have rank >= 1");
  Shape as = a.shape, bs = b.shape;
  bool squeezeM = false, squeezeN = false;
  if (as.size() == 1) {
    as.insert(as.begin(), 1);
    squeezeM = true;
  }
  if (bs.size() == 1) {
    bs.push_back(1);
    squeezeN = true;
  }
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) {
    return ctx.error("inner dims differ: " + shapeToString(a.shape) + " x " +
                     shapeToString(b.shape));
  }
  Shape batchA(as.begin(), as.end() - 2), batchB(bs.begin(), bs.end() - 2);
  size_t rank = std::max(batchA.size(), batchB.size());
  batchA.insert(batchA.begin(), rank - batchA.size(), 1);
  batchB.insert(batchB.begin(), rank - batchB.size(), 1);
  Shape batch(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (batchA[i] != batchB[i] && batchA[i] != 1 && batchB[i] != 1) {
      return ctx.error("batch dims do not broadcast: " + shapeToString(a.shape) + " x " +
                       shapeToString(b.shape));
    }
    batch[i] = std::max(batchA[i], batchB[i]);
  }
  Shape outShape = batch;
  if (!squeezeM) outShape.push_back(m);
  if (!squeezeN) outShape.push_back(n);
  auto out = ctx.allocateOutput(0, a.type, outShape);
  if (!out.isOk()) return out.status();
  const int64_t batchCount = shapeNumel(batch);
  GemmProblem p = layerGemmProblem(ctx);
  p.type = a.type;
  p.k = k;
  p.n = n;
  p.tf32 = useTf32(ctx, a.type);
  if (allOnes(batchB)) {
    // Right operand shared by every batch: fold the left batch into M.
    p.m = m * (allOnes(batchA) ? 1 : batchCount);
    if (!allOnes(batchA) && batchA != batch) return ctx.unsupported("broadcast left batch");
    return runLayerGemm(ctx, p, a.data, b.data, out.value().data, nullptr);
  }
  p.m = m;
  p.batch = batchCount;
  p.strideD = m * n;
  if ((batchA == batch || allOnes(batchA)) && (batchB == batch || allOnes(batchB))) {
    p.strideA = allOnes(batchA) ? 0 : m * k;
    p.strideB = allOnes(batchB) ? 0 : k * n;
    if (smallBatchedMatMulApplies(a.type, batchCount, m, n, k))
      return runSmallBatched(ctx, p, a.data, b.data, out.value().data);
    return runLayerGemm(ctx, p, a.data, b.data, out.value().data, nullptr);
  }
  return ctx.unsupported("MatMul with partially broadcast batch dims " + shapeToString(a.shape) +
                         " x " + shapeToString(b.shape));
}

Status gemmKernel(GpuKernelContext& ctx) {
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2) return ctx.error("Gemm needs 2-D A and B");
  GemmProblem p = layerGemmProblem(ctx);
  p.type = a.type;
  p.transA = ctx.node().attrInt("transA", 0) != 0;
  p.transB = ctx.node().attrInt("transB", 0) != 0;
  p.m = p.transA ? a.shape[1] : a.shape[0];
  p.k = p.transA ? a.shape[0] : a.shape[1];
  const int64_t kB = p.transB ? b.shape[1] : b.shape[0];
  p.n = p.transB ? b.shape[0] : b.shape[1];
  if (kB != p.k)
    return ctx.error("inner dims differ: " + shapeToString(a.shape) + " x " +
                     shapeToString(b.shape));
  p.alpha = ctx.node().attrFloat("alpha", 1.f);
  float beta = ctx.node().attrFloat("beta", 1.f);
  p.tf32 = useTf32(ctx, a.type);
  auto out = ctx.allocateOutput(0, a.type, {p.m, p.n});
  if (!out.isOk()) return out.status();
  const void* bias = nullptr;
  if (ctx.hasInput(2) && beta != 0.f) {
    const DeviceTensor& c = ctx.input(2);
    if (c.type != a.type) return ctx.error("C has a different type");
    const Shape& cs = c.shape;
    bool row = (cs.size() == 1 && cs[0] == p.n) || (cs.size() == 2 && cs[0] == 1 && cs[1] == p.n);
    if (row && beta == 1.f && p.n > 1) {
      p.bias = true;
      bias = c.data;
    } else {
      KILN_RETURN_IF_ERROR(broadcastInto(c, out.value(), ctx.stream()));
      p.beta = beta;
    }
  }
  return runLayerGemm(ctx, p, a.data, b.data, out.value().data, bias);
}

}  // namespace

void registerMatMulGpuKernels(GpuKernelRegistry& registry) {
  registry.add("MatMul", 1, 1000, matMulKernel);
  registry.add("Gemm", 1, 1000, gemmKernel);
  registerFusedMatMulGpuKernel(registry);
}

LtMatmulDescriptors::~LtMatmulDescriptors() {
  if (op) cublasLtMatmulDescDestroy(op);
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (d) cublasLtMatrixLayoutDestroy(d);
}

Status describeInt8TnGemm(LtMatmulDescriptors* g, cudaDataType_t scaleType, cudaDataType_t dType,
                          int64_t rows, int64_t cols, int64_t depth) {
  KILN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32I, scaleType));
  const cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &transposed,
                                                   sizeof(transposed)));
  KILN_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof(plain)));
  KILN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->a, CUDA_R_8I, depth, cols, depth));
  KILN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->b, CUDA_R_8I, depth, rows, depth));
  KILN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->d, dType, cols, rows, cols));
  return Status::ok();
}

namespace {

// The heuristic's algorithms that run (at most `count`), with cuBLASLt's status in `status`.
Result<std::vector<LtAlgorithm>> heuristicAlgorithms(GpuKernelContext& ctx, cublasLtMatmulDesc_t op,
                                                     cublasLtMatrixLayout_t a,
                                                     cublasLtMatrixLayout_t b,
                                                     cublasLtMatrixLayout_t d,
                                                     const uint32_t* alignments, int count,
                                                     cublasStatus_t* status) {
  KILN_ASSIGN_OR_RETURN(cublasLtHandle_t handle, ctx.libraries().cublasLt());
  cublasLtMatmulPreference_t preference = nullptr;
  KILN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const uint64_t maxWorkspace =
      static_cast<uint64_t>(std::min<int64_t>(ctx.options().workspaceLimitBytes, 64LL << 20));
  *status = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace, sizeof(maxWorkspace));
  static const cublasLtMatmulPreferenceAttributes_t kAlignment[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; alignments && i < 4 && *status == CUBLAS_STATUS_SUCCESS; ++i)
    *status = cublasLtMatmulPreferenceSetAttribute(preference, kAlignment[i], &alignments[i],
                                                   sizeof(uint32_t));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(std::max(count, 1)));
  int found = 0;
  if (*status == CUBLAS_STATUS_SUCCESS)
    *status =
        cublasLtMatmulAlgoGetHeuristic(handle, op, a, b, d, d, preference,
                                       static_cast<int>(results.size()), results.data(), &found);
  cublasLtMatmulPreferenceDestroy(preference);
  std::vector<LtAlgorithm> out;
  for (int i = 0; *status == CUBLAS_STATUS_SUCCESS && i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    LtAlgorithm one;
    one.algo = results[i].algo;
    one.workspace = results[i].workspaceSize;
    one.found = true;
    out.push_back(one);
  }
  return out;
}

}  // namespace

Result<std::vector<LtAlgorithm>> ltAlgorithms(GpuKernelContext& ctx, cublasLtMatmulDesc_t op,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t d, const uint32_t* alignments,
                                              int count) {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  KILN_ASSIGN_OR_RETURN(std::vector<LtAlgorithm> found,
                        heuristicAlgorithms(ctx, op, a, b, d, alignments, count, &status));
  KILN_CUBLAS_CHECK(status);
  return found;
}

Result<LtAlgorithm> firstLtAlgorithm(GpuKernelContext& ctx, cublasLtMatmulDesc_t op,
                                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                     cublasLtMatrixLayout_t d, const uint32_t* alignments) {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  KILN_ASSIGN_OR_RETURN(std::vector<LtAlgorithm> found,
                        heuristicAlgorithms(ctx, op, a, b, d, alignments, 1, &status));
  LtAlgorithm out = found.empty() ? LtAlgorithm{} : found.front();
  out.status = status;
  return out;
}

}  // namespace kiln::cuda
