// The channels-last region's followers (the contract: channels_last_followers.h; the pass:
// channels_last_layout.cpp).
#include "passes/channels_last_followers.h"

#include <algorithm>

#include "ir/channels_last.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes::channels_last {
namespace {

bool isPlainReshape(const Node& node) {
  return isDefaultDomain(node) && node.opType == "Reshape" && node.inputs.size() == 2 &&
         node.outputs.size() == 1 && node.attrInt("allowzero", 0) == 0;
}

Tensor permutedVector(const Tensor& t, const int (&perm)[4]) {
  Tensor out(t.type(), {4});
  const size_t size = dataTypeSize(t.type());
  const auto* src = static_cast<const unsigned char*>(t.rawData());
  auto* dst = static_cast<unsigned char*>(out.rawData());
  for (int j = 0; j < 4; ++j) std::copy_n(src + perm[j] * size, size, dst + j * size);
  return out;
}

// The NHWC axis of NCHW axis `a` (negative: from the end), or -1 for no axis of 4.
int64_t toChannelsLastAxis(int64_t a) {
  if (a < 0) a += 4;
  for (int j = 0; j < 4; ++j)
    if (kToChannelsLast[j] == a) return j;
  return -1;
}

// `axes` (NCHW, negative from the end) as NHWC axes, appended to `out`; false for one out of
// range.
bool toChannelsLastAxes(const std::vector<int64_t>& axes, std::vector<int64_t>* out) {
  for (int64_t a : axes) {
    const int64_t j = toChannelsLastAxis(a);
    if (j < 0) return false;
    out->push_back(j);
  }
  return true;
}

// The shape of input 0 when it is a 4-D region value (its producer chosen), else null.
const SymbolicShape* regionInput(const Node& node, const GraphIndex& index,
                                 const std::vector<bool>& chosen, const InferredShapes& shapes) {
  if (node.inputs.empty() || node.inputs[0].empty()) return nullptr;
  const int producer = index.producer(node.inputs[0]);
  const SymbolicShape* in = shapeOf(shapes, node.inputs[0]);
  return producer >= 0 && chosen[producer] && in && in->size() == 4 ? in : nullptr;
}

// A follower that reads its input 0 on NHWC storage and nothing else in the region's layout.
bool followsThroughInput0(FollowPlan* plan) {
  *plan = {};
  plan->regionSlots.push_back(0);
  return true;
}

}  // namespace

bool isFloat(const Node& node, const InferredShapes& shapes) {
  return rewrite::isStorageFloat(typeOf(shapes, node.inputs[0]));
}

bool followsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                   const InferredShapes& shapes, FollowPlan* plan) {
  if (!rewrite::isPositionwise(node) || node.outputs.size() != 1 || node.outputs[0].empty() ||
      node.hasSubgraphs())
    return false;
  const SymbolicShape* out = shapeOf(shapes, node.outputs[0]);
  if (!out || out->size() != 4) return false;
  *plan = {};
  for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
    const std::string& value = node.inputs[slot];
    if (value.empty()) continue;
    const SymbolicShape* s = shapeOf(shapes, value);
    if (!s || s->size() > 4) return false;
    const int producer = index.producer(value);
    if (producer >= 0 && chosen[producer] && s->size() == 4) {
      plan->regionSlots.push_back(slot);
      continue;
    }
    // Right-aligned to [N, C, H, W]: H and W must be 1 (a broadcast over the plane).
    for (size_t d = 0; d < s->size(); ++d) {
      const size_t at = d + 4 - s->size();
      if (at >= 2 && !((*s)[d].isConst() && (*s)[d].constValue() == 1)) return false;
      if (at == 1 && !(*s)[d].isConst()) return false;  // C moves: it must be a number
    }
    plan->broadcastSlots.push_back(slot);
  }
  return !plan->regionSlots.empty();
}

bool isChannelsFirstView(const std::string& value, const Graph& g, const GraphIndex& index,
                         const InferredShapes& shapes) {
  return !rewrite::channelsLastSourceOf(g, index, shapes, value).empty();
}

