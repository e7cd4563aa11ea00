// Whether the current CUDA device runs Kiln's sm_90a kernels (wgmma: the INT8 convolution's
// wgmma tiles, fused_attention_wgmma.cu): compute capability 9.0 exactly (sm_90a code runs on
// no other) and a build that compiled them (KILN_HAVE_SM90A, engine/CMakeLists.txt). Asked of
// the device current on the calling thread; the answer is kept per device.
#pragma once

namespace kiln::cuda {

bool deviceRunsSm90a();

}  // namespace kiln::cuda
