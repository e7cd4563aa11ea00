// Cross-backend tests for the attention_spatial ops: CUDA engine vs CPU reference.
#include "gpu/gpu_op_test.h"

namespace kiln::test {
namespace {

}  // namespace
}  // namespace kiln::test
