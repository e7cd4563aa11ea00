// The advisor: performance lint over an engine report (a Kiln plan or a TensorRT engine
// exported by trtexec alike). Each rule looks at the layers' types, tensors and times and
// reports findings: what is wrong, which layers, what it costs (the layers' summed time
// when the report is timed) and how to fix it. No Qt.
//
// Rules (ids are stable, for scripts and the studio):
//   reformat-changes-type  a Reformat/copy layer whose output type differs from its
//                          input's: a precision boundary that costs a pass over the tensor
//   layout-copies          Transpose/Shuffle/Reformat layers that move data, summed
//   int8-conv-wide-output  an INT8 convolution (INT8 input) writing a non-INT8 output: the
//                          next layer reads 2-4x the bytes
//   channel-alignment      a convolution whose input channels C or output channels K are
//                          not multiples of 16 (INT8) or 8 (FP16/BF16): tensor-core kernels
//                          pad or fall back (TREx's rule; a stem's C = 3 is reported as info)
//   fp32-layers            layers left in FP32 in an engine that runs FP16/BF16 elsewhere
//                          (precision islands force conversions)
//   host-fallback          layers of a Kiln CUDA engine that run on the host (no GPU kernel
//                          for their op or data type): the winning tactic's build detail
//                          says "host-fallback", or `kiln run --json` placed them there
//   slice-changes-type     a Slice whose output type differs from its input's (TREx's rule)
//   unfused-qdq            a Quantize/Dequantize left as a layer of its own instead of
//                          folding into the compute layer beside it
//   conv-not-on-tensor-cores  a non-FP32 convolution whose kernel name is not a tensor-core
//                          kernel, or whose channels per group are < 8 (depthwise and
//                          grouped convolutions: info)
//   opt-shape-far          a profile whose opt shape differs from the shapes the engine was
//                          run at by more than 2x in some dimension (needs both)
//   below-roofline         layers under 10% of their roofline (roofline.h) that take more
//                          than 5% of the time (needs times and the device's peaks)
//   precision-island       a compute layer whose compute neighbours all run one other
//                          precision, with reformat layers converting at its boundary
//                          (cost: those reformats' time)
//   weights-wider-than-compute  layers whose stored weights are wider than the precision
//                          they compute in (e.g. FP32 weights of FP16 layers): engine size
// docs/advisor.md describes each rule, its thresholds and its limits.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine_report.h"
#include "kiln/plan.h"
#include "kiln/status.h"
#include "roofline.h"

namespace kiln::inspector {

enum class AdviceSeverity { kInfo, kWarning, kError };
const char* adviceSeverityName(AdviceSeverity severity);

struct Finding {
  std::string rule;  // "channel-alignment", ...
  AdviceSeverity severity = AdviceSeverity::kWarning;
  std::string message;              // one line, what is wrong
  std::vector<std::string> layers;  // the engine layers it hits, in engine order
  double costMs = -1;               // the layers' summed time; -1 when untimed
  std::string fix;                  // what to do: a command or a setting
  // What the studio's "Apply fix" adds to a Kiln build's configuration: per-layer
  // precision rules (ONNX node name -> "fp16", "fp32", ...). Empty when the fix is not
  // a rule (or the engine is not Kiln's).
  std::map<std::string, std::string> applyLayerPrecisions;
};

// What some rules need beyond the report.
struct AdviseOptions {
  // The input shapes the engine was run (profiled) at, for opt-shape-far; empty: unknown.
  std::map<std::string, Shape> runShapes;
  // The peaks for below-roofline; null: those of the report's device, when known.
  const DevicePeaks* peaks = nullptr;
};

// Every rule over `report`, findings ordered by cost (untimed last), then rule id.
std::vector<Finding> adviseEngine(const EngineReport& report, const AdviseOptions& options = {});

// Adds a plan's optimization profiles (min/opt/max per dynamic input) to the report's
// ioTensors, where TensorRT 11 exports keep theirs, so that opt-shape-far can read them.
void addPlanProfiles(const Plan& plan, EngineReport* report);
// Reads a `kiln run --json` document's "layers" ({"name", "placement", "note"}) and marks
// the report's layers it places on the host (parameters["placement"] = "host-fallback",
// parameters["placement note"] = its note). Returns how many it marked, or an error when
// the document has no "layers" array.
Result<int> applyRunPlacements(const nlohmann::json& run, EngineReport* report);

// The findings as text (one block per finding) and as JSON ({"findings": [...]}).
std::string formatAdvice(const std::vector<Finding>& findings);
nlohmann::json adviceJson(const std::vector<Finding>& findings);

}  // namespace kiln::inspector
