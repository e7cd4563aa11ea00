// Words for what the properties panel and the graph views show about ONNX values and
// nodes: value types and (symbolic) shapes, attribute values, weight statistics. No
// widgets; the slow parts (shape inference, statistics of big weights) are meant to
// run on JobRunner threads.
#pragma once

#include <QString>
#include <cstdint>
#include <map>
#include <string>

#include "kiln/graph.h"
#include "kiln/shape_inference.h"

namespace kiln::studio {

using ValueTable = std::map<std::string, InferredValue>;

// Type and shape of every value of the main graph: shape inference's answer where it
// has one, else what the model declares (inputs, outputs, value_info, initializers).
// A model that shape inference rejects still gets its declared values.
ValueTable modelValueTable(const Network& network);

// "batch x 3 x 224 x 224" with `separator` " x "; "scalar" for rank 0.
QString shapeText(const SymbolicShape& shape, const QString& separator = QStringLiteral(" x "));
// A shape short enough for an edge label: each dimension as its number, its symbol's name
// ("batch"), or "?" when it is an expression; past `maxChars` characters the middle is
// elided with "…". The whole shape (shapeText) belongs in a tooltip beside it.
QString shortShapeText(const SymbolicShape& shape, const QString& separator, int maxChars = 32);
// "float32, batch x 3 x 224 x 224"; "float32, rank unknown"; "unknown" without a type.
QString valueText(const InferredValue& value);
// `text` fit for one line of a widget: control characters escaped, and past
// `maxBytes` cut (at a character boundary) with "… (N bytes)" after it. Names and
// strings come from the model: a 64 MiB attribute would freeze the view that paints it.
constexpr size_t kMaxShownTextBytes = 1024;
QString shownText(const std::string& text, size_t maxBytes = kMaxShownTextBytes);
// An attribute's value in words (strings through shownText): numbers, lists (long ones cut, with
// the count), data-type codes by name ("to": float16), tensors summarized, subgraphs counted.
QString attributeText(const std::string& name, const Attribute& attribute);
// "float32 tensor 64x3x7x7 (9,408 values)" plus the values when there are at most 8.
QString tensorSummary(const Tensor& tensor);
// How many subgraphs a node owns (If: 2, Loop/Scan: 1).
int subgraphCount(const Node& node);

struct WeightStats {
  int64_t count = 0;      // elements
  int64_t nonFinite = 0;  // NaN or infinite elements (left out of the moments)
  double min = 0, max = 0, mean = 0, stddev = 0;
  bool numeric = true;  // false for string tensors
};
// Statistics of `tensor`'s elements (any numeric type), in double precision.
WeightStats computeWeightStats(const Tensor& tensor);

}  // namespace kiln::studio
