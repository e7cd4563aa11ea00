// ai.kiln FusedMatMul on CUDA: act(A [.., M, K] x B [K, N] + bias [N] [+ Z]) (contract and
// reference: cpu/ops/fused_matmul.cpp). A residual Z (the output's shape) is cuBLASLt's C
// with beta 1, read in the GEMM's epilogue instead of by an Add after it; cuDNN's graph
// candidate does not take one. B is 2-D (the fusion pass only matches constant
// 2-D weights), so A's batch folds into M. The bias, ReLU and the tanh-form GELU ride
// cuBLASLt's epilogue, where they are exact; every other activation runs as one vectorized
// Kiln pass over the output (applyConvEpilogue), which also adds the bias of a one-column
// output (cuBLASLt's bias epilogue wants N > 1). For such an activation on a
// float16/bfloat16 product the first run of a shape times the candidates and keeps the
// fastest; the implementation text names the winner and every time:
// - cuBLASLt + Kiln's pass (exact);
// - cuDNN's fused graph (matmul_epilogue_graph.h: the activation inside the product);
// - for the erf GELU (ConvNeXt, ViT, BERT): cuBLASLt's GELU epilogue, which computes the
//   tanh form. The two differ by at most 4.7e-4 (at |x| = 2.7, where the value is 2.69 and
//   a float16 step is 2e-3: under a quarter of one); on a 16-bit output that is within
//   its rounding. KILN_EXACT_GELU=1 leaves this candidate out (and node attribute `path`
//   pins one: auto, cublaslt, cublaslt_gelu_tanh, cudnn_graph).
//
// Tried and measured, not kept (H200, 2026-11-28, docs/benchmarks.md): running M in
// L2-sized chunks (GEMM then epilogue per chunk, so the pass would read what the GEMM
// just wrote from L2) was slower on every zoo shape, e.g. BERT-base's [16384, 3072] GELU
// projection 0.216 ms whole against 0.266 ms in 7 chunks, ConvNeXt-T's stage-1
// [401408, 384] 0.445 against 0.643 ms in 20: the extra launches and smaller GEMMs cost
// more than the DRAM traffic saved.
#include <cstdlib>
#include <sstream>
#include <string>

#include "backends/cuda/compiled_code_stores.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/choice_offers.h"
#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/gemm.h"
#include "backends/cuda/ops/matmul_epilogue_graph.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

// FusedMatMul's activation: FusedConv's (parseConvEpilogue) or a GELU form.
Status parseMatMulEpilogue(const GpuKernelContext& ctx, ConvEpilogue* out) {
  const std::string name = ctx.node().attrString("activation", "none");
  if (name != "gelu_erf" && name != "gelu_tanh") return parseConvEpilogue(ctx, out);
  out->activation =
      name == "gelu_erf" ? EpilogueActivation::kGeluErf : EpilogueActivation::kGeluTanh;
  return Status::ok();
}

// FusedMatMul's operands: A [.., M, K], B [K, N], bias [N] and the optional residual Z
// [.., M, N], all of one type.
Status checkFusedMatMulInputs(const GpuKernelContext& ctx) {
  if (ctx.inputCount() < 3 || !ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2))
    return ctx.error("FusedMatMul needs inputs A, B and bias");
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& b = ctx.input(1);
  const DeviceTensor& bias = ctx.input(2);
  if (a.type != b.type || bias.type != a.type) return ctx.error("A, B and bias must have one type");
  if (b.rank() != 2 || a.rank() < 1) return ctx.unsupported("FusedMatMul needs a 2-D B");
  if (b.shape[0] != a.shape.back() || bias.rank() != 1 || bias.shape[0] != b.shape[1])
    return ctx.error("shapes " + shapeToString(a.shape) + " x " + shapeToString(b.shape) + " + " +
                     shapeToString(bias.shape) + " do not fit");
  if (a.shape.back() == 0) return ctx.unsupported("FusedMatMul with an empty reduction dim");
  if (ctx.inputCount() > 3 && ctx.hasInput(3)) {
    const DeviceTensor& z = ctx.input(3);
    Shape out = a.shape;
    out.back() = b.shape[1];
    if (z.type != a.type) return ctx.error("the residual must have A's type");
    if (z.shape != out)
      return ctx.error("residual " + shapeToString(z.shape) + " must be the output's shape " +
                       shapeToString(out));
  }
  return Status::ok();
}

