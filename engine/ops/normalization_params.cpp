// Normalization parameters shared by the backends (contract: normalization_params.h).
#include "ops/normalization_params.h"

namespace kiln::ops {

Result<MvnParams> mvnParams(const Node& node, int opset, int rank) {
  MvnParams p;
  std::vector<int64_t> axes;
  if (opset >= 9) {
    axes = node.attrInts("axes", {0, 2, 3});
  } else {
    // Opset 1: statistics per (n, c), or per n with across_channels.
    p.normalizeVariance = node.attrInt("normalize_variance", 1) != 0;
    const bool acrossChannels = node.attrInt("across_channels", 0) != 0;
    for (int d = acrossChannels ? 1 : 2; d < rank; ++d) axes.push_back(d);
  }
  p.reduced.assign(rank, false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return invalidArgument("axis " + std::to_string(axis) +
                             " in 'axes' is out of range for rank " + std::to_string(rank));
    p.reduced[axis < 0 ? axis + rank : axis] = true;
  }
  return p;
}

Result<LayerNormGeometry> layerNormGeometry(const Node& node, const Shape& x) {
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t axisAttr = node.attrInt("axis", -1);
  if (axisAttr < -rank || axisAttr >= rank)
    return invalidArgument("attribute 'axis' " + std::to_string(axisAttr) +
                           " is out of range for rank " + std::to_string(rank));
  LayerNormGeometry g;
  g.axis = axisAttr < 0 ? axisAttr + rank : axisAttr;
  g.normShape.assign(x.begin() + g.axis, x.end());
  g.statShape.assign(x.begin(), x.begin() + g.axis);
  g.statShape.resize(rank, 1);
  g.cols = shapeNumel(g.normShape);
  g.rows = g.cols == 0 ? shapeNumel(g.statShape) : shapeNumel(x) / g.cols;
  return g;
}

Result<Shape> paramBroadcastShape(const char* name, const Shape& shape, const Shape& target,
                                  const std::string& targetName) {
  Shape s = shape;
  while (!s.empty() && s.front() == 1 && s.size() > target.size()) s.erase(s.begin());
  bool ok = s.size() <= target.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    const int64_t want = target[target.size() - s.size() + i];
    ok = s[i] == want || s[i] == 1;
  }
  if (!ok)
    return invalidArgument(std::string("input '") + name + "' of shape " + shapeToString(shape) +
                           " does not broadcast to the " + targetName + " " +
                           shapeToString(target));
  return s;
}

Result<GroupNormParams> groupNormParams(const Node& node, int opset, int64_t channels,
                                        int64_t scaleCount, int64_t biasCount) {
  GroupNormParams p;
  p.groups = node.attrInt("num_groups", 0);
  if (p.groups <= 0 || channels % p.groups != 0)
    return invalidArgument("attribute 'num_groups' (" + std::to_string(p.groups) +
                           ") must be positive and divide the channel count " +
                           std::to_string(channels));
  if (scaleCount != biasCount) return invalidArgument("inputs 'scale' and 'bias' differ in size");
  // Opset 18 has one scale/bias per group, opset 21 one per channel. Exporters targeting
  // 18 often emit per-channel parameters anyway; that size is unambiguous when groups !=
  // channels, so both are accepted before 21.
  if (opset < 21 && scaleCount == p.groups && scaleCount != channels) {
    p.perGroupParams = true;
  } else if (scaleCount != channels) {
    return invalidArgument("input 'scale' has " + std::to_string(scaleCount) +
                           " elements, expected " +
                           std::to_string(opset < 21 ? p.groups : channels));
  }
  return p;
}

}  // namespace kiln::ops
