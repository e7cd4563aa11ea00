// The CUDA backend's plan identity, from what probeCudaDevice() read. Pure host
// code: also built without the toolkit, where the device is simply unavailable.
#include "kiln/cuda_runtime.h"
#include "kiln/version.h"

namespace kiln::cuda {

PlanIdentity cudaPlanIdentity(const DeviceInfo& device) {
  PlanIdentity id;
  id.backend = "cuda";
  id.deviceName = device.available ? device.name : "no CUDA device (" + device.reason + ")";
  id.computeMajor = device.computeMajor;
  id.computeMinor = device.computeMinor;
  id.libraries["cudart"] = std::to_string(device.runtimeVersion);
  id.libraries["cudnn"] = std::to_string(device.cudnnVersion);
  id.libraries["cublasLt"] = std::to_string(device.cublasVersion);
  id.kilnVersion = kKilnVersion;
  return id;
}

}  // namespace kiln::cuda
