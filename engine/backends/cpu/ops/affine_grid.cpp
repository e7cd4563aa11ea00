// AffineGrid (opset 20): the sampling grid GridSample takes, from affine matrices theta
// ([N, 2, 3] for 2-D, [N, 3, 4] for 3-D) and the output size [N, C, H, W] or
// [N, C, D, H, W]. Each output point is theta applied to the normalized base grid point
// (x, y[, z], 1), x running along W; result [N, H, W, 2] or [N, D, H, W, 3].
#include <string>
#include <vector>

#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {
namespace {

// Normalized coordinates of `count` points in [-1, 1]: the corner pixels' centres at +-1
// with align_corners, else the pixel centres of an image spanning [-1, 1].
std::vector<double> baseCoordinates(int64_t count, bool alignCorners) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    if (alignCorners)
      v[i] =
          count == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(count - 1);
    else
      v[i] = -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(count);
  }
  return v;
}

Status affineGridKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& theta = ctx.input(0);
  const std::vector<int64_t> size = ctx.input(1).toInt64Vector();
  if (ctx.input(1).rank() != 1 || (size.size() != 4 && size.size() != 5)) {
    return ctx.error("size must be [N, C, H, W] or [N, C, D, H, W]");
  }
  const int spatial = static_cast<int>(size.size()) - 2;  // 2 or 3
  const Shape thetaShape = {size[0], spatial, spatial + 1};
  if (theta.shape() != thetaShape) {
    return ctx.error("theta shape " + shapeToString(theta.shape()) + " must be " +
                     shapeToString(thetaShape));
  }
  for (int64_t s : size) {
    if (s < 0) return ctx.error("size values must not be negative");
  }
  const bool align = ctx.node().attrInt("align_corners", 0) != 0;
  // Spatial extents outermost first: (D,) H, W; a 2-D grid has depth 1 and no z.
  const int64_t depth = spatial == 3 ? size[2] : 1;
  const int64_t height = size[size.size() - 2], width = size.back();
  const std::vector<double> zs = baseCoordinates(depth, align), ys = baseCoordinates(height, align),
                            xs = baseCoordinates(width, align);
  Shape outShape = {size[0]};
  for (size_t d = 2; d < size.size(); ++d) outShape.push_back(size[d]);
  outShape.push_back(spatial);
  Tensor& out = ctx.allocateOutput(0, theta.type(), outShape);
  return dispatchFloatTypes(theta.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* th = theta.data<T>();
    T* dst = out.data<T>();
    const int cols = spatial + 1;
    for (int64_t n = 0; n < size[0]; ++n) {
      const T* m = th + n * spatial * cols;
      for (int64_t z = 0; z < depth; ++z) {
        for (int64_t y = 0; y < height; ++y) {
          for (int64_t x = 0; x < width; ++x) {
            const double point[4] = {xs[x], ys[y], spatial == 3 ? zs[z] : 1.0, 1.0};
            for (int r = 0; r < spatial; ++r) {
              double acc = 0;
              for (int c = 0; c < cols; ++c) acc += static_cast<double>(m[r * cols + c]) * point[c];
              *dst++ = static_cast<T>(static_cast<ComputeType<T>>(acc));
            }
          }
        }
      }
    }
    return Status::ok();
  });
}

}  // namespace

void registerAffineGridKernels(KernelRegistry& registry) {
  registry.add("AffineGrid", 20, 1000, &affineGridKernel);
}

}  // namespace kiln::cpu
