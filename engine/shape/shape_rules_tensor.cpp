// Shape rules of the ops that move or index tensors without computing on them: Shape,
// Size, Gather (and GatherElements / GatherND), Concat, (Un)Squeeze, Reshape, Flatten,
// Transpose, ConstantOfShape, Expand, Slice, Split, Range and Tile.
#include <algorithm>
#include <cmath>

#include "shape/rule_helpers.h"

namespace kiln::shape {
namespace {

bool shapeRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  const SymbolicShape& s = shapeOf(in, 0);
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = std::clamp<int64_t>(normAxis(node.attrInt("start", 0), rank), 0, rank);
  int64_t end = std::clamp<int64_t>(
      node.hasAttr("end") ? normAxis(node.attrInt("end", rank), rank) : rank, 0, rank);
  std::vector<DimExpr> value(s.begin() + start, s.begin() + std::max(start, end));
  setOut(outs, 0, DataType::kInt64, {static_cast<int64_t>(value.size())});
  (*outs)[0].symbolicValue = value;
  return true;
}

bool sizeRule(const Node&, const Ins& in, Outs* outs) {
  setOut(outs, 0, DataType::kInt64, {});
  if (!known(in, 0)) return true;
  DimExpr n = 1;
  for (const DimExpr& d : shapeOf(in, 0)) n = n * d;
  (*outs)[0].symbolicValue = std::vector<DimExpr>{n};
  return true;
}

bool gatherRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0) || !known(in, 1)) return false;
  const SymbolicShape& data = shapeOf(in, 0);
  const int64_t axis = normAxis(node.attrInt("axis", 0), static_cast<int64_t>(data.size()));
  if (axis < 0 || axis >= static_cast<int64_t>(data.size())) return false;
  SymbolicShape out(data.begin(), data.begin() + axis);
  for (const DimExpr& d : shapeOf(in, 1)) out.push_back(d);
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  setOut(outs, 0, typeOf(in, 0), out);
  auto indices = constInts(in, 1);
  if (in[0].symbolicValue && indices && axis == 0) {
    std::vector<DimExpr> v;
    const auto& src = *in[0].symbolicValue;
    for (int64_t i : *indices) {
      int64_t k = i < 0 ? i + static_cast<int64_t>(src.size()) : i;
      if (k < 0 || k >= static_cast<int64_t>(src.size())) return true;
      v.push_back(src[k]);
    }
    (*outs)[0].symbolicValue = v;
  }
  return true;
}

bool concatRule(const Node& node, const Ins& in, Outs* outs) {
  if (in.empty()) return false;  // a Concat without inputs: the checker's error, not a shape
  bool allSymbolic = true;
  std::vector<DimExpr> value;
  for (const RuleInput& r : in) {
    if (!r.present() || !r.info->hasShape) return false;
    if (r.symbolicValue)
      value.insert(value.end(), r.symbolicValue->begin(), r.symbolicValue->end());
    else
      allSymbolic = false;
  }
  SymbolicShape out = shapeOf(in, 0);
  const int64_t axis = normAxis(node.attrInt("axis", 0), static_cast<int64_t>(out.size()));
  if (axis < 0 || axis >= static_cast<int64_t>(out.size())) return false;
  for (size_t i = 1; i < in.size(); ++i) {
    if (shapeOf(in, i).size() != out.size()) return false;
    out[axis] = out[axis] + shapeOf(in, i)[axis];
  }
  setOut(outs, 0, typeOf(in, 0), out);
  if (allSymbolic) (*outs)[0].symbolicValue = value;
  return true;
}

bool unsqueezeRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  std::vector<int64_t> axes = node.attrInts("axes");
  if (in.size() > 1) {
    auto v = constInts(in, 1);
    if (!v) return false;
    axes = *v;
  }
  SymbolicShape out = shapeOf(in, 0);
  const int64_t rank = static_cast<int64_t>(out.size() + axes.size());
  for (int64_t& a : axes) a = normAxis(a, rank);
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) {
    if (a < 0 || a > static_cast<int64_t>(out.size())) return false;
    out.insert(out.begin() + a, DimExpr(1));
  }
  setOut(outs, 0, typeOf(in, 0), out);
  if (in[0].symbolicValue) (*outs)[0].symbolicValue = *in[0].symbolicValue;
  return true;
}

bool squeezeRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  std::vector<int64_t> axes = node.attrInts("axes");
  if (in.size() > 1 && in[1].present()) {
    auto v = constInts(in, 1);
    if (!v) return false;
    axes = *v;
  }
  const SymbolicShape& s = shapeOf(in, 0);
  SymbolicShape out;
  for (size_t d = 0; d < s.size(); ++d) {
    bool drop = false;
    if (axes.empty()) drop = s[d].isConst() && s[d].constValue() == 1;
    for (int64_t a : axes)
      drop = drop || normAxis(a, static_cast<int64_t>(s.size())) == static_cast<int64_t>(d);
    if (axes.empty() && !s[d].isConst()) return false;  // unknown whether it is 1
    if (!drop) out.push_back(s[d]);
  }
  setOut(outs, 0, typeOf(in, 0), out);
  if (in[0].symbolicValue) (*outs)[0].symbolicValue = *in[0].symbolicValue;
  return true;
}