bool concatFollowsRegion(const Node& node, const Graph& g, const GraphIndex& index,
                         const std::vector<bool>& chosen, const InferredShapes& shapes,
                         FollowPlan* plan, int64_t* axis) {
  if (!isDefaultDomain(node) || node.opType != "Concat" || node.outputs.size() != 1 ||
      node.outputs[0].empty() || node.inputs.empty() || !node.hasAttr("axis"))
    return false;
  const SymbolicShape* out = shapeOf(shapes, node.outputs[0]);
  if (!out || out->size() != 4) return false;
  *plan = {};
  bool fromRegion = false;
  for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
    const std::string& value = node.inputs[slot];
    const int producer = value.empty() ? -1 : index.producer(value);
    const SymbolicShape* s = shapeOf(shapes, value);
    if (producer < 0 || !s || s->size() != 4) return false;
    if (!chosen[producer] && !isChannelsFirstView(value, g, index, shapes)) return false;
    fromRegion = fromRegion || chosen[producer];
    plan->regionSlots.push_back(slot);
  }
  if (!fromRegion) return false;
  *axis = toChannelsLastAxis(node.attrInt("axis", 1));
  return *axis >= 0;
}

bool splitFollowsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                        const InferredShapes& shapes, FollowPlan* plan, int64_t* axis) {
  if (!isDefaultDomain(node) || node.opType != "Split" || node.outputs.empty() ||
      !regionInput(node, index, chosen, shapes))
    return false;
  *axis = toChannelsLastAxis(node.attrInt("axis", 0));
  // The sizes (slot 1) count along the same axis: unchanged.
  return *axis >= 0 && followsThroughInput0(plan);
}

bool padFollowsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                      const InferredShapes& shapes, FollowPlan* plan, PadNhwc* nhwc) {
  if (!isDefaultDomain(node) || node.opType != "Pad" || node.outputs.size() != 1 ||
      node.outputs[0].empty() || !regionInput(node, index, chosen, shapes))
    return false;
  *nhwc = {};
  std::vector<int64_t> given;
  if (node.opset < 11) {
    given = node.attrInts("pads");
  } else {
    const Tensor* p = node.hasInput(1) ? index.constant(node.inputs[1]) : nullptr;
    if (!p) return false;
    for (int64_t k = 0; k < p->numel(); ++k) given.push_back(p->valueAsInt64(k));
    if (node.hasInput(3)) {  // the pads count along these axes: permute the axes
      const Tensor* a = index.constant(node.inputs[3]);
      if (!a) return false;
      if (a->numel() == 0 || static_cast<int64_t>(given.size()) != 2 * a->numel()) return false;
      std::vector<int64_t> axes;
      for (int64_t k = 0; k < a->numel(); ++k) axes.push_back(a->valueAsInt64(k));
      return toChannelsLastAxes(axes, &nhwc->axes) && followsThroughInput0(plan);
    }
  }
  if (given.size() != 8) return false;
  for (int half = 0; half < 2; ++half)
    for (int j = 0; j < 4; ++j) nhwc->pads.push_back(given[half * 4 + kToChannelsLast[j]]);
  return followsThroughInput0(plan);
}

