// ai.kiln FusedConvMaxPool on the CPU (contract: ir/conv_max_pool.h):
//   Y = quant(MaxPool(act(Conv(X, W) + B)))
// computed as the three ops it replaced compute it, with their own code: the FusedConv
// kernel (its result rounded to X's type, as that layer's output would be), MaxPool's
// kernel on that, then with y_scale the INT8 layers' requantization (round half to
// even, saturate: QuantizeLinear's arithmetic). A channels-last node (only Y NHWC) is
// the executor's business: it permutes Y after this kernel (ir/channels_last.h).
#include <string>

#include "backends/cpu/ops/conv.h"
#include "backends/cpu/ops/int8_common.h"
#include "backends/cpu/ops/pool.h"
#include "ir/conv_max_pool.h"
#include "kiln/passes.h"

namespace kiln::cpu {
namespace {

bool isConvPoolFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// What the halves do not check themselves: X and W 4-D float, one group, and the
// quantization inputs.
Status checkConvMaxPool(const KernelContext& ctx, bool* quantized, QuantParams* y) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& x = ctx.input(kConvPoolX);
  if (!isConvPoolFloat(x.type()))
    return ctx.error(std::string("input 0 (X) must be float32, float16 or bfloat16, got ") +
                     dataTypeName(x.type()));
  if (x.rank() != 4 || ctx.input(kConvPoolW).rank() != 4)
    return ctx.error("inputs 0 (X) and 1 (W) must be 4-D, got " + shapeToString(x.shape()) +
                     " and " + shapeToString(ctx.input(kConvPoolW).shape()));
  if (ctx.node().attrInt("group", 1) != 1) return ctx.error("only group 1 is supported");
  *quantized = ctx.hasInput(kConvPoolYScale);
  if (*quantized) return readQuantParams(ctx, kConvPoolYScale, kConvPoolYZeroPoint, y);
  if (ctx.hasInput(kConvPoolYZeroPoint))
    return ctx.error("input 4 (y_zero_point) needs input 3 (y_scale)");
  return Status::ok();
}

// Writes round(v / scale) + zero point, saturated, for every element of `pooled`.
template <class Q>
void requantize(const Tensor& pooled, const QuantParams& params, Q* out) {
  const Tensor values = castTensor(pooled, DataType::kFloat32);  // exact from 16-bit floats
  const float* v = values.data<float>();
  for (int64_t i = 0; i < values.numel(); ++i) out[i] = static_cast<Q>(params.quantize(v[i]));
}

Status convMaxPoolKernel(KernelContext& ctx) {
  bool quantized = false;
  QuantParams yParams;
  KILN_RETURN_IF_ERROR(checkConvMaxPool(ctx, &quantized, &yParams));
  const SubgraphRunner none;
  const Node conv = convPartOf(ctx.node());
  KernelContext convCtx(
      conv, {&ctx.input(kConvPoolX), &ctx.input(kConvPoolW), ctx.inputOrNull(kConvPoolBias)}, none);
  KILN_RETURN_IF_ERROR(fusedConvKernel(convCtx));
  const Node pool = poolPartOf(ctx.node());
  KernelContext poolCtx(pool, {&convCtx.outputs()[0]}, none);
  KILN_RETURN_IF_ERROR(maxPoolKernel(poolCtx));
  Tensor& pooled = poolCtx.outputs()[0];
  if (!quantized) {
    ctx.setOutput(0, std::move(pooled));
    return Status::ok();
  }
  Tensor& y = ctx.allocateOutput(0, yParams.type, pooled.shape());
  if (yParams.type == DataType::kUInt8)
    requantize(pooled, yParams, y.data<uint8_t>());
  else
    requantize(pooled, yParams, y.data<int8_t>());
  return Status::ok();
}

}  // namespace

void registerConvMaxPoolKernel(KernelRegistry& registry) {
  registry.add(kFusedConvMaxPoolOp, 1, 1000, &convMaxPoolKernel, kKilnDomain);
}

}  // namespace kiln::cpu
