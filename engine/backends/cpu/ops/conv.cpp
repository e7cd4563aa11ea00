#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

void registerConvKernels(KernelRegistry& registry) {}

}  // namespace kiln::cpu