bool stridedCopyFollowsRegion(const Node& node, const GraphIndex& index,
                              const std::vector<bool>& chosen, const InferredShapes& shapes,
                              FollowPlan* plan, ops::StridedCopyGeometry* nhwc) {
  if (node.domain != kKilnDomain || node.opType != ops::kStridedCopyOp ||
      node.outputs.size() != 1 || node.outputs[0].empty() || node.inputs.size() != 1)
    return false;
  const SymbolicShape* in = regionInput(node, index, chosen, shapes);
  if (!in) return false;
  int64_t dims[4];
  for (int d = 0; d < 4; ++d) {
    if (!(*in)[d].isConst() || (*in)[d].constValue() <= 0) return false;
    dims[d] = (*in)[d].constValue();
  }
  auto geometry = ops::stridedCopyGeometry(node, dims[0] * dims[1] * dims[2] * dims[3]);
  if (!geometry.isOk() || geometry.value().shape.size() != 4) return false;
  const ops::StridedCopyGeometry& g = geometry.value();
  // The element strides of X's axes, channels-first and channels-last.
  const int64_t nchwStride[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  const int64_t nhwcStride[4] = {dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1]};
  int64_t rest = g.offset, offset = 0;
  int64_t step[4];  // Y's dim d steps `step[d]` along X's axis d
  for (int d = 0; d < 4; ++d) {
    const int64_t start = rest / nchwStride[d];
    rest %= nchwStride[d];
    if (g.shape[d] == 0) return false;
    step[d] = g.shape[d] == 1 ? 0 : g.strides[d] / nchwStride[d];
    if (g.shape[d] > 1 && (g.strides[d] % nchwStride[d] != 0 || step[d] == 0)) return false;
    if (start >= dims[d] || start + (g.shape[d] - 1) * step[d] >= dims[d]) return false;
    offset += start * nhwcStride[d];
  }
  nhwc->shape.clear();
  nhwc->strides.clear();
  for (int j = 0; j < 4; ++j) {
    const int axis = kToChannelsLast[j];
    nhwc->shape.push_back(g.shape[axis]);
    nhwc->strides.push_back(step[axis] * nhwcStride[axis]);
  }
  nhwc->offset = offset;
  return followsThroughInput0(plan);
}

bool sliceFollowsRegion(const Node& node, const GraphIndex& index, const std::vector<bool>& chosen,
                        const InferredShapes& shapes, FollowPlan* plan,
                        std::vector<int64_t>* axes) {
  if (!isDefaultDomain(node) || node.opType != "Slice" || node.outputs.size() != 1 ||
      node.outputs[0].empty() || !regionInput(node, index, chosen, shapes))
    return false;
  std::vector<int64_t> nchw;
  if (node.opset < 10) {
    nchw = node.attrInts("axes");
    if (nchw.empty())
      for (size_t k = 0; k < node.attrInts("starts").size(); ++k) nchw.push_back(int64_t(k));
  } else {
    const Tensor* starts = node.hasInput(1) ? index.constant(node.inputs[1]) : nullptr;
    if (!starts) return false;
    if (node.hasInput(3)) {
      const Tensor* a = index.constant(node.inputs[3]);
      if (!a) return false;
      for (int64_t k = 0; k < a->numel(); ++k) nchw.push_back(a->valueAsInt64(k));
    } else {
      for (int64_t k = 0; k < starts->numel(); ++k) nchw.push_back(k);
    }
  }
  axes->clear();
  return toChannelsLastAxes(nchw, axes) && followsThroughInput0(plan);
}

Shuffle shuffleFollowsRegion(const Graph& g, const GraphIndex& index, int at,
                             const std::vector<bool>& chosen, const InferredShapes& shapes) {
  const Node& r1 = g.nodes[at];
  if (!isPlainReshape(r1)) return {};
  const int producer = index.producer(r1.inputs[0]);
  const SymbolicShape* x = shapeOf(shapes, r1.inputs[0]);
  const SymbolicShape* split = shapeOf(shapes, r1.outputs[0]);
  if (producer < 0 || !chosen[producer] || !x || !split || x->size() != 4 || split->size() != 5)
    return {};
  const int t = index.soleReader(r1.outputs[0]);
  if (t < 0 || !isDefaultDomain(g.nodes[t]) || g.nodes[t].opType != "Transpose" ||
      g.nodes[t].attrInts("perm") != std::vector<int64_t>{0, 2, 1, 3, 4})
    return {};
  const int r2 = index.soleReader(g.nodes[t].outputs[0]);
  if (r2 < 0 || !isPlainReshape(g.nodes[r2]) || g.nodes[r2].inputs[0] != g.nodes[t].outputs[0])
    return {};
  const SymbolicShape* y = shapeOf(shapes, g.nodes[r2].outputs[0]);
  const SymbolicShape& s = *split;
  if (!y || !(*y == *x) || !(s[0] == (*x)[0]) || !(s[3] == (*x)[2]) || !(s[4] == (*x)[3]) ||
      !s[1].isConst() || !s[2].isConst() || !(*x)[1].isConst() ||
      s[1].constValue() * s[2].constValue() != (*x)[1].constValue())
    return {};
  return {{at, t, r2}, s[1].constValue(), s[2].constValue(), (*x)[1].constValue()};
}

