// What a CUDA engine compiles or loads instead of compiling, held by one object per
// engine (issue 23: no process-wide registries): the NVRTC cubins of its generated
// kernels, and the cuDNN execution plans its layers chose (engine configuration and, for
// engines that compile at run time, the serialized plan). Engines share one only when
// given the same object (EngineOptions::compiledCode): a build shares one among its
// one-layer timing engines, so the plan stores what they compiled; an engine made from a
// plan starts with the plan's entries (engineOptionsForPlan), and a layer whose
// regenerated source or cuDNN graph has the key of one of them loads it instead of
// compiling or timing. Keys: kiln/generated_kernels.h.
//
// No CUDA types here. Implemented by kiln_cuda; in a build without the toolkit the object
// holds nothing, preloading keeps nothing and generatedKernelsForLayer() says that CUDA
// is unavailable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/generated_kernels.h"
#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln::cuda {

// The compiled code of one engine, or of the engines that share it. Thread-safe.
class CompiledCode {
 public:
  CompiledCode();
  ~CompiledCode();
  CompiledCode(const CompiledCode&) = delete;
  CompiledCode& operator=(const CompiledCode&) = delete;

  // Every cubin compiled or loaded here, in key order.
  std::vector<GeneratedKernelBinary> binaries() const;
  // A plan's entries, kept before the first run. Nothing is loaded here: a layer whose
  // source has one of these keys on this device's architecture loads the bytes instead of
  // compiling (and says "cubin from plan"); a cubin the driver refuses, or that lacks the
  // layer's kernels, is dropped and the source is compiled as without a plan. cuDNN
  // records (isCudnnPlanKey) are decoded, a damaged one dropped. Keys already here are
  // skipped.
  void preload(const std::vector<GeneratedKernelBinary>& entries);
  // The cuDNN execution plans that the layers named in `layers` chose here (engine, knobs,
  // and the serialized plan of engines that compile at run time), as plan entries of key
  // "<arch>:cudnn-plan:<hash>" whose bytes are the record, not a cubin.
  std::vector<GeneratedKernelBinary> cudnnRecordsForLayers(
      const std::vector<std::string>& layers) const;

  struct Stores;  // the backend's side (backends/cuda/compiled_code_stores.h)
  Stores& stores() const { return *m_stores; }

 private:
  std::unique_ptr<Stores> m_stores;
};

// The tag in the key of such a record, and whether a plan entry's key has it (a cuDNN
// execution-plan record, not a cubin).
inline constexpr const char* kCudnnPlanKeyTag = ":cudnn-plan:";
inline bool isCudnnPlanKey(const std::string& key) {
  return key.find(kCudnnPlanKeyTag) != std::string::npos;
}

// How many NVRTC compilations this process has run (a statistic for tests and logs).
int64_t nvrtcCompileCount();

// The generated kernels `node` loads when it runs on device `device` in an engine
// whose float32 values are stored as `floatType` (float32, float16 or bfloat16),
// with inputs of these model types and concrete shapes: found in `code` (a timing
// engine that shared it compiled them), or compiled now and kept there. Empty when the
// node generates no kernel (not a PointwiseChain, path "unfused", inputs the GPU kernel
// does not take, no elements). Errors: NVRTC's one-line compile error naming the layer,
// or no CUDA.
Result<std::vector<GeneratedKernelBinary>> generatedKernelsForLayer(
    CompiledCode& code, const Node& node, const std::vector<DataType>& inputTypes,
    const std::vector<Shape>& inputShapes, DataType floatType, int device);

}  // namespace kiln::cuda
