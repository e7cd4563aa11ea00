#include "backends/cpu/ops/spatial.h"

#include <algorithm>
#include <string>

#include "kiln/tensor_size.h"

namespace kiln::cpu {

Status readAutoPad(const KernelContext& ctx, AutoPad* out) {
  auto pad = ops::autoPadOf(ctx.node());
  if (!pad.isOk()) return ctx.error(pad.status().message());
  *out = *pad;
  return Status::ok();
}

Status readSpatialAttributes(const KernelContext& ctx, const Shape& inputShape,
                             const std::vector<int64_t>& kernelFallback,
                             SpatialGeometry* geometry) {
  Status s = ops::readSpatialAttributes(ctx.node(), inputShape, kernelFallback, geometry);
  return s.isOk() ? s : ctx.error(s.message());
}

Status computeForwardGeometry(const KernelContext& ctx, bool ceilMode, SpatialGeometry* g) {
  Status s = ops::computeForwardGeometry(ctx.node(), ceilMode, g);
  return s.isOk() ? s : ctx.error(s.message());
}

Shape spatialOutputShape(int64_t batch, int64_t channels, const SpatialGeometry& geometry) {
  Shape shape = {batch, channels};
  shape.insert(shape.end(), geometry.output.begin(), geometry.output.end());
  return shape;
}

}  // namespace kiln::cpu
