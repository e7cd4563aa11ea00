// The studio's strongly typed ONNX exports for TensorRT 11 (issue 24 item 3; engine
// side: kiln/typed_onnx_export.h, CLI: `kiln export-onnx`). Each writes the OPEN MODEL
// (its file) with Kiln's precision decisions in it and returns a one-line summary:
//   - from the open engine: a Kiln plan built from this model (its record's layer
//     precisions, per source node), as `kiln export-onnx --from PLAN`;
//   - from the Build dock's rules: the configuration's per-layer precision rules and
//     constraint mode, nodes without a rule in the configuration's fp16/bf16 (fp16 when
//     neither is on), as `--constraints`;
//   - INT8 Q/DQ from the calibration cache the configuration names, as `--calib-cache`;
//   - both: the cache's Q/DQ pairs with the open engine's FP16/BF16 layers in that type
//     (an INT8 + FP16 engine), as `--from PLAN --calib-cache CACHE`.
// Errors (no model file, no plan of this model, no cache, the export's own) are a
// Status with one line; nothing is written then.
#pragma once

#include <QString>

#include "kiln/status.h"
#include "kiln/typed_onnx_export.h"

namespace kiln::studio {

class StudioDocument;

Status exportTypedOnnxFromEngine(const StudioDocument& document, const QString& path,
                                 bool keepIoTypes, QString* summary);
Status exportTypedOnnxFromRules(const StudioDocument& document, const QString& path,
                                bool keepIoTypes, QString* summary);
// The Build dock's calibration cache as INT8 Q/DQ, or with kFp8 as FP8 E4M3 Q/DQ for
// the GEMMs (kiln/typed_onnx_export.h's exportQdqOnnx); one-line errors.
Status exportQdqOnnxFromCalibration(const StudioDocument& document, const QString& path,
                                    QString* summary, QdqFormat format = QdqFormat::kInt8);

// The open engine's decisions and the Build dock's calibration cache together: INT8
// layers float32 between the cache's Q/DQ pairs, the engine's other layers in their
// precision (nodePrecisionsFromPlan(..., kAsQdqFloat32)); one-line errors.
Status exportQdqOnnxWithEngine(const StudioDocument& document, const QString& path,
                               bool keepIoTypes, QString* summary);

}  // namespace kiln::studio