WholeSampleNorm wholeSampleNormFollowsRegion(const Graph& g, const GraphIndex& index, int at,
                                             const std::vector<bool>& chosen,
                                             const InferredShapes& shapes) {
  const Node& r1 = g.nodes[at];
  if (!isPlainReshape(r1)) return {};
  const int producer = index.producer(r1.inputs[0]);
  const SymbolicShape* x = shapeOf(shapes, r1.inputs[0]);
  const SymbolicShape* flat = shapeOf(shapes, r1.outputs[0]);
  if (producer < 0 || !chosen[producer] || !x || !flat || x->size() != 4 || flat->size() != 3)
    return {};
  for (int d = 1; d < 4; ++d)
    if (!(*x)[d].isConst()) return {};
  const int64_t c = (*x)[1].constValue(), h = (*x)[2].constValue(), w = (*x)[3].constValue();
  const SymbolicShape& f = *flat;
  if (!(f[0] == (*x)[0]) || !f[1].isConst() || f[1].constValue() != 1 || !f[2].isConst() ||
      f[2].constValue() != c * h * w)
    return {};
  const int norm = index.soleReader(r1.outputs[0]);
  if (norm < 0) return {};
  const Node& n = g.nodes[norm];
  if (!isDefaultDomain(n) || n.opType != "InstanceNormalization" || n.inputs.size() != 3 ||
      n.outputs.size() != 1 || n.inputs[0] != r1.outputs[0])
    return {};
  for (size_t slot : {size_t{1}, size_t{2}}) {
    const Tensor* t = index.constant(n.inputs[slot]);  // an initializer or a Constant node's
    if (!t || t->numel() != 1) return {};
  }
  const int r2 = index.soleReader(n.outputs[0]);
  if (r2 < 0 || !isPlainReshape(g.nodes[r2]) || g.nodes[r2].inputs[0] != n.outputs[0]) return {};
  const SymbolicShape* y = shapeOf(shapes, g.nodes[r2].outputs[0]);
  if (!y || !(*y == *x)) return {};
  return {{at, norm, r2}, {0, 1, c * h * w}, {0, h, w, c}};
}

std::optional<ResizeNhwc> resizeNhwc(const Node& node, const GraphIndex& index,
                                     const InferredShapes& shapes) {
  if (!isDefaultDomain(node) || node.opType != "Resize" || node.opset < 11 ||
      node.outputs.size() != 1 || node.outputs[0].empty() || node.inputs.empty() ||
      node.inputs[0].empty() || !isFloat(node, shapes) ||
      node.attrString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
    return std::nullopt;
  const SymbolicShape* in = shapeOf(shapes, node.inputs[0]);
  const SymbolicShape* out = shapeOf(shapes, node.outputs[0]);
  if (!in || !out || in->size() != 4 || out->size() != 4 || !((*in)[0] == (*out)[0]) ||
      !((*in)[1] == (*out)[1]))
    return std::nullopt;
  ResizeNhwc plan;
  if (!node.attrInts("axes").empty()) {  // an empty list means every axis, as none
    if (!toChannelsLastAxes(node.attrInts("axes"), &plan.axes)) return std::nullopt;
    return plan;  // scales and sizes follow the axes' order: unchanged
  }
  for (size_t slot : {size_t(2), size_t(3)}) {
    if (!node.hasInput(slot)) continue;
    const Tensor* t = index.constant(node.inputs[slot]);
    if (!t) return std::nullopt;
    if (t->numel() == 0) continue;  // an empty scales beside sizes
    if (t->rank() != 1 || t->numel() != 4) return std::nullopt;
    plan.inputs.push_back({slot, permutedVector(*t, kToChannelsLast)});
  }
  if (plan.inputs.empty()) return std::nullopt;
  return plan;
}

}  // namespace kiln::passes::channels_last