bool reshapeRule(const Node& node, const Ins& in, Outs* outs) {
  if (in.size() < 2 || !in[1].symbolicValue || !known(in, 0)) return false;
  const SymbolicShape& src = shapeOf(in, 0);
  SymbolicShape out = *in[1].symbolicValue;
  const bool allowZero = node.attrInt("allowzero", 0) != 0;
  int inferAt = -1;
  DimExpr known = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d].isConst() && out[d].constValue() == 0 && !allowZero) {
      if (d >= src.size()) return false;
      out[d] = src[d];
    }
    if (out[d].isConst() && out[d].constValue() == -1)
      inferAt = static_cast<int>(d);
    else
      known = known * out[d];
  }
  if (inferAt >= 0) {
    DimExpr total = 1;
    for (const DimExpr& d : src) total = total * d;
    out[inferAt] = DimExpr::floorDiv(total, known);
  }
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

bool flattenRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  const SymbolicShape& s = shapeOf(in, 0);
  const int64_t axis = normAxis(node.attrInt("axis", 1), static_cast<int64_t>(s.size()));
  DimExpr a = 1, b = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
    (d < axis ? a : b) = (d < axis ? a : b) * s[d];
  setOut(outs, 0, typeOf(in, 0), {a, b});
  return true;
}

bool transposeRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  const SymbolicShape& s = shapeOf(in, 0);
  std::vector<int64_t> perm = node.attrInts("perm");
  if (perm.empty())
    for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) perm.push_back(d);
  if (perm.size() != s.size()) return false;
  SymbolicShape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(s.size())) return false;
    out.push_back(s[p]);
  }
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

bool constantOfShapeRule(const Node& node, const Ins& in, Outs* outs) {
  if (in.empty() || !in[0].symbolicValue) return false;
  const Tensor* value = node.attrTensor("value");
  setOut(outs, 0, value ? value->type() : DataType::kFloat32, *in[0].symbolicValue);
  return true;
}

bool expandRule(const Node&, const Ins& in, Outs* outs) {
  if (!known(in, 0) || in.size() < 2 || !in[1].symbolicValue) return false;
  setOut(outs, 0, typeOf(in, 0), broadcastSymbolic(shapeOf(in, 0), *in[1].symbolicValue));
  return true;
}

bool sliceRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (node.opset < 10) {
    starts = node.attrInts("starts");
    ends = node.attrInts("ends");
    if (node.hasAttr("axes")) axes = node.attrInts("axes");
  } else {
    starts = constInts(in, 1);
    ends = constInts(in, 2);
    if (in.size() > 3 && in[3].present()) axes = constInts(in, 3);
    if (in.size() > 4 && in[4].present()) steps = constInts(in, 4);
    if (!starts || !ends || (in.size() > 3 && in[3].present() && !axes) ||
        (in.size() > 4 && in[4].present() && !steps))
      return false;
  }
  // One start, end, axis and step per sliced axis; the kernel refuses other lengths.
  if (ends->size() != starts->size() || (axes && axes->size() != starts->size()) ||
      (steps && steps->size() != starts->size()))
    return false;
  SymbolicShape out = shapeOf(in, 0);
  const int64_t rank = static_cast<int64_t>(out.size());
  for (size_t k = 0; k < starts->size(); ++k) {
    int64_t axis = normAxis(axes ? (*axes)[k] : static_cast<int64_t>(k), rank);
    int64_t step = steps ? (*steps)[k] : 1;
    if (axis < 0 || axis >= rank || step == 0) return false;
    const DimExpr& dim = out[axis];
    int64_t s = (*starts)[k], e = (*ends)[k];
    if (!dim.isConst()) {
      // Only the common "whole axis" and "from s to end" cases stay symbolic.
      if (step == 1 && s >= 0 && e >= (int64_t{1} << 30)) {
        out[axis] = dim - DimExpr(s);
        continue;
      }
      return false;
    }
    const int64_t n = dim.constValue();
    // As the kernel does: a step past the dim takes one element at most, so it is held to
    // the dim and `-step` stays in int64 (INT64_MIN overflowed it); the counts below never
    // add the step (`e - s + step - 1` overflowed for INT64_MAX).
    step = std::clamp(step, -std::max<int64_t>(n, 1), std::max<int64_t>(n, 1));
    auto clampIdx = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += n;
      return std::clamp(v, lo, hi);
    };
    int64_t len;
    if (step > 0) {
      s = clampIdx(s, 0, n);
      e = clampIdx(e, 0, n);
      len = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = clampIdx(s, 0, n - 1);
      e = clampIdx(e, -1, n - 1);
      len = s > e ? (s - e - 1) / (-step) + 1 : 0;
    }
    out[axis] = len;
  }
  setOut(outs, 0, typeOf(in, 0), out);
  if (in[0].symbolicValue && out.size() == 1 && out[0].isConst() && starts->size() == 1 &&
      (!steps || (*steps)[0] == 1)) {
    const auto& v = *in[0].symbolicValue;
    int64_t n = static_cast<int64_t>(v.size());
    int64_t s = (*starts)[0] < 0 ? (*starts)[0] + n : std::min((*starts)[0], n);
    s = std::clamp<int64_t>(s, 0, n);
    if (s + out[0].constValue() <= n)
      (*outs)[0].symbolicValue =
          std::vector<DimExpr>(v.begin() + s, v.begin() + s + out[0].constValue());
  }
  return true;
}

