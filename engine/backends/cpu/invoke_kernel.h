// The one way to call a CPU kernel. A kernel sizes its outputs itself, often
// from attributes or data a model controls (pads, repeats, a shape input):
// KernelContext::allocateOutput and the Tensor constructor throw TensorSizeError
// when such a size fails its check (kiln/tensor_size.h), before allocating.
#pragma once

#include "backends/cpu/kernel.h"

namespace kiln::cpu {

// Runs `fn`; a TensorSizeError becomes the node's error (context.error()), so
// no kernel needs its own check. The executor, the tactic runner, shape
// inference's constant folding and the op tests all call kernels through here.
Status invokeKernel(KernelFn fn, KernelContext& context);

}  // namespace kiln::cpu
