// Plan identities and the compatibility rule between a plan and this machine.
#include "kiln/plan_identity.h"

#include <cblas.h>

#include <fstream>

#include "kiln/version.h"

namespace kiln {
namespace {

std::string hostCpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "host CPU";
}

std::string describeDevice(const PlanIdentity& id) {
  std::string text = id.deviceName;
  if (id.computeMajor > 0)
    text += " (sm_" + std::to_string(id.computeMajor) + std::to_string(id.computeMinor) + ")";
  return text;
}

}  // namespace

PlanIdentity cpuPlanIdentity() {
  PlanIdentity id;
  id.backend = "cpu";
  id.deviceName = hostCpuName();
#ifdef OPENBLAS_VERSION
  id.libraries["blas"] = openblas_get_config();
#else
  id.libraries["blas"] = "cblas";
#endif
  id.kilnVersion = kKilnVersion;
  return id;
}

Status checkPlanCompatible(const PlanIdentity& built, const PlanIdentity& current) {
  auto mismatch = [](const std::string& what) {
    return Status(StatusCode::kUnsupported, what + "; rebuild the plan here (kiln build)");
  };
  if (built.backend != current.backend) {
    return mismatch("plan was built for the " + built.backend + " backend, not " + current.backend);
  }
  if (built.kilnVersion != current.kilnVersion) {
    return mismatch("plan was built by Kiln " + built.kilnVersion + ", this is Kiln " +
                    current.kilnVersion);
  }
  if (built.backend == "cpu") return Status::ok();
  if (built.deviceName != current.deviceName || built.computeMajor != current.computeMajor ||
      built.computeMinor != current.computeMinor) {
    return mismatch("plan was built for " + describeDevice(built) + ", this device is " +
                    describeDevice(current));
  }
  for (const auto& [library, version] : built.libraries) {
    auto it = current.libraries.find(library);
    const std::string here = it == current.libraries.end() ? "missing" : it->second;
    if (here != version) {
      return mismatch("plan was built with " + library + " " + version + ", this machine has " +
                      here);
    }
  }
  return Status::ok();
}

}  // namespace kiln
