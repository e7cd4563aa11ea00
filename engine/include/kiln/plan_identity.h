// What a plan was built for: backend, device and library versions. A plan runs
// only where its identity matches (timings and cubins are device-exact).
#pragma once

#include <map>
#include <string>

#include "kiln/status.h"

namespace kiln {

struct PlanIdentity {
  std::string backend;     // "cpu" or "cuda"
  std::string deviceName;  // "NVIDIA H100 80GB HBM3", or the host CPU's model name
  int computeMajor = 0;    // CUDA compute capability (0 for the CPU)
  int computeMinor = 0;
  std::map<std::string, std::string> libraries;  // "cudnn" -> "91400", "blas" -> "openblas"
  std::string kilnVersion;
};

// The identity of the CPU backend on this host.
PlanIdentity cpuPlanIdentity();
// Ok when a plan built for `built` may run on `current`; otherwise a one-line error
// naming what differs ("plan built for NVIDIA H100 (sm_90), this device is ...").
// The CPU backend runs any CPU plan (its kernels are portable), so only the
// backend and Kiln's version are compared there.
Status checkPlanCompatible(const PlanIdentity& built, const PlanIdentity& current);

}  // namespace kiln
