#include "backends/cpu/ops/op_utils.h"

namespace kiln::cpu {

void registerMatMulKernels(KernelRegistry& registry) {}

}  // namespace kiln::cpu
