#include "node_properties.h"

#include <QLocale>
#include <QStringList>
#include <cmath>
#include <limits>

namespace kiln::studio {

namespace {

constexpr int kMaxListItems = 16;
constexpr int kMaxTensorValuesShown = 8;

template <class T, class F>
QString listText(const std::vector<T>& values, F format) {
  QStringList items;
  for (size_t i = 0; i < values.size() && i < kMaxListItems; ++i) items << format(values[i]);
  QString text = QLatin1Char('[') + items.join(QStringLiteral(", "));
  if (values.size() > kMaxListItems)
    text += QStringLiteral(", … (%1 values)").arg(QLocale().toString(qint64(values.size())));
  return text + QLatin1Char(']');
}

QString number(double value) {
  return QString::number(value, 'g', 6);
}

QString quoted(const std::string& text) {
  return QLatin1Char('"') + shownText(text) + QLatin1Char('"');
}

bool isTypeAttribute(const std::string& name) {
  return name == "to" || name == "dtype" || name == "output_dtype" || name == "saturate_to";
}

void mergeDeclared(ValueTable* table, const ValueInfo& info) {
  InferredValue& value = (*table)[info.name];
  if (value.type == DataType::kUndefined) value.type = info.type;
  if (!value.hasShape && info.hasShape) {
    value.hasShape = true;
    value.shape = info.shape;
  }
}

// `dims` joined by `separator`, at most `maxChars` long: whole dimensions from both ends,
// taken in turn while they fit around a "…"; characters cut only when even the first and
// last dimension do not fit (a long symbol name).
QString elidedDims(const QStringList& dims, const QString& separator, int maxChars) {
  const QString text = dims.join(separator);
  if (text.size() <= maxChars) return text;
  const QString ellipsis = QStringLiteral("…");
  QStringList head, tail;
  QString best;
  while (head.size() + tail.size() + 1 < dims.size()) {
    QStringList h = head, t = tail;
    if (h.size() <= t.size())
      h << dims[h.size()];
    else
      t.prepend(dims[dims.size() - 1 - t.size()]);
    const QString candidate = (h + QStringList{ellipsis} + t).join(separator);
    if (candidate.size() > maxChars) break;
    head = h;
    tail = t;
    best = candidate;
  }
  if (!head.isEmpty() && !tail.isEmpty()) return best;
  const int front = (maxChars - 1) / 2;
  return text.left(front) + ellipsis + text.right(maxChars - 1 - front);
}

}  // namespace

// True when every node output already has a value info: the studio's loader writes
// the inferred types and shapes there, so inferring again would repeat its work.
static bool valueInfoCoversOutputs(const Graph& graph) {
  for (const Node& node : graph.nodes)
    for (const std::string& out : node.outputs)
      if (!out.empty() && !graph.valueInfo.count(out) && !graph.findValueInfo(out)) return false;
  return true;
}

ValueTable modelValueTable(const Network& network) {
  ValueTable table;
  const Graph& graph = network.graph;
  if (!valueInfoCoversOutputs(graph)) {
    Result<ShapeInferenceResult> inferred = inferShapes(network);
    if (inferred.isOk()) table = std::move(inferred->values);
  }
  for (const ValueInfo& info : graph.inputs) mergeDeclared(&table, info);
  for (const ValueInfo& info : graph.outputs) mergeDeclared(&table, info);
  for (const auto& [name, info] : graph.valueInfo) mergeDeclared(&table, info);
  for (const auto& [name, tensor] : graph.initializers) {
    InferredValue& value = table[name];
    value.type = tensor.type();
    value.hasShape = true;
    value.shape.assign(tensor.shape().begin(), tensor.shape().end());
    value.isConstant = true;
  }
  return table;
}

QString shapeText(const SymbolicShape& shape, const QString& separator) {
  if (shape.empty()) return QStringLiteral("scalar");
  QStringList dims;
  for (const DimExpr& dim : shape) dims << QString::fromStdString(dim.toString());
  return dims.join(separator);
}

QString shortShapeText(const SymbolicShape& shape, const QString& separator, int maxChars) {
  if (shape.empty()) return QStringLiteral("scalar");
  QStringList dims;
  for (const DimExpr& dim : shape)
    dims << (dim.isConst()    ? QString::number(dim.constValue())
             : dim.isSymbol() ? QString::fromStdString(dim.symbolName())
                              : QStringLiteral("?"));
  return elidedDims(dims, separator, maxChars);
}

QString valueText(const InferredValue& value) {
  if (value.type == DataType::kUndefined && !value.hasShape) return QStringLiteral("unknown");
  const QString type = value.type == DataType::kUndefined
                           ? QStringLiteral("type unknown")
                           : QString::fromLatin1(dataTypeName(value.type));
  return type + QStringLiteral(", ") +
         (value.hasShape ? shapeText(value.shape) : QStringLiteral("rank unknown"));
}

QString tensorSummary(const Tensor& tensor) {
  if (!tensor.defined()) return QStringLiteral("empty tensor");
  QString text = QStringLiteral("%1 tensor %2 (%3 values)")
                     .arg(QString::fromLatin1(dataTypeName(tensor.type())),
                          QString::fromStdString(shapeToString(tensor.shape())),
                          QLocale().toString(qint64(tensor.numel())));
  if (tensor.numel() > kMaxTensorValuesShown || tensor.type() == DataType::kString) return text;
  QStringList values;
  for (int64_t i = 0; i < tensor.numel(); ++i) values << number(tensor.valueAsDouble(i));
  return text + QStringLiteral(": [%1]").arg(values.join(QStringLiteral(", ")));
}

QString shownText(const std::string& text, size_t maxBytes) {
  if (text.size() <= maxBytes) return QString::fromStdString(escapeControlCharacters(text));
  size_t cut = maxBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return QString::fromStdString(escapeControlCharacters(text.substr(0, cut))) +
         QStringLiteral("… (%1 bytes)").arg(QLocale().toString(qint64(text.size())));
}

QString attributeText(const std::string& name, const Attribute& a) {
  using Kind = Attribute::Kind;
  switch (a.kind) {
    case Kind::kFloat:
      return number(a.f);
    case Kind::kInt:
      if (isTypeAttribute(name) && a.i > 0 && a.i <= kLastDataTypeCode)
        return QStringLiteral("%1 (%2)")
            .arg(QString::fromLatin1(dataTypeName(static_cast<DataType>(a.i))))
            .arg(a.i);
      return QString::number(a.i);
    case Kind::kString:
      return quoted(a.s);
    case Kind::kTensor:
      return tensorSummary(a.t);
    case Kind::kGraph:
      return a.g ? QStringLiteral("subgraph '%1' (%2 nodes)")
                       .arg(shownText(a.g->name))
                       .arg(a.g->nodes.size())
                 : QStringLiteral("subgraph (empty)");
    case Kind::kFloats:
      return listText(a.floats, [](float v) { return number(v); });
    case Kind::kInts:
      return listText(a.ints, [](int64_t v) { return QString::number(v); });
    case Kind::kStrings:
      return listText(a.strings, [](const std::string& v) { return quoted(v); });
    case Kind::kTensors:
      return QStringLiteral("%1 tensors").arg(a.tensors.size());
    case Kind::kGraphs:
      return QStringLiteral("%1 subgraphs").arg(a.graphs.size());
  }
  return QString();
}

int subgraphCount(const Node& node) {
  int count = 0;
  for (const auto& [name, attribute] : node.attributes) {
    if (attribute.kind == Attribute::Kind::kGraph && attribute.g) ++count;
    if (attribute.kind == Attribute::Kind::kGraphs)
      count += static_cast<int>(attribute.graphs.size());
  }
  return count;
}

WeightStats computeWeightStats(const Tensor& tensor) {
  WeightStats stats;
  stats.count = tensor.numel();
  if (tensor.type() == DataType::kString || !tensor.defined()) {
    stats.numeric = false;
    return stats;
  }
  // Welford's running mean and variance: stable for millions of elements.
  double mean = 0, m2 = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  int64_t n = 0;
  const bool f32 = tensor.type() == DataType::kFloat32;
  const float* floats = f32 ? tensor.data<float>() : nullptr;
  for (int64_t i = 0; i < stats.count; ++i) {
    const double v = f32 ? floats[i] : tensor.valueAsDouble(i);
    if (!std::isfinite(v)) {
      ++stats.nonFinite;
      continue;
    }
    ++n;
    const double delta = v - mean;
    mean += delta / n;
    m2 += delta * (v - mean);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (n > 0) {
    stats.min = lo;
    stats.max = hi;
    stats.mean = mean;
    stats.stddev = std::sqrt(m2 / n);
  }
  return stats;
}

}  // namespace kiln::studio
