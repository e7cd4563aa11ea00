#include "shape/rule_helpers.h"
#include "shape/shape_rules.h"
#include "kiln/op_table.h"
#include "ops/einsum_equation.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kiln::shape {
namespace {

bool sameShape(const Node&, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  for (size_t i = 0; i < std::max<size_t>(outs->size(), 1); ++i)
    setOut(outs, i, typeOf(in, 0), shapeOf(in, 0));
  return true;
}

bool broadcastRule(const Node& node, const Ins& in, Outs* outs, DataType outType) {
  SymbolicShape shape;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].present()) continue;
    if (!in[i].info->hasShape) return false;
    shape = i == 0 ? shapeOf(in, 0) : broadcastSymbolic(shape, shapeOf(in, i));
  }
  setOut(outs, 0, outType, shape);
  return true;
}

bool arithmetic(const Node& node, const Ins& in, Outs* outs) {
  if (!broadcastRule(node, in, outs, typeOf(in, 0))) return false;
  // Track small integer arithmetic on shape values (e.g. seq * heads).
  if (in.size() == 2 && in[0].symbolicValue && in[1].symbolicValue) {
    const auto& a = *in[0].symbolicValue;
    const auto& b = *in[1].symbolicValue;
    if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return true;
    std::vector<DimExpr> v;
    for (size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
      const DimExpr& x = a[a.size() == 1 ? 0 : k];
      const DimExpr& y = b[b.size() == 1 ? 0 : k];
      if (node.opType == "Add")
        v.push_back(x + y);
      else if (node.opType == "Sub")
        v.push_back(x - y);
      else if (node.opType == "Mul")
        v.push_back(x * y);
      else if (node.opType == "Div")
        v.push_back(DimExpr::floorDiv(x, y));
      else
        return true;
    }
    (*outs)[0].symbolicValue = v;
  }
  return true;
}

bool comparison(const Node& node, const Ins& in, Outs* outs) {
  return broadcastRule(node, in, outs, DataType::kBool);
}
bool whereRule(const Node& node, const Ins& in, Outs* outs) {
  if (!broadcastRule(node, in, outs, typeOf(in, 1))) return false;
  return true;
}

bool castRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  DataType to =
      node.opType == "CastLike" ? typeOf(in, 1) : static_cast<DataType>(node.attrInt("to", 1));
  setOut(outs, 0, to, shapeOf(in, 0));
  if (in[0].symbolicValue && isInteger(to)) (*outs)[0].symbolicValue = *in[0].symbolicValue;
  return true;
}

bool matmulRule(const Node&, const Ins& in, Outs* outs) {
  if (!known(in, 0) || !known(in, 1)) return false;
  SymbolicShape a = shapeOf(in, 0), b = shapeOf(in, 1);
  if (a.empty() || b.empty()) return false;
  const bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA) a.insert(a.begin(), DimExpr(1));
  if (vecB) b.push_back(DimExpr(1));
  SymbolicShape batch = broadcastSymbolic(SymbolicShape(a.begin(), a.end() - 2),
                                          SymbolicShape(b.begin(), b.end() - 2));
  if (!vecA) batch.push_back(a[a.size() - 2]);
  if (!vecB) batch.push_back(b.back());
  setOut(outs, 0, typeOf(in, 0), batch);
  return true;
}

// Einsum: each output dim is its label's dim in the inputs (ops/einsum_equation.h). A label
// seen with several dims takes the one that is not 1 (they broadcast), and must otherwise be
// the same expression; "..." dims broadcast as numpy's do.
bool einsumRule(const Node& node, const Ins& in, Outs* outs) {
  std::vector<int> ranks;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!known(in, i)) return false;
    ranks.push_back(static_cast<int>(shapeOf(in, i).size()));
  }
  ops::EinsumLabels labels;
  if (in.empty() || !ops::parseEinsumLabels(node.attrString("equation", ""), ranks, &labels).isOk())
    return false;
  std::map<int, DimExpr> dims;
  for (size_t i = 0; i < in.size(); ++i) {
    const SymbolicShape& shape = shapeOf(in, i);
    for (size_t d = 0; d < shape.size(); ++d) {
      const int label = labels.inputs[i][d];
      auto [it, fresh] = dims.emplace(label, shape[d]);
      if (fresh || it->second == shape[d] || shape[d] == DimExpr(1)) continue;
      if (it->second == DimExpr(1)) {
        it->second = shape[d];
        continue;
      }
      return false;  // two different sizes (or expressions not known equal)
    }
  }
  SymbolicShape out;
  for (const int label : labels.output) {
    auto it = dims.find(label);
    out.push_back(it == dims.end() ? DimExpr(1) : it->second);  // "..." dims no input has
  }
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

bool gemmRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0) || !known(in, 1) || shapeOf(in, 0).size() != 2 || shapeOf(in, 1).size() != 2)
    return false;
  DimExpr m = shapeOf(in, 0)[node.attrInt("transA", 0) ? 1 : 0];
  DimExpr n = shapeOf(in, 1)[node.attrInt("transB", 0) ? 0 : 1];
  setOut(outs, 0, typeOf(in, 0), {m, n});
  return true;
}

