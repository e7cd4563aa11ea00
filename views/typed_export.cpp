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

// The open engine's plan, or why there is none.
Result<std::shared_ptr<const Plan>> openPlan(const StudioDocument& document) {
  std::shared_ptr<const Plan> plan = document.plan();
  if (!plan)
    return invalidArgument(
        "no Kiln engine is open: build one (a trtexec export has no "
        "per-node decisions to write)");
  return plan;
}

std::string engineName(const StudioDocument& document) {
  return document.enginePath().isEmpty()
             ? std::string("the built engine")
             : QFileInfo(document.enginePath()).fileName().toStdString();
}

// The Build dock's calibration cache, loaded, with its file name.
Result<CalibrationTable> configuredCache(const StudioDocument& document, std::string* name) {
  const std::string cache = document.buildConfig().calibrationCachePath;
  if (cache.empty())
    return invalidArgument(
        "no calibration cache: calibrate (View > Calibration) or set one in "
        "the Build dock first");
  *name = QFileInfo(QString::fromStdString(cache)).fileName().toStdString();
  return loadCalibrationCache(cache);
}

// Writes the strongly typed rewrite of `qdqBytes` (a Q/DQ export of the model) or, when
// empty, of the model file itself.
Status writeTyped(const StudioDocument& document, const NodePrecisions& precisions,
                  const QString& path, bool keepIoTypes, QString* summary,
                  const std::string& qdqBytes = "") {
  TypedExportOptions options;
  options.keepIoTypes = keepIoTypes;
  const std::string model = document.modelPath().toStdString();
  KILN_ASSIGN_OR_RETURN(TypedExportResult result,
                        qdqBytes.empty()
                            ? exportStronglyTypedOnnx(model, precisions, options)
                            : exportStronglyTypedOnnxBytes(qdqBytes, model, precisions, options));
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
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, openPlan(document));
  KILN_ASSIGN_OR_RETURN(NodePrecisions precisions,
                        nodePrecisionsFromPlan(plan->record, *document.network(),
                                               engineName(document), DataType::kUndefined));
  return writeTyped(document, precisions, path, keepIoTypes, summary);
}

Status exportQdqOnnxWithEngine(const StudioDocument& document, const QString& path,
                               bool keepIoTypes, QString* summary) {
  KILN_RETURN_IF_ERROR(needsModelFile(document));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, openPlan(document));
  std::string cacheName;
  KILN_ASSIGN_OR_RETURN(CalibrationTable table, configuredCache(document, &cacheName));
  KILN_ASSIGN_OR_RETURN(
      NodePrecisions precisions,
      nodePrecisionsFromPlan(plan->record, *document.network(), engineName(document),
                             DataType::kUndefined, QuantizedLayers::kAsQdqFloat32));
  KILN_ASSIGN_OR_RETURN(
      QdqExportResult qdq,
      exportQdqOnnx(document.modelPath().toStdString(),
                    calibrationFollowingPlan(table, plan->record, *document.network()), cacheName));
  precisions.source += " and calibration cache '" + cacheName + "'";
  KILN_RETURN_IF_ERROR(writeTyped(document, precisions, path, keepIoTypes, summary, qdq.bytes));
  *summary += QStringLiteral("; %1 Q/DQ pairs on activations, %2 int8 weights")
                  .arg(qdq.activationPairs)
                  .arg(qdq.weightDequantizers);
  return Status::ok();
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
  std::string cacheName;
  KILN_ASSIGN_OR_RETURN(CalibrationTable table, configuredCache(document, &cacheName));
  KILN_ASSIGN_OR_RETURN(QdqExportResult result, exportQdqOnnx(document.modelPath().toStdString(),
                                                              table, cacheName, format));
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
