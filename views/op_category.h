// The studio's colour vocabulary for graphs: ONNX op types grouped into categories
// (each with a fixed colour and a legend name), engine precisions (fixed colours) and
// the white-to-red time-share gradient. Shared by the graph views, their legends
// and the SVG/HTML export, so one op reads the same colour everywhere.
#pragma once

#include <QColor>
#include <QString>
#include <QStringList>
#include <string>

#include "kiln/op_table.h"

namespace kiln::studio {

// The op table's kinds (kiln/op_table.h), kFused last.
using OpCategory = ops::OpKind;
constexpr int kOpCategoryCount = static_cast<int>(OpCategory::kFused) + 1;

// The category of an ONNX op type as ONNX (or the contrib domains) spell it.
OpCategory opCategory(const std::string& opType);
QString opCategoryName(OpCategory category);  // "Convolution", "Matrix multiply", ...
QColor opCategoryColor(OpCategory category);

// Engine precisions. normalizePrecision maps what reports write ("FP16", "Half",
// "Row major linear FP32", "kINT8", "fp8e4m3") to one of FP32, TF32, FP16, BF16, INT8,
// FP8, or "" when it names none of them.
QString normalizePrecision(const QString& text);
QColor precisionColor(const QString& normalizedPrecision);  // grey for ""
// The precisions in legend order.
const QStringList& knownPrecisions();

// White (0) to red (1) for a layer's share of time relative to the largest share;
// untimedColor() for layers with no time.
QColor timeShareColor(double fractionOfMax);
QColor untimedColor();
// Fill of graph input/output boxes.
QColor terminalColor();

}  // namespace kiln::studio