bool reduceRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  const SymbolicShape& s = shapeOf(in, 0);
  std::vector<int64_t> axes = node.attrInts("axes");
  if (in.size() > 1 && in[1].present()) {
    auto v = constInts(in, 1);
    if (!v) return false;
    axes = *v;
  }
  const bool keep = node.attrInt("keepdims", 1) != 0;
  if (axes.empty() && node.attrInt("noop_with_empty_axes", 0)) return sameShape(node, in, outs);
  SymbolicShape out;
  for (size_t d = 0; d < s.size(); ++d) {
    bool reduced = axes.empty();
    for (int64_t a : axes)
      reduced = reduced || normAxis(a, static_cast<int64_t>(s.size())) == static_cast<int64_t>(d);
    if (!reduced)
      out.push_back(s[d]);
    else if (keep)
      out.push_back(1);
  }
  setOut(outs, 0, typeOf(in, 0), out);
  return true;
}

bool argReduceRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  SymbolicShape s = shapeOf(in, 0);
  const int64_t axis = normAxis(node.attrInt("axis", 0), static_cast<int64_t>(s.size()));
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return false;
  if (node.attrInt("keepdims", 1))
    s[axis] = 1;
  else
    s.erase(s.begin() + axis);
  setOut(outs, 0, DataType::kInt64, s);
  return true;
}

bool layerNormRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  setOut(outs, 0, typeOf(in, 0), shapeOf(in, 0));
  SymbolicShape stat = shapeOf(in, 0);
  const int64_t axis = normAxis(node.attrInt("axis", -1), static_cast<int64_t>(stat.size()));
  for (size_t d = std::max<int64_t>(axis, 0); d < stat.size(); ++d) stat[d] = 1;
  for (size_t i = 1; i < outs->size(); ++i) setOut(outs, i, DataType::kFloat32, stat);
  return true;
}

// RMSNormalization (opset 23): Y has X's shape and the scale's type (V), which may differ
// from X's (T); X's when the scale's is not known.
bool rmsNormRule(const Node&, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  const DataType scale = typeOf(in, 1);
  setOut(outs, 0, scale != DataType::kUndefined ? scale : typeOf(in, 0), shapeOf(in, 0));
  return true;
}

bool firstIsIndexAndData(const Node& node, const Ins& in, Outs* outs) {
  if (!sameShape(node, in, outs)) return false;
  for (size_t i = 1; i < outs->size(); ++i) (*outs)[i].info.type = DataType::kBool;  // Dropout mask
  return true;
}

// Output 0 has the input's shape; training-mode running mean/var are per channel.
bool batchNormRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  setOut(outs, 0, typeOf(in, 0), shapeOf(in, 0));
  if (shapeOf(in, 0).size() < 2) return outs->size() == 1;
  for (size_t i = 1; i < outs->size(); ++i) setOut(outs, i, typeOf(in, 0), {shapeOf(in, 0)[1]});
  return true;
}

// RNN, GRU and LSTM: X [seq, batch, input] (layout 1, from opset 14: [batch, seq, input]) gives Y
// [seq, dirs, batch, hidden] ([batch, seq, dirs, hidden]) and Y_h (and LSTM's Y_c) [dirs, batch,
// hidden]
// ([batch, dirs, hidden]); hidden from the attribute, else from R [dirs, gates * hidden, hidden].
// Without it every shape after a recurrent layer was unknown: Sequencer2D's reshapes then read
// their targets back from the GPU at run time, and no CUDA graph could hold them.
bool recurrentRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0) || shapeOf(in, 0).size() != 3) return false;
  const SymbolicShape& x = shapeOf(in, 0);
  const bool batchFirst = node.opset >= 14 && node.attrInt("layout", 0) == 1;  // as the kernels
  const DimExpr seq = x[batchFirst ? 1 : 0], batch = x[batchFirst ? 0 : 1];
  const int64_t hiddenSize = node.attrInt("hidden_size", 0);
  DimExpr hidden(hiddenSize);
  if (hiddenSize <= 0) {
    if (!known(in, 2) || shapeOf(in, 2).size() != 3) return false;
    hidden = shapeOf(in, 2)[2];
  }
  const DimExpr dirs(int64_t{node.attrString("direction", "forward") == "bidirectional" ? 2 : 1});
  const DataType type = typeOf(in, 0);
  for (size_t i = 0; i < outs->size(); ++i) {
    if (i == 0)
      setOut(outs, 0, type,
             batchFirst ? SymbolicShape{batch, seq, dirs, hidden}
                        : SymbolicShape{seq, dirs, batch, hidden});
    else
      setOut(outs, i, type,
             batchFirst ? SymbolicShape{batch, dirs, hidden} : SymbolicShape{dirs, batch, hidden});
  }
  return true;
}

