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
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine_report.h"

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
};

// Every rule over `report`, findings ordered by cost (untimed last), then rule id.
std::vector<Finding> adviseEngine(const EngineReport& report);

// The findings as text (one block per finding) and as JSON ({"findings": [...]}).
std::string formatAdvice(const std::vector<Finding>& findings);
nlohmann::json adviceJson(const std::vector<Finding>& findings);

}  // namespace kiln::inspector
