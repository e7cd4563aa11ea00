#include "passes/rewrite_helpers.h"

#include <algorithm>
#include <cmath>

#include "kiln/op_table.h"
#include "kiln/passes.h"

namespace kiln::passes::rewrite {

bool sameShapeAndType(const Shapes& shapes, const std::string& a, const std::string& b) {
  const SymbolicShape* sa = shapeOf(shapes, a);
  const SymbolicShape* sb = shapeOf(shapes, b);
  const DataType ta = typeOf(shapes, a);
  return sa && sb && *sa == *sb && ta != DataType::kUndefined && ta == typeOf(shapes, b);
}

bool staticShape(const Shapes& shapes, const std::string& value, Shape* out) {
  const SymbolicShape* s = shapeOf(shapes, value);
  if (!s) return false;
  out->clear();
  for (const DimExpr& d : *s) {
    if (!d.isConst()) return false;
    out->push_back(d.constValue());
  }
  return true;
}

bool isOnnxOpType(const Node& node, const char* op) {
  return node.opType == op && isDefaultDomain(node) && !node.outputs.empty() &&
         !node.outputs[0].empty();
}

int soleProducer(const GraphIndex& index, const std::string& value, int reader) {
  return index.soleReader(value) == reader ? index.producer(value) : -1;
}

const Tensor* float32Constant(const GraphIndex& index, const std::string& name, int64_t count) {
  const Tensor* t = name.empty() ? nullptr : index.constant(name);
  return t && t->type() == DataType::kFloat32 && (count < 0 || t->numel() == count) ? t : nullptr;
}

bool scalarValue(const Tensor* t, double* value) {
  if (!t || !isFloatingPoint(t->type()) || t->numel() != 1) return false;
  *value = t->valueAsDouble(0);
  return true;
}

double halfUlpOf(const Tensor* t) {
  if (!t) return 0;
  return t->type() == DataType::kFloat16 ? 0x1p-11 : t->type() == DataType::kBFloat16 ? 0x1p-8 : 0;
}

bool isNearScalar(const Tensor* t, double expected) {
  double v = 0;
  if (!scalarValue(t, &v)) return false;
  // A 16-bit constant holds `expected` rounded to its type: within half a unit in the last
  // place (float16 2^-11, bfloat16 2^-8 relative), e.g. sqrt(2) as the float16 1.4140625 of
  // a strongly typed export's FP16 GELU.
  if (const double halfUlp = halfUlpOf(t); halfUlp > 0)
    return std::fabs(v - expected) <= halfUlp * std::max(std::fabs(expected), 0x1p-14);
  return std::fabs(v - expected) <= 1e-5 * std::max(1.0, std::fabs(expected));
}

bool allElementsEqual(const Tensor* t, double value) {
  if (!t || !t->defined() || t->type() == DataType::kString || t->numel() == 0) return false;
  for (int64_t i = 0; i < t->numel(); ++i)
    if (!(t->valueAsDouble(i) == value)) return false;
  return true;
}

bool alongLastAxis(const Tensor& t) {
  for (int d = 0; d + 1 < t.rank(); ++d)
    if (t.dim(d) != 1) return false;
  return true;
}

bool constantInts(const Tensor* t, std::vector<int64_t>* out) {
  if (!t || (t->type() != DataType::kInt64 && t->type() != DataType::kInt32)) return false;
  *out = t->toInt64Vector();
  return true;
}

bool isPositionwise(const Node& node) {
  const ops::OpRow* row = ops::findOp(node.opType);
  if (!row || !row->positionwise) return false;
  return row->domain.empty() ? isDefaultDomain(node) : node.domain == row->domain;
}

bool attentionScores(const Graph& g, const GraphIndex& index, const std::string& value) {
  const int p = index.producer(value);
  if (p < 0) return false;
  const Node& n = g.nodes[p];
  if (isOnnxOpType(n, "MatMul")) return true;
  if (!isOnnxOpType(n, "Mul") && !isOnnxOpType(n, "Div")) return false;
  const int q = index.producer(n.inputs[0]);
  return q >= 0 && isOnnxOpType(g.nodes[q], "MatMul");
}

std::string neutralOperand(const Node& node, const GraphIndex& index) {
  if (node.inputs.size() != 2) return "";
  const std::string& op = node.opType;
  const bool commutes = op == "Add" || op == "Mul" || op == "And" || op == "Or";
  if (!commutes && op != "Sub" && op != "Div") return "";
  const double neutral = op == "Add" || op == "Sub" || op == "Or" ? 0.0 : 1.0;
  for (int side = 1; side >= (commutes ? 0 : 1); --side)
    if (allElementsEqual(index.constant(node.inputs[side]), neutral)) return node.inputs[1 - side];
  return "";
}

bool broadcastsItsInputs(const Node& node) {
  if (!isDefaultDomain(node) || node.outputs.empty() || node.outputs[0].empty()) return false;
  if (node.opType == "Where") return true;
  const ops::OpRow* row = ops::findOp(node.opType);
  return row && row->domain.empty() &&
         (row->shape == ops::OpShapeForm::kBroadcast ||
          row->shape == ops::OpShapeForm::kBroadcastToBool);
}

bool readOnlyBy(const GraphIndex& index, const std::string& value, const std::set<int>& inside) {
  const std::vector<int>& readers = index.readers(value);
  if (readers.empty()) return false;
  for (int r : readers)
    if (!inside.count(r)) return false;
  return true;
}

namespace {

bool readByName(const Node& node, const std::string& value) {
  return std::find(node.inputs.begin(), node.inputs.end(), value) != node.inputs.end();
}

bool readInSubgraph(const Node& node, const std::string& value) {
  if (!node.hasSubgraphs()) return false;
  const std::vector<std::string> implicit = node.implicitInputs();
  return std::find(implicit.begin(), implicit.end(), value) != implicit.end();
}

}  // namespace

bool bypassNode(Graph& g, const GraphIndex& index, int at, const std::string& source) {
  const Node& node = g.nodes[at];
  const std::string out = node.outputs[0];
  bool graphOutput = false;
  for (int r : index.readers(out)) {
    if (r < 0) {
      graphOutput = true;
    } else if (readInSubgraph(g.nodes[r], out) || !readByName(g.nodes[r], out)) {
      return false;
    }
  }
  if (graphOutput) {
    // The writer of `source` takes the output's name; readers of the output keep it.
    const int writer = index.producer(source);
    if (writer < 0 || index.readers(source) != std::vector<int>{at}) return false;
    for (std::string& o : g.nodes[writer].outputs)
      if (o == source) o = out;
  } else {
    for (int r : index.readers(out))
      for (std::string& in : g.nodes[r].inputs)
        if (in == out) in = source;
  }
  g.nodes.erase(g.nodes.begin() + at);
  return true;
}

Node madeNode(const Graph& g, const Node& like, const std::string& name, const char* op,
              std::vector<std::string> inputs, const std::vector<std::string>& sources,
              const char* pass) {
  Node n;
  n.name = name;
  n.opType = op;
  n.opset = like.opset;
  n.index = like.index;
  n.inputs = std::move(inputs);
  n.outputs = {freshName(g, name + "_output")};
  n.attributes[kSourceNodesAttribute] = stringsAttribute(sources);
  n.attributes[kFusionPassAttribute] = stringAttribute(pass);
  return n;
}

void dropUnreadInitializers(Graph& g, const std::set<std::string>& candidates) {
  const GraphIndex index(g);
  std::set<std::string> declared;
  for (const ValueInfo& v : g.inputs) declared.insert(v.name);
  for (const Node& node : g.nodes)
    for (const std::string& outer : node.implicitInputs()) declared.insert(outer);
  for (const std::string& name : candidates)
    if (!name.empty() && index.readers(name).empty() && !declared.count(name))
      g.initializers.erase(name);
}

void removeUnreadTransposes(Graph& g) {
  for (bool removed = true; removed;) {
    removed = false;
    const GraphIndex index(g);
    for (size_t i = 0; i < g.nodes.size() && !removed; ++i) {
      if (!isOnnxOp(g.nodes[i], "Transpose", 1) || !index.readers(g.nodes[i].outputs[0]).empty())
        continue;
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      removed = true;
    }
  }
}

std::string freshName(const Graph& g, const std::string& base) {
  auto used = [&g](const std::string& name) {
    if (g.initializers.count(name)) return true;
    for (const Node& n : g.nodes)
      if (std::find(n.outputs.begin(), n.outputs.end(), name) != n.outputs.end()) return true;
    for (const ValueInfo& v : g.inputs)
      if (v.name == name) return true;
    return false;
  };
  std::string name = base;
  for (int i = 1; used(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

std::string addInt64Initializer(Graph& g, const std::string& base,
                                const std::vector<int64_t>& values) {
  const std::string name = freshName(g, base);
  g.initializers[name] = Tensor::int64Vector(values);
  return name;
}

std::string channelsLastSourceOf(const Graph& g, const GraphIndex& index, const Shapes& shapes,
                                 const std::string& value) {
  Shape image;  // [N, C, H, W]
  const SymbolicShape* v = shapeOf(shapes, value);
  if (!v || v->size() != 4 || !(*v)[1].isConst() || !(*v)[2].isConst() || !(*v)[3].isConst())
    return "";
  const int64_t c = (*v)[1].constValue(), h = (*v)[2].constValue(), w = (*v)[3].constValue();
  auto dim = [](const SymbolicShape& s, size_t axis) {
    return s[axis].isConst() ? s[axis].constValue() : -1;
  };
  // The input of Transpose `at` by `perm` when there is one, with its shape.
  auto transposed = [&](int at, const std::vector<int64_t>& perm) -> const SymbolicShape* {
    if (at < 0 || !isOnnxOp(g.nodes[at], "Transpose", 1) || g.nodes[at].attrInts("perm") != perm)
      return nullptr;
    return shapeOf(shapes, g.nodes[at].inputs[0]);
  };
  const int made = index.producer(value);
  if (const SymbolicShape* s = transposed(made, {0, 3, 1, 2}))
    return s->size() == 4 && dim(*s, 1) == h && dim(*s, 2) == w && dim(*s, 3) == c
               ? g.nodes[made].inputs[0]
               : "";
  if (made < 0 || !isOnnxOp(g.nodes[made], "Reshape", 2)) return "";
  const int before = index.producer(g.nodes[made].inputs[0]);
  const SymbolicShape* s = transposed(before, {0, 2, 1});
  if (!s || s->size() != 3 || dim(*s, 1) != h * w || dim(*s, 2) != c) return "";
  return g.nodes[before].inputs[0];
}

Tensor transposedMatrix(const Tensor& t) {
  Tensor out(t.type(), {t.dim(1), t.dim(0)});
  const int64_t rows = t.dim(0), cols = t.dim(1);
  const auto* src = static_cast<const unsigned char*>(t.rawData());
  auto* dst = static_cast<unsigned char*>(out.rawData());
  const size_t size = dataTypeSize(t.type());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      std::copy_n(src + (i * cols + j) * size, size, dst + (j * rows + i) * size);
  return out;
}

bool isPermutation(const std::vector<int64_t>& perm) {
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

int64_t singleAxis(const Node& node, const GraphIndex& index, int inputSince, int64_t rank) {
  std::vector<int64_t> axes;
  if (node.opset < inputSince)
    axes = node.attrInts("axes");
  else if (!node.hasInput(1) || !constantInts(index.constant(node.inputs[1]), &axes))
    return -1;
  if (axes.size() != 1 || axes[0] < -rank || axes[0] >= rank) return -1;
  return axes[0] < 0 ? axes[0] + rank : axes[0];
}

bool isStorageFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

Attribute intsAttribute(const std::vector<int64_t>& values) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = values;
  return a;
}

void placeNewerOnnxOp(Node* node, int imported, int since) {
  if (imported >= since) {
    node->domain.clear();
    node->opset = imported;
  } else {
    node->domain = kKilnDomain;  // fuseEach declares the ai.kiln opset
    node->opset = 1;
  }
}

Tensor permutedConstant(const Tensor& c, size_t rank, const std::vector<int64_t>& q) {
  Shape in(rank - c.shape().size(), 1);
  in.insert(in.end(), c.shape().begin(), c.shape().end());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) out[i] = in[q[i]];
  Tensor result(c.type(), out);
  std::vector<int64_t> inStrides(rank, 1);
  for (size_t i = rank - 1; i-- > 0;) inStrides[i] = inStrides[i + 1] * in[i + 1];
  const size_t element = dataTypeSize(c.type());
  std::vector<int64_t> index(rank, 0);
  for (int64_t o = 0; o < result.numel(); ++o) {
    int64_t from = 0;
    for (size_t i = 0; i < rank; ++i) from += index[i] * inStrides[q[i]];
    std::copy_n(static_cast<const char*>(c.rawData()) + from * element, element,
                static_cast<char*>(result.rawData()) + o * element);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < out[i]) break;
      index[i] = 0;
    }
  }
  return result;
}

}  // namespace kiln::passes::rewrite
