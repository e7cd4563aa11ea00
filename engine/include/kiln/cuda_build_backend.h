// The CUDA backend's side of the builder: each layer is timed as its own small
// engine on the device (warm-up, then CUDA events over the runs), so the time
// includes the runtime's own choice among its library algorithms, which the
// candidate's detail names. One compute precision per engine (the CUDA runtime
// stores every float tensor in one type), so the builder picks it network-wide.
#pragma once

#include <memory>

#include "kiln/build_backend.h"
#include "kiln/builder_config.h"
#include "kiln/status.h"

namespace kiln::cuda {

// kUnsupported with the reason when the build has no CUDA or no device is usable.
// `config` supplies TF32 and the workspace limit the timed engines run under.
Result<std::unique_ptr<BuildBackend>> createCudaBuildBackend(int device,
                                                             const BuilderConfig& config);

}  // namespace kiln::cuda
