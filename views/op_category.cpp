#include "op_category.h"

#include <algorithm>

namespace kiln::studio {

namespace {

bool startsWith(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

OpCategory opCategory(const std::string& opType) {
  // The op table's row first; ops without one (other contrib ops, plugins) by name.
  if (const ops::OpRow* row = ops::findOp(opType)) return row->kind;
  if (startsWith(opType, "Fused") || startsWith(opType, "QOrdered")) return OpCategory::kFused;
  if (startsWith(opType, "Reduce")) return OpCategory::kReduction;
  if (opType.find("Attention") != std::string::npos) return OpCategory::kAttention;
  if (opType.find("Conv") != std::string::npos) return OpCategory::kConvolution;
  if (opType.find("Norm") != std::string::npos) return OpCategory::kNormalization;
  return OpCategory::kOther;
}

QString opCategoryName(OpCategory category) {
  const std::string_view name = ops::opKindName(category);
  return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

QColor opCategoryColor(OpCategory category) {
  // Light fills so the black text stays readable; hues far apart for the common ones.
  switch (category) {
    case OpCategory::kConvolution:
      return QColor(0x8d, 0xb6, 0xe8);
    case OpCategory::kMatMul:
      return QColor(0x9f, 0xd4, 0xa6);
    case OpCategory::kActivation:
      return QColor(0xf6, 0xc2, 0x8b);
    case OpCategory::kNormalization:
      return QColor(0xc9, 0xb3, 0xe6);
    case OpCategory::kPooling:
      return QColor(0x7f, 0xd3, 0xd1);
    case OpCategory::kElementwise:
      return QColor(0xf2, 0xe2, 0x8c);
    case OpCategory::kShape:
      return QColor(0xd9, 0xd9, 0xd9);
    case OpCategory::kReduction:
      return QColor(0xe8, 0xa8, 0xc8);
    case OpCategory::kAttention:
      return QColor(0xf0, 0x8f, 0x8a);
    case OpCategory::kOther:
      return QColor(0xf4, 0xf1, 0xea);
    case OpCategory::kFused:
      return QColor(0xb5, 0xc8, 0x6a);
  }
  return Qt::white;
}

QString normalizePrecision(const QString& text) {
  const QString t = text.toUpper();
  // Order matters: "BF16" contains "F16", "TF32" contains "F32".
  if (t.contains(QLatin1String("BF16")) || t.contains(QLatin1String("BFLOAT16"))) return "BF16";
  if (t.contains(QLatin1String("TF32"))) return "TF32";
  if (t.contains(QLatin1String("FP8")) || t.contains(QLatin1String("E4M3")) ||
      t.contains(QLatin1String("E5M2")))
    return "FP8";
  if (t.contains(QLatin1String("INT8"))) return "INT8";
  if (t.contains(QLatin1String("FP16")) || t.contains(QLatin1String("HALF")) ||
      t.contains(QLatin1String("FLOAT16")))
    return "FP16";
  if (t.contains(QLatin1String("FP32")) || t.contains(QLatin1String("FLOAT32")) || t == "FLOAT" ||
      t == "KFLOAT")
    return "FP32";
  return QString();
}

QColor precisionColor(const QString& normalizedPrecision) {
  if (normalizedPrecision == "FP32") return QColor(0x6f, 0x9f, 0xe0);
  if (normalizedPrecision == "TF32") return QColor(0x5c, 0xc8, 0xc8);
  if (normalizedPrecision == "FP16") return QColor(0x7c, 0xcf, 0x7c);
  if (normalizedPrecision == "BF16") return QColor(0xc3, 0xd9, 0x5a);
  if (normalizedPrecision == "INT8") return QColor(0xf3, 0xa4, 0x5c);
  if (normalizedPrecision == "FP8") return QColor(0xc0, 0x8c, 0xe8);
  return untimedColor();
}

const QStringList& knownPrecisions() {
  static const QStringList precisions = {"FP32", "TF32", "FP16", "BF16", "INT8", "FP8"};
  return precisions;
}

QColor timeShareColor(double fractionOfMax) {
  const double f = std::clamp(fractionOfMax, 0.0, 1.0);
  // White to a saturated red (220, 40, 30).
  return QColor::fromRgbF(1.0 - f * (1.0 - 220 / 255.0), 1.0 - f * (1.0 - 40 / 255.0),
                          1.0 - f * (1.0 - 30 / 255.0));
}

QColor untimedColor() {
  return QColor(0xbd, 0xbd, 0xbd);
}

QColor terminalColor() {
  return QColor(0xee, 0xee, 0xf4);
}

}  // namespace kiln::studio