bool splitRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  const SymbolicShape& s = shapeOf(in, 0);
  const int64_t axis = normAxis(node.attrInt("axis", 0), static_cast<int64_t>(s.size()));
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return false;
  std::vector<int64_t> sizes = node.attrInts("split");
  if (in.size() > 1 && in[1].present()) {
    auto v = constInts(in, 1);
    if (!v) return false;
    sizes = *v;
  }
  const size_t n = outs->size();
  for (size_t i = 0; i < n; ++i) {
    SymbolicShape o = s;
    if (!sizes.empty()) {
      if (i >= sizes.size()) return false;
      o[axis] = sizes[i];
    } else {
      o[axis] = DimExpr::ceilDiv(s[axis], static_cast<int64_t>(n));
      if (!s[axis].isConst() || s[axis].constValue() % static_cast<int64_t>(n) != 0) return false;
    }
    setOut(outs, i, typeOf(in, 0), o);
  }
  return true;
}

bool rangeRule(const Node&, const Ins& in, Outs* outs) {
  auto s = constInts(in, 0), l = constInts(in, 1), d = constInts(in, 2);
  if (!s || !l || !d || s->empty() || l->empty() || d->empty() || (*d)[0] == 0) return false;
  int64_t n =
      std::max<int64_t>(0, ((*l)[0] - (*s)[0] + (*d)[0] - ((*d)[0] > 0 ? 1 : -1)) / (*d)[0]);
  setOut(outs, 0, typeOf(in, 0), {n});
  return true;
}

bool tileRule(const Node&, const Ins& in, Outs* outs) {
  if (!known(in, 0) || in.size() < 2 || !in[1].symbolicValue) return false;
  SymbolicShape out = shapeOf(in, 0);
  const auto& repeats = *in[1].symbolicValue;
  if (repeats.size() != out.size()) return false;
  for (size_t d = 0; d < out.size(); ++d) out[d] = out[d] * repeats[d];
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

// GatherND: indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:] (the
// batch dims are indices' own leading dims); needs indices' last dim to be known.
bool gatherNdRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0) || !known(in, 1)) return false;
  const SymbolicShape& data = shapeOf(in, 0);
  const SymbolicShape& indices = shapeOf(in, 1);
  if (indices.empty() || !indices.back().isConst()) return false;
  // Compared before adding: a hostile batch_dims or tuple length near 2^63 must not
  // wrap the sum (found by fuzz_onnx_import).
  const int64_t batchDims = node.attrInt("batch_dims", 0);
  const int64_t tuple = indices.back().constValue();
  const int64_t rank = static_cast<int64_t>(data.size());
  if (batchDims < 0 || tuple < 0 || batchDims > rank || tuple > rank - batchDims) return false;
  const int64_t from = batchDims + tuple;
  SymbolicShape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + from, data.end());
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

bool likeIndicesRule(const Node&, const Ins& in, Outs* outs) {
  if (!known(in, 1)) return false;
  setOut(outs, 0, typeOf(in, 0), shapeOf(in, 1));
  return true;
}

}  // namespace

void addTensorShapeRules(std::map<std::string, ShapeRule>& table) {
  table["Tile"] = &tileRule;
  table["GatherElements"] = &likeIndicesRule;
  table["GatherND"] = &gatherNdRule;
  table["Shape"] = &shapeRule;
  table["Size"] = &sizeRule;
  table["Gather"] = &gatherRule;
  table["Concat"] = &concatRule;
  table["Unsqueeze"] = &unsqueezeRule;
  table["Squeeze"] = &squeezeRule;
  table["Reshape"] = &reshapeRule;
  table["Flatten"] = &flattenRule;
  table["Transpose"] = &transposeRule;
  table["ConstantOfShape"] = &constantOfShapeRule;
  table["Expand"] = &expandRule;
  table["Slice"] = &sliceRule;
  table["Split"] = &splitRule;
  table["Range"] = &rangeRule;
}

}  // namespace kiln::shape
