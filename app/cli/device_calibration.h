// The microbenchmarks of `kiln device --calibrate` (cmd_device.cpp): what this machine's
// devices achieve, stored as measured peaks (inspector/measured_peaks.h).
#pragma once

#include <string>

#include "kiln/status.h"
#include "measured_peaks.h"

namespace kiln::cli {

// The host CPU: an FP32 GEMM through OpenBLAS (2048^3) and a 256 MiB memcpy, best of 5.
inspector::MeasuredPeaks calibrateHostCpu(const std::string& name);

// CUDA device `ordinal`, through Kiln's own CUDA engine (the kernels plans run): one-node
// networks timed per layer (median of 10 profiled runs after 3 untimed ones): MatMul
// 8192^3 in FP16 (the engine's tensor-core GEMM) and in FP32 without TF32 (4096^3), and
// a Relu over 1 GiB of float32 (bytes read + written). Errors name the device or the
// failing step (no usable GPU, out of memory).
Result<inspector::MeasuredPeaks> calibrateCudaDevice(int ordinal);

}  // namespace kiln::cli