// The layer's choice for one problem: cuBLASLt (its plan in `gemm`) with the bias, ReLU
// or tanh-form GELU in its epilogue and any other activation as Kiln's pass, or cuDNN's
// graph with the whole epilogue inside the product (matmul_epilogue_graph.h).
struct FusedMatMulState {
  GemmProblem problem;
  EpilogueActivation activation = EpilogueActivation::kNone;
  std::shared_ptr<void> gemm;
  bool erfGeluAsTanh = false;        // cuBLASLt's GELU epilogue for an erf GELU
  std::shared_ptr<CudnnPlan> cudnn;  // null: cuBLASLt (+ Kiln's pass)
};

struct FusedMatMulRun {
  GemmProblem problem;
  ConvEpilogue epilogue;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bias = nullptr;
  const void* residual = nullptr;  // Z: cuBLASLt's C (problem.beta = 1)
  void* out = nullptr;
};

// The layer's choice as a plan records it (GpuKernelContext::setChoice): cuBLASLt (+ Kiln's
// pass), cuBLASLt's tanh-form GELU epilogue, or cuDNN's fused graph plan of that
// description ("cudnn_graph:cudnn engine 7 rtc"); a cuBLASLt choice ends in "#N", the
// heuristic's algorithm the race kept ("cublaslt#2").
constexpr const char* kChoiceCublasLt = "cublaslt";
constexpr const char* kChoiceGeluTanh = "cublaslt_gelu_tanh";
constexpr const char* kChoiceCudnnPrefix = "cudnn_graph:";

// Whether Kiln's pass runs after cuBLASLt: an activation its epilogue does not take, or
// the bias of a one-column product.
bool needsEpiloguePass(const FusedMatMulRun& r) {
  const GemmProblem& p = r.problem;
  return !p.bias || (r.epilogue.activation != EpilogueActivation::kNone && !p.relu && !p.geluTanh);
}

// Why cuBLASLt's tanh-form GELU epilogue is not a candidate for this erf GELU ("" when
// it is): a float16/bfloat16 product with a bias row, KILN_EXACT_GELU not "1".
std::string erfAsTanhWhyNot(const FusedMatMulRun& r) {
  const char* knob = std::getenv("KILN_EXACT_GELU");
  if (r.epilogue.activation != EpilogueActivation::kGeluErf) return "not an erf GELU";
  if (knob && std::string(knob) == "1") return "KILN_EXACT_GELU=1";
  if (r.problem.type != DataType::kFloat16 && r.problem.type != DataType::kBFloat16)
    return "not a 16-bit product";
  if (!r.problem.bias) return "no bias row (N = 1)";
  return "";
}

Status runCublasLt(GpuKernelContext& ctx, const FusedMatMulRun& r, FusedMatMulState* state) {
  const GemmProblem& p = r.problem;
  KILN_RETURN_IF_ERROR(runGemm(ctx, p, r.a, r.b, r.out, p.bias ? r.bias : nullptr, &state->gemm,
                               nullptr, r.residual));
  if (!needsEpiloguePass(r)) return Status::ok();
  return applyConvEpilogue(r.out, p.type, p.bias ? nullptr : r.bias, nullptr, p.m, p.n, 1,
                           r.epilogue, ctx.stream());
}

Status runCudnn(GpuKernelContext& ctx, const FusedMatMulRun& r, const CudnnPlan& plan) {
  KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, ctx.libraries().cudnn(ctx.stream()));
  KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, plan.workspace));
  return executeCudnnPlan(handle, plan, matMulEpilogueBindings(r.a, r.b, r.bias, r.out), workspace);
}

// Why cuDNN's fused graph is not a candidate ("" when it is): it is one when Kiln's pass
// would run after cuBLASLt, the product is float16/bfloat16 and KILN_CUDNN_RUNTIME_FUSION
// is not "0".
std::string cudnnWhyNot(const FusedMatMulRun& r) {
  const char* knob = std::getenv("KILN_CUDNN_RUNTIME_FUSION");
  if (knob && std::string(knob) == "0") return "KILN_CUDNN_RUNTIME_FUSION=0";
  if (!needsEpiloguePass(r) || !r.problem.bias) return "cuBLASLt's epilogue takes the activation";
  if (r.residual) return "the graph takes no residual input";
  return matMulEpilogueUnsupported(
      {r.problem.type, r.problem.m, r.problem.n, r.problem.k, r.epilogue.activation});
}