bool topKRule(const Node& node, const Ins& in, Outs* outs) {
  if (!known(in, 0)) return false;
  SymbolicShape s = shapeOf(in, 0);
  const int64_t axis = normAxis(node.attrInt("axis", -1), static_cast<int64_t>(s.size()));
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return false;
  if (node.opset < 10)
    s[axis] = node.attrInt("k", 1);
  else if (in.size() > 1 && in[1].symbolicValue && in[1].symbolicValue->size() == 1)
    s[axis] = (*in[1].symbolicValue)[0];
  else
    return false;
  setOut(outs, 0, typeOf(in, 0), s);
  if (outs->size() > 1) setOut(outs, 1, DataType::kInt64, s);
  return true;
}

// ai.kiln FusedMatMul (MatMul + bias [N] + activation) keeps MatMul's shape; other
// domains' FusedMatMul (ONNX Runtime's, with transposes and alpha) are not this op.
bool kilnFusedMatmulRule(const Node& node, const Ins& in, Outs* outs) {
  return node.domain == "ai.kiln" && matmulRule(node, in, outs);
}

const std::map<std::string, ShapeRule>& ruleTable() {
  static const std::map<std::string, ShapeRule> table = [] {
    std::map<std::string, ShapeRule> t;
    // The op table's generic forms (kiln/op_table.h); op-specific rules below.
    for (const ops::OpRow& row : ops::opTable()) {
      const std::string op(row.opType);
      if (row.shape == ops::OpShapeForm::kBroadcast) t[op] = &arithmetic;
      if (row.shape == ops::OpShapeForm::kBroadcastToBool) t[op] = &comparison;
      if (row.shape == ops::OpShapeForm::kSameAsInput) t[op] = &sameShape;
    }
    // Q: the zero point's type, else output_dtype, else uint8; DQ: the scale's type.
    t["QuantizeLinear"] = [](const Node& n, const Ins& in, Outs* o) {
      if (!known(in, 0)) return false;
      const DataType type = typeOf(in, 2) != DataType::kUndefined ? typeOf(in, 2)
                            : n.attrInt("output_dtype", 0) != 0
                                ? static_cast<DataType>(n.attrInt("output_dtype", 0))
                                : DataType::kUInt8;
      setOut(o, 0, type, shapeOf(in, 0));
      return true;
    };
    t["DequantizeLinear"] = [](const Node& n, const Ins& in, Outs* o) {
      if (!known(in, 0) || typeOf(in, 1) == DataType::kUndefined) return false;
      const int64_t dtype = n.attrInt("output_dtype", 0);
      setOut(o, 0, dtype != 0 ? static_cast<DataType>(dtype) : typeOf(in, 1), shapeOf(in, 0));
      return true;
    };
    t["Dropout"] = &firstIsIndexAndData;
    t["TopK"] = &topKRule;
    t["BatchNormalization"] = &batchNormRule;
    t["RNN"] = t["GRU"] = t["LSTM"] = &recurrentRule;
    t["IsNaN"] = t["IsInf"] = [](const Node& n, const Ins& in, Outs* o) {
      return broadcastRule(n, in, o, DataType::kBool);
    };
    t["Where"] = &whereRule;
    t["Cast"] = t["CastLike"] = &castRule;
    t["MatMul"] = &matmulRule;
    t["Einsum"] = &einsumRule;
    t["FusedMatMul"] = &kilnFusedMatmulRule;
    t["Gemm"] = &gemmRule;
    for (const char* op :
         {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
      t[op] = &reduceRule;
    t["ArgMax"] = t["ArgMin"] = &argReduceRule;
    t["LayerNormalization"] = &layerNormRule;
    t["RMSNormalization"] = &rmsNormRule;
    addTensorShapeRules(t);
    addSpatialShapeRules(t);
    addFusedShapeRules(t);
    addQuantizedShapeRules(t);
    return t;
  }();
  return table;
}

}  // namespace

SymbolicShape broadcastSymbolic(const SymbolicShape& a, const SymbolicShape& b) {
  const size_t rank = std::max(a.size(), b.size());
  SymbolicShape out(rank, DimExpr(1));
  for (size_t i = 0; i < rank; ++i) {
    DimExpr da = i < rank - a.size() ? DimExpr(1) : a[i - (rank - a.size())];
    DimExpr db = i < rank - b.size() ? DimExpr(1) : b[i - (rank - b.size())];
    if (da == db || (db.isConst() && db.constValue() == 1))
      out[i] = da;
    else if (da.isConst() && da.constValue() == 1)
      out[i] = db;
    else if (da.isConst())
      out[i] = da;  // a static dim > 1 decides
    else if (db.isConst())
      out[i] = db;
    else
      out[i] = DimExpr::max(da, db);
  }
  return out;
}

ShapeRule findShapeRule(const std::string& opType) {
  auto it = ruleTable().find(opType);
  return it == ruleTable().end() ? nullptr : it->second;
}

}  // namespace kiln::shape
