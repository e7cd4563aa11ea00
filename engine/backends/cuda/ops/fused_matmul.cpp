// ai.kiln FusedMatMul on CUDA: act(A [.., M, K] x B [K, N] + bias [N]) (contract and
// reference: cpu/ops/fused_matmul.cpp). B is 2-D (the fusion pass only matches constant
// 2-D weights), so A's batch folds into M. The bias and ReLU ride cuBLASLt's epilogue,
// where they are exact; every other activation (cuBLASLt's GELU epilogue is the tanh
// form only, and an erf GELU is not that) runs as one vectorized Kiln pass over the
// output (applyConvEpilogue), which also adds the bias of a one-column output (cuBLASLt's
// bias epilogue wants N > 1).
//
// Tried and measured, not kept (H200, 2026-11-28, docs/benchmarks.md): running M in
// L2-sized chunks (GEMM then epilogue per chunk, so the pass would read what the GEMM
// just wrote from L2) was slower on every zoo shape, e.g. BERT-base's [16384, 3072] GELU
// projection 0.216 ms whole against 0.266 ms in 7 chunks, ConvNeXt-T's stage-1
// [401408, 384] 0.445 against 0.643 ms in 20: the extra launches and smaller GEMMs cost
// more than the DRAM traffic saved.
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/gemm.h"
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

// FusedMatMul's operands: A [.., M, K], B [K, N], bias [N], all of one type.
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
  return Status::ok();
}

Status fusedMatMulKernel(GpuKernelContext& ctx) {
  KILN_RETURN_IF_ERROR(checkFusedMatMulInputs(ctx));
  const DeviceTensor& a = ctx.input(0);
  const DeviceTensor& bias = ctx.input(2);
  ConvEpilogue epilogue;
  KILN_RETURN_IF_ERROR(parseMatMulEpilogue(ctx, &epilogue));
  GemmProblem p;
  p.type = a.type;
  p.k = a.shape.back();
  p.n = ctx.input(1).shape[1];
  p.m = a.numel() / p.k;
  p.tf32 = useTf32(ctx, a.type);
  p.bias = p.n > 1;
  p.relu = p.bias && epilogue.activation == EpilogueActivation::kRelu;
  Shape outShape = a.shape;
  outShape.back() = p.n;
  KILN_ASSIGN_OR_RETURN(DeviceTensor out, ctx.allocateOutput(0, a.type, outShape));
  const std::shared_ptr<void> plan = ctx.layerState();
  KILN_RETURN_IF_ERROR(
      runGemm(ctx, p, a.data, ctx.input(1).data, out.data, p.bias ? bias.data : nullptr));
  const bool pass = !p.bias || (epilogue.activation != EpilogueActivation::kNone && !p.relu);
  if (pass && ctx.layerState() != plan)  // a new GEMM plan: say what runs after it
    ctx.setImplementation(gemmImplementation(p) + " + kiln epilogue (" +
                          ctx.node().attrString("activation", "none") + ", " +
                          convEpilogueVariant(a.type, out.numel(), out.data, nullptr) + ")");
  if (!pass) return Status::ok();
  return applyConvEpilogue(out.data, a.type, p.bias ? nullptr : bias.data, nullptr, p.m, p.n, 1,
                           epilogue, ctx.stream());
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