// Chooses for a new problem: cuBLASLt (+ pass) timed against cuBLASLt's tanh-form GELU
// epilogue (an erf GELU) and cuDNN's plans, where they are candidates; the implementation
// text names the winner and every time. The node attribute `path` ("auto", "cublaslt",
// "cublaslt_gelu_tanh", "cudnn_graph") restricts the candidates, for tests and tactic
// pinning.
Status choose(GpuKernelContext& ctx, const FusedMatMulRun& r, FusedMatMulState* state) {
  state->problem = r.problem;
  state->activation = r.epilogue.activation;
  const std::string activation = ctx.node().attrString("activation", "none");
  const std::string path = ctx.node().attrString("path", "auto");
  if (path != "auto" && path != "cublaslt" && path != "cublaslt_gelu_tanh" && path != "cudnn_graph")
    return ctx.error("unknown path '" + path +
                     "' (auto, cublaslt, cublaslt_gelu_tanh, cudnn_graph)");
  // cuBLASLt with its tanh-form GELU epilogue, for an erf GELU: its own GEMM plan.
  FusedMatMulRun tanhRun = r;
  tanhRun.problem.geluTanh = true;
  const std::string tanhWhyNot = erfAsTanhWhyNot(r);
  const bool tryTanh = tanhWhyNot.empty() && (path == "auto" || path == "cublaslt_gelu_tanh");
  if (path == "cublaslt_gelu_tanh" && !tryTanh)
    return ctx.unsupported("path cublaslt_gelu_tanh: " + tanhWhyNot);
  const std::string tanhText =
      gemmImplementation(tanhRun.problem) + " for this erf GELU (|erf - tanh form| <= 4.7e-4)";
  std::shared_ptr<void> tanhGemm;
  auto runTanh = [&] {
    return runGemm(ctx, tanhRun.problem, r.a, r.b, r.out, r.bias, &tanhGemm, nullptr, r.residual);
  };
  if (path == "cublaslt_gelu_tanh") {
    KILN_RETURN_IF_ERROR(runTanh());
    state->gemm = std::move(tanhGemm);
    state->erfGeluAsTanh = true;
    ctx.setImplementation(tanhText + " (path cublaslt_gelu_tanh)");
    return Status::ok();
  }
  std::string lt = gemmImplementation(r.problem);
  if (needsEpiloguePass(r))
    lt += " + kiln epilogue (" + activation + ", " +
          convEpilogueVariant(r.problem.type, r.problem.m * r.problem.n, r.out, nullptr) + ")";
  std::string why = path == "cublaslt" ? "not tried (path cublaslt)" : cudnnWhyNot(r);
  if (path == "cublaslt" && erfAsTanhWhyNot(r).empty())
    lt += "; cublasLt gelu epilogue (tanh form): not tried (path cublaslt)";
  // The plan's choice, taken back without timing where it still applies.
  std::string replayNote;
  auto withAlgorithm = [](const char* choice, const std::shared_ptr<void>& gemm) {
    return std::string(choice) + "#" + std::to_string(gemmAlgorithmIndex(gemm));
  };
  const std::string recorded = path == "auto" ? ctx.plannedChoice() : std::string();
  if (!recorded.empty()) {
    const size_t hash = recorded.find('#');
    const std::string planned = recorded.substr(0, hash);
    const int algorithm =
        hash == std::string::npos ? -1 : gemmAlgorithmOfChoice(recorded.substr(hash), "#");
    if (planned == kChoiceCublasLt) {
      FusedMatMulRun replay = r;
      replay.problem.algorithm = algorithm;
      KILN_RETURN_IF_ERROR(runCublasLt(ctx, replay, state));
      ctx.setImplementation(lt + gemmAlgorithmNote(state->gemm) +
                            " (the plan's choice: " + recorded + ")");
      ctx.setChoice(withAlgorithm(kChoiceCublasLt, state->gemm));
      return Status::ok();
    }
    if (planned == kChoiceGeluTanh && tryTanh) {
      tanhRun.problem.algorithm = algorithm;
      KILN_RETURN_IF_ERROR(runTanh());
      state->gemm = std::move(tanhGemm);
      state->erfGeluAsTanh = true;
      ctx.setImplementation(tanhText + gemmAlgorithmNote(state->gemm) +
                            " (the plan's choice: " + recorded + ")");
      ctx.setChoice(withAlgorithm(kChoiceGeluTanh, state->gemm));
      return Status::ok();
    }
  }
  // cuDNN's candidates: only once no cuBLASLt choice was taken back (a plan's runtime
  // builds none for a layer that runs cuBLASLt).
  std::vector<std::unique_ptr<CudnnPlan>> plans;
  if (why.empty()) {
    KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, ctx.libraries().cudnn(ctx.stream()));
    plans = matMulEpiloguePlans(
        cudnnPlanStoreOf(ctx), handle,
        {r.problem.type, r.problem.m, r.problem.n, r.problem.k, r.epilogue.activation}, 2,
        ctx.options().workspaceLimitBytes, ctx.node().displayName(), &why);
  }
  if (path == "cudnn_graph" && plans.empty())
    return ctx.unsupported("cuDNN has no fused graph engine: " + why);
  if (!recorded.empty()) {
    for (auto& plan : plans) {
      if (recorded != std::string(kChoiceCudnnPrefix) + plan->description) continue;
      state->cudnn = std::shared_ptr<CudnnPlan>(std::move(plan));
      ctx.setImplementation("cudnn fused graph " + state->cudnn->description.substr(6) +
                            " (matmul + bias + " + activation + "; the plan's choice: " + recorded +
                            ")");
      ctx.setChoice(recorded);
      return Status::ok();
    }
    replayNote = "; the plan's choice '" + recorded + "' does not apply here: timed again";
  }
  // Every complete choice the race below runs, for a builder to time one by one.
  // `ms`: the time of the whole path with the race's winner (a raced algorithm's own time
  // is its GEMM's alone, which the pass after it would add to).
  auto algorithmChoices = [](const char* choice, const std::shared_ptr<void>& gemm, float ms) {
    std::vector<TimedChoice> out;
    for (const auto& [i, gemmMs] : gemmRacedAlgorithms(gemm))
      out.push_back({choice + ("#" + std::to_string(i)), gemmMs});
    if (out.empty() && gemm)
      out.push_back({choice + ("#" + std::to_string(gemmAlgorithmIndex(gemm))), ms});
    return out;
  };
  if (plans.empty() && !tryTanh) {
    KILN_RETURN_IF_ERROR(runCublasLt(ctx, r, state));  // builds the cuBLASLt plan
    if (path == "auto")
      ctx.offerChoices(choicesWorthTiming(algorithmChoices(kChoiceCublasLt, state->gemm, 0)));
    // Why cuDNN's graph was not tried, where it could have taken a pass away.
    const bool relevant = path == "auto" && needsEpiloguePass(r) && r.problem.bias;
    ctx.setImplementation(lt + gemmAlgorithmNote(state->gemm) +
                          (relevant ? "; cudnn fused graph: " + why : "") + replayNote);
    ctx.setChoice(withAlgorithm(kChoiceCublasLt, state->gemm));
    return Status::ok();
  }
  float bestMs = 1e30f;
  std::ostringstream timings;
  if (path == "auto") {
    KILN_ASSIGN_OR_RETURN(bestMs,
                          timeOnStream(ctx.stream(), [&] { return runCublasLt(ctx, r, state); }));
    timings << "cublasLt" << (needsEpiloguePass(r) ? " + epilogue" : "") << "=" << bestMs << "ms";
  }
  std::vector<TimedChoice> offers;
  if (path == "auto") offers = algorithmChoices(kChoiceCublasLt, state->gemm, bestMs);
  bool tanhWins = false;
  if (tryTanh) {  // cuBLASLt may have no algorithm with this epilogue: then not a candidate
    const Result<float> ms = timeOnStream(ctx.stream(), runTanh);
    timings << ", cublasLt gelu epilogue (tanh form)";
    if (!ms.isOk()) {
      timings << " failed";
    } else {
      if (path == "auto")
        for (TimedChoice& choice : algorithmChoices(kChoiceGeluTanh, tanhGemm, ms.value()))
          offers.push_back(std::move(choice));
      timings << "=" << ms.value() << "ms";
      if (ms.value() < bestMs) {
        bestMs = ms.value();
        tanhWins = true;
      }
    }
  }
  for (auto& plan : plans) {
    Result<float> ms = timeOnStream(ctx.stream(), [&] { return runCudnn(ctx, r, *plan); });
    if (!ms.isOk()) {  // fails on these shapes: not a candidate
      timings << (timings.tellp() > 0 ? ", " : "") << plan->description.substr(6) << " failed";
      continue;
    }
    timings << (timings.tellp() > 0 ? ", " : "") << "fused " << plan->description.substr(6) << "="
            << ms.value() << "ms";
    if (path == "auto") offers.push_back({kChoiceCudnnPrefix + plan->description, ms.value()});
    if (ms.value() < bestMs) {
      bestMs = ms.value();
      state->cudnn = std::shared_ptr<CudnnPlan>(std::move(plan));
      tanhWins = false;
    }
  }
  if (path == "cudnn_graph" && !state->cudnn)
    return ctx.unsupported("no cuDNN fused graph plan ran: " + timings.str());
  ctx.offerChoices(choicesWorthTiming(offers));
  if (tanhWins) {
    state->gemm = std::move(tanhGemm);
    state->erfGeluAsTanh = true;
  }
  ctx.setChoice(state->cudnn
                    ? kChoiceCudnnPrefix + state->cudnn->description
                    : withAlgorithm(tanhWins ? kChoiceGeluTanh : kChoiceCublasLt, state->gemm));
  const std::string winner = state->cudnn
                                 ? "cudnn fused graph " + state->cudnn->description.substr(6) +
                                       " (matmul + bias + " + activation + ")"
                                 : (tanhWins ? tanhText : lt) + gemmAlgorithmNote(state->gemm);
  ctx.setImplementation(winner + "; timed {" + timings.str() + "}" + replayNote);
  return Status::ok();
}

