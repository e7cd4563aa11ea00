// The CUDA runtime's registry of generated kernels (NVRTC cubins), process-wide and
// thread-safe. Every cubin this process compiles or loads from a plan is remembered
// with its key (kiln/generated_kernels.h), so a build can store it in the plan; a
// runtime preloads a plan's cubins, and a kernel whose regenerated source has the
// key of a preloaded cubin is loaded from those bytes instead of being compiled.
//
// No CUDA types here. Implemented by kiln_cuda; in a build without the toolkit the
// registry is empty, preloading keeps nothing and generatedKernelsForLayer() says
// that CUDA is unavailable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/generated_kernels.h"
#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln::cuda {

// Every cubin this process compiled or loaded (from a plan), in key order.
std::vector<GeneratedKernelBinary> generatedKernelBinaries();

// Hands a plan's cubins to the runtime before its first run. Nothing is loaded
// here: a layer whose source has one of these keys on this device's architecture
// loads the bytes instead of compiling (and says "cubin from plan"); a cubin the
// driver refuses, or that lacks the layer's kernels, is dropped and the source is
// compiled as without a plan. Keys already loaded or preloaded are skipped.
void preloadGeneratedKernels(const std::vector<GeneratedKernelBinary>& kernels);

// The cuDNN execution plans that the layers named in `layers` chose in this process
// (engine, knobs, and the serialized plan of engines that compile at run time), as
// plan entries of key "<arch>:cudnn-plan:<hash>" whose bytes are the record, not a
// cubin. preloadGeneratedKernels() takes them back: such a layer then neither times
// its candidates nor compiles. Empty without CUDA.
std::vector<GeneratedKernelBinary> cudnnPlanRecordsForLayers(
    const std::vector<std::string>& layers);

// The tag in the key of such a record, and whether a plan entry's key has it (a cuDNN
// execution-plan record, not a cubin).
inline constexpr const char* kCudnnPlanKeyTag = ":cudnn-plan:";
inline bool isCudnnPlanKey(const std::string& key) {
  return key.find(kCudnnPlanKeyTag) != std::string::npos;
}

// How many NVRTC compilations this process has run (for tests and logs).
int64_t nvrtcCompileCount();

// The generated kernels `node` loads when it runs on device `device` in an engine
// whose float32 values are stored as `floatType` (float32, float16 or bfloat16),
// with inputs of these model types and concrete shapes: compiled now, or found in
// this process's registry. Empty when the node generates no kernel (not a
// PointwiseChain, path "unfused", inputs the GPU kernel does not take, no elements).
// Errors: NVRTC's one-line compile error naming the layer, or no CUDA.
Result<std::vector<GeneratedKernelBinary>> generatedKernelsForLayer(
    const Node& node, const std::vector<DataType>& inputTypes,
    const std::vector<Shape>& inputShapes, DataType floatType, int device);

}  // namespace kiln::cuda
