#include "typed_export.h"

#include <QFileInfo>

#include "kiln/calibration.h"
#include "kiln/constraints_file.h"
#include "kiln/file_io.h"
#include "kiln/plan.h"
#include "kiln/typed_onnx_export.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

Status needsModelFile(const StudioDocument& document) {
  if (!document.network() || document.modelPath().isEmpty())
    return invalidArgument("no ONNX model is open: the export rewrites the model's file");
  return Status::ok();
}

// The configuration's reduced type: bf16 when only bf16 is on, else fp16.
DataType reducedTypeOf(const BuilderConfig& config) {
  return config.bf16 && !config.fp16 ? DataType::kBFloat16 : DataType::kFloat16;
}

Status writeTyped(const StudioDocument& document, const NodePrecisions& precisions,
                  const QString& path, bool keepIoTypes, QString* summary) {
  TypedExportOptions options;
  options.keepIoTypes = keepIoTypes;
  KILN_ASSIGN_OR_RETURN(
      TypedExportResult result,
      exportStronglyTypedOnnx(document.modelPath().toStdString(), precisions, options));
  KILN_RETURN_IF_ERROR(writeFileAtomically(path.toStdString(), result.bytes, "the export"));
  *summary = QStringLiteral(
                 "%1: %2 nodes reduced, %3 float32, %4 Casts, %5 weights converted "
                 "(from %6); build with trtexec --onnx=%1 --stronglyTyped")
                 .arg(QFileInfo(path).fileName())
                 .arg(result.reducedNodes)
                 .arg(result.float32Nodes)
                 .arg(result.castsInserted)
                 .arg(result.initializersConverted)
                 .arg(QString::fromStdString(precisions.source));
  return Status::ok();
}

}  // namespace

Status exportTypedOnnxFromEngine(const StudioDocument& document, const QString& path,
                                 bool keepIoTypes, QString* summary) {
  KILN_RETURN_IF_ERROR(needsModelFile(document));
  const std::shared_ptr<const Plan> plan = document.plan();
  if (!plan)
    return invalidArgument(
        "no Kiln engine is open: build one (a trtexec export has no "
        "per-node decisions to write)");
  const QString name = document.enginePath().isEmpty()
                           ? QStringLiteral("the built engine")
                           : QFileInfo(document.enginePath()).fileName();
  KILN_ASSIGN_OR_RETURN(NodePrecisions precisions,
                        nodePrecisionsFromPlan(plan->record, *document.network(),
                                               name.toStdString(), DataType::kUndefined));
  return writeTyped(document, precisions, path, keepIoTypes, summary);
}

Status exportTypedOnnxFromRules(const StudioDocument& document, const QString& path,
                                bool keepIoTypes, QString* summary) {
  KILN_RETURN_IF_ERROR(needsModelFile(document));
  const BuilderConfig& config = document.buildConfig();
  PrecisionConstraints constraints;
  constraints.mode = config.precisionConstraints;
  constraints.layerPrecisions = config.layerPrecisions;
  constraints.layerOutputTypes = config.layerOutputTypes;
  const NodePrecisions precisions = nodePrecisionsFromConstraints(
      constraints, *document.network(), "the Build dock's rules", reducedTypeOf(config));
  return writeTyped(document, precisions, path, keepIoTypes, summary);
}

Status exportQdqOnnxFromCalibration(const StudioDocument& document, const QString& path,
                                    QString* summary, QdqFormat format) {
  KILN_RETURN_IF_ERROR(needsModelFile(document));
  const std::string cache = document.buildConfig().calibrationCachePath;
  if (cache.empty())
    return invalidArgument(
        "no calibration cache: calibrate (View > Calibration) or set one in "
        "the Build dock first");
  KILN_ASSIGN_OR_RETURN(CalibrationTable table, loadCalibrationCache(cache));
  KILN_ASSIGN_OR_RETURN(
      QdqExportResult result,
      exportQdqOnnx(document.modelPath().toStdString(), table,
                    QFileInfo(QString::fromStdString(cache)).fileName().toStdString(), format));
  KILN_RETURN_IF_ERROR(writeFileAtomically(path.toStdString(), result.bytes, "the export"));
  *summary = QStringLiteral(
                 "%1: %2 Q/DQ pairs on activations, %3 %5 weights, %4 layers "
                 "left in float; build with trtexec --onnx=%1 --stronglyTyped")
                 .arg(QFileInfo(path).fileName())
                 .arg(result.activationPairs)
                 .arg(result.weightDequantizers)
                 .arg(result.floatLayers.size())
                 .arg(format == QdqFormat::kFp8 ? "fp8 e4m3" : "int8");
  return Status::ok();
}

}  // namespace kiln::studio