Status fusedMatMulKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(checkFusedMatMulInputs(ctx));
  const DeviceTensor& a = ctx.input(0);
  FusedMatMulRun r;
  KILN_RETURN_IF_ERROR(parseMatMulEpilogue(ctx, &r.epilogue));
  GemmProblem& p = r.problem;
  p.type = a.type;
  p.k = a.shape.back();
  p.n = ctx.input(1).shape[1];
  p.m = a.numel() / p.k;
  p.tf32 = useTf32(ctx, a.type);
  p.raceAlgorithms = true;
  p.bias = p.n > 1;
  p.relu = p.bias && r.epilogue.activation == EpilogueActivation::kRelu;
  p.geluTanh = p.bias && r.epilogue.activation == EpilogueActivation::kGeluTanh;
  Shape outShape = a.shape;
  outShape.back() = p.n;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, a.type, outShape));
  r.a = a.data;
  r.b = ctx.input(1).data;
  r.bias = ctx.input(2).data;
  r.out = out.data;
  if (ctx.inputCount() > 3 && ctx.hasInput(3)) {
    r.residual = ctx.input(3).data;
    p.beta = 1.f;
  }
  auto& slot = ctx.layerState();
  auto state = std::static_pointer_cast<FusedMatMulState>(slot);
  if (!state || !(state->problem == p) || state->activation != r.epilogue.activation) {
    state = std::make_shared<FusedMatMulState>();
    KILN_RETURN_IF_ERROR(choose(ctx, r, state.get()));
    slot = state;
  }
  if (state->cudnn) return runCudnn(ctx, r, *state->cudnn);
  r.problem.geluTanh = r.problem.geluTanh || state->erfGeluAsTanh;
  return runCublasLt(ctx, r, state.get());
}

}  // namespace

void registerFusedMatMulGpuKernel(GpuKernelRegistry& registry) {
  GpuKernelEntry fused;
  fused.domain = kKilnDomain;
  fused.opType = "FusedMatMul";
  fused.fn = fusedMatMulKernel;
  registry.add(fused);
}

}  // namespace kiln::cuda
