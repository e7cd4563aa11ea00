// einsum.cpp: filled by its op family owner.
#include "backends/cpu/ops/op_utils.h"
