#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

void registerPoolKernels(KernelRegistry& registry) {}

}  // namespace kiln::cpu
