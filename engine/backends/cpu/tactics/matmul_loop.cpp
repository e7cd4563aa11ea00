// MatMul and Gemm on Kiln's loop GEMM: the reference's input checks, MatMul's
// batch plan and Gemm's C broadcast (ops/matmul_plan.h), with loopGemm where
// the reference calls BLAS. Float32 outputs are computed in place.
#include "backends/cpu/ops/matmul_plan.h"
#include "backends/cpu/tactics/alternative_kernels.h"
#include "backends/cpu/tactics/loop_gemm.h"
#include "backends/cpu/tactics/tactic_common.h"

namespace kiln::cpu {

Status matmulLoopKernel(KernelContext& ctx) {
  MatMulPlan plan;
  KILN_RETURN_IF_ERROR(prepareMatMulNode(ctx, &plan));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  return dispatchTacticTypes(ctx, a.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& out = ctx.allocateOutput(0, a.type(), plan.outShape);
    if (out.numel() == 0) return Status::ok();
    ComputeView<float> av(a.data<T>(), a.numel());
    ComputeView<float> bv(b.data<T>(), b.numel());
    FloatOutput<T> y(out);
    runMatMulPlanWith(
        plan, av.data(), bv.data(), y.data(),
        [](int64_t m, int64_t n, int64_t k, const float* am, const float* bm, float* ym) {
          loopGemm(false, false, m, n, k, 1.0f, am, k, bm, n, 0.0f, ym, n);
        });
    y.finish();
    return Status::ok();
  });
}

Status gemmLoopKernel(KernelContext& ctx) {
  GemmShape s;
  KILN_RETURN_IF_ERROR(prepareGemmNode(ctx, &s));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor* c = ctx.inputOrNull(2);
  const float alpha = ctx.node().attrFloat("alpha", 1.0f);
  const float betaAttr = ctx.node().attrFloat("beta", 1.0f);
  return dispatchTacticTypes(ctx, a.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& out = ctx.allocateOutput(0, a.type(), {s.m, s.n});
    ComputeView<float> av(a.data<T>(), a.numel());
    ComputeView<float> bv(b.data<T>(), b.numel());
    FloatOutput<T> y(out);
    // As the reference: C only takes part when beta is non-zero (so a NaN in
    // an ignored C does not leak), and the output is otherwise only written.
    float beta = 0.0f;
    if (c && betaAttr != 0.0f) {
      broadcastGemmC<float, T>(*c, s.m, s.n, y.data());
      beta = betaAttr;
    }
    loopGemm(s.transA, s.transB, s.m, s.n, s.k, alpha, av.data(), s.transA ? s.m : s.k, bv.data(),
             s.transB ? s.k : s.n, beta, y.data(), s.n);
    y.finish();
    return Status::ok();
  });
}

}  // namespace kiln::cpu
