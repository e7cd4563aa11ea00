#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

void registerRnnKernels(KernelRegistry& registry) {}

}  // namespace kiln::cpu
