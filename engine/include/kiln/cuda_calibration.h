// INT8 calibration on the CUDA runtime: a CalibrationRunner that runs the network in
// FP32 with TF32 off (calibration must see FP32 values) and returns every value the
// calibrator asks for as a graph output, and the one entry point the CLI and the
// studio share to pick the backend (the GPU when one is usable, as `kiln run` does).
// Without the CUDA toolkit or a device it says why; nothing here needs a driver.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/calibration.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

// A runner on device `device` for `network` (copied: the caller's may go away). The
// engine is built on the first run(), from a copy of the network whose graph outputs
// are the names asked for; a refused network or a value the engine does not return
// fails that run(), and calibrateNetwork then falls back to the CPU.
// kUnsupported with the reason when no device is usable.
Result<std::unique_ptr<CalibrationRunner>> createCalibrationRunner(const Network& network,
                                                                   int device = 0);

enum class CalibrationBackend {
  kDefault,  // the CUDA runtime when a device is usable, else the CPU with a notice
  kCpu,      // the CPU reference
  kCuda,     // the CUDA runtime; no usable device is an error (kUnsupported)
};
// "cpu" or "cuda" (false otherwise; `out` unchanged).
bool parseCalibrationBackend(const std::string& text, CalibrationBackend* out);

// calibrateNetwork on `backend`. The notice that kDefault chose the CPU (no usable
// device, and why) and a GPU run's fallback to the CPU reach options.onNotice; the
// result's `backend` and `fallback` say what ran.
Result<CalibrationResult> calibrateOnBackend(
    const Network& network, const std::vector<std::map<std::string, Tensor>>& batches,
    const CalibrationOptions& options, CalibrationBackend backend, int device = 0);

}  // namespace kiln::cuda
