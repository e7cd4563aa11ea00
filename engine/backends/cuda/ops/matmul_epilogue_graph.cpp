#include "backends/cuda/ops/matmul_epilogue_graph.h"

#include "backends/cuda/ops/cudnn_graph_ops.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"

namespace kiln::cuda {
namespace {

constexpr int64_t kUidA = 1, kUidB = 2, kUidD = 3, kUidBias = 4, kUidProduct = 10, kUidBiased = 11;

// A packed row-major [1, rows, cols] tensor (cuDNN's matmul wants a batch dim).
Status makeMatrix(CudnnDescriptor* desc, cudnnDataType_t type, int64_t rows, int64_t cols,
                  int64_t uid, bool isVirtual) {
  CudnnTensorSpec spec{type, {1, rows, cols}, {rows * cols, cols, 1}, uid, isVirtual};
  return makeCudnnStridedTensor(desc, spec);
}

Status buildGraph(cudnnHandle_t handle, const MatMulEpilogueProblem& p, CudnnDescriptor* graph) {
  const cudnnDataType_t io = cudnnTypeOf(p.type);
  cudnnPointwiseMode_t actMode;
  if (!cudnnActivationMode(p.activation, &actMode))
    return unsupported("the activation has no cuDNN pointwise mode");
  CudnnDescriptor a, b, bias, d, product, biased;
  KILN_RETURN_IF_ERROR(makeMatrix(&a, io, p.m, p.k, kUidA, false));
  KILN_RETURN_IF_ERROR(makeMatrix(&b, io, p.k, p.n, kUidB, false));
  KILN_RETURN_IF_ERROR(makeMatrix(&bias, io, 1, p.n, kUidBias, false));
  KILN_RETURN_IF_ERROR(makeMatrix(&d, io, p.m, p.n, kUidD, false));
  KILN_RETURN_IF_ERROR(makeMatrix(&product, CUDNN_DATA_FLOAT, p.m, p.n, kUidProduct, true));
  KILN_RETURN_IF_ERROR(makeMatrix(&biased, CUDNN_DATA_FLOAT, p.m, p.n, kUidBiased, true));
  CudnnDescriptor ops[3];
  KILN_RETURN_IF_ERROR(makeMatmulOp(a.get(), b.get(), product.get(), &ops[0]));
  KILN_RETURN_IF_ERROR(
      makePointwiseOp(CUDNN_POINTWISE_ADD, product.get(), bias.get(), biased.get(), &ops[1]));
  KILN_RETURN_IF_ERROR(makePointwiseOp(actMode, biased.get(), nullptr, d.get(), &ops[2]));
  return makeOperationGraph(handle, {ops[0].get(), ops[1].get(), ops[2].get()}, graph);
}

}  // namespace

std::string matMulEpilogueGraphText(const MatMulEpilogueProblem& p) {
  return "matmul epilogue graph " + std::string(dataTypeName(p.type)) + "; m " +
         std::to_string(p.m) + "; n " + std::to_string(p.n) + "; k " + std::to_string(p.k) +
         "; act " + std::to_string(static_cast<int>(p.activation));
}

std::string matMulEpilogueUnsupported(const MatMulEpilogueProblem& p) {
  if (p.type != DataType::kFloat16 && p.type != DataType::kBFloat16)
    return std::string("a ") + dataTypeName(p.type) + " product (float16 and bfloat16 only)";
  cudnnPointwiseMode_t mode;
  if (!cudnnActivationMode(p.activation, &mode)) return "an activation without a cuDNN mode";
  if (p.m <= 0 || p.n <= 1 || p.k <= 0) return "an empty or one-column product";
  return "";
}

std::vector<std::unique_ptr<CudnnPlan>> matMulEpiloguePlans(
    CudnnPlanStore& store, cudnnHandle_t handle, const MatMulEpilogueProblem& p, int wanted,
    int64_t workspaceLimit, const std::string& layer, std::string* why) {
  std::vector<std::unique_ptr<CudnnPlan>> plans;
  if (std::string no = matMulEpilogueUnsupported(p); !no.empty()) {
    *why = no;
    return plans;
  }
  CudnnDescriptor graph;
  if (Status built = buildGraph(handle, p, &graph); !built.isOk()) {
    *why = built.message();
    return plans;
  }
  // A runtime-compiled plan this process or the plan file already has for the same graph
  // is restored from its record (serialized: no compile), the heuristics not asked.
  Result<std::string> key = cudnnPlanKey(matMulEpilogueGraphText(p));
  CudnnPlanRecord record;
  if (key.isOk() && findCudnnPlanRecord(store, key.value(), &record)) {
    Result<std::unique_ptr<CudnnPlan>> plan = planFromRecord(handle, graph.get(), record);
    if (plan.isOk()) {
      rememberCudnnPlanRecord(store, key.value(), record, layer);
      plans.push_back(std::move(plan.value()));
      return plans;
    }
  }
  PlanFilter filter;
  filter.wanted = wanted;
  filter.workspaceLimit = workspaceLimit;
  filter.runtimeCompilation = true;
  filter.runtimeCompiledLimit = 1;
  filter.fallbackList = false;
  std::vector<std::string> rejected;
  Status found = heuristicPlans(handle, graph.get(), filter, &plans, &rejected);
  if (!found.isOk())
    *why = found.message();
  else if (plans.empty())
    *why = rejected.empty() ? "no engine for the graph" : rejected.front();
  for (const auto& plan : plans) {
    if (!key.isOk() || !plan->choice.runtimeCompiled) continue;
    rememberCudnnPlan(store, key.value(), *plan, layer);
    break;  // at most one runtime-compiled candidate (the filter's limit)
  }
  return plans;
}

CudnnBindings matMulEpilogueBindings(const void* a, const void* b, const void* bias, void* d) {
  return {{kUidA, const_cast<void*>(a)},
          {kUidB, const_cast<void*>(b)},
          {kUidBias, const_cast<void*>(bias)},
          {kUidD, d}};
}

}  // namespace kiln::cuda
