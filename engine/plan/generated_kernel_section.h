// The plan's generated-kernel section (format version 2; kiln/plan.h has the
// layout): the NVRTC cubins a CUDA build made for its layers. Internal to kiln_engine.
#pragma once

#include <string>
#include <vector>

#include "kiln/generated_kernels.h"
#include "kiln/plan_identity.h"
#include "kiln/status.h"

namespace kiln::plan {

std::string encodeGeneratedKernels(const std::vector<GeneratedKernelBinary>& kernels);

// Reads the section's bytes as untrusted input: every count and length is checked
// against what is left, and each cubin must be for the identity's architecture.
// Errors are one line without the file name ("generated-kernel section is damaged:
// ..."); the caller prepends it.
Result<std::vector<GeneratedKernelBinary>> decodeGeneratedKernels(const std::string& bytes,
                                                                  const PlanIdentity& identity);

}  // namespace kiln::plan
