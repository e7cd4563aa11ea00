#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

void registerQuantizeKernels(KernelRegistry& registry) {}

}  // namespace kiln::cpu
