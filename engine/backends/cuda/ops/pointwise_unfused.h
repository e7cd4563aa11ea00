// The unfused candidate of an ai.kiln PointwiseChain: each step of the program run as
// the ONNX node it was fused from (Add, Relu, Clip at opset 6 with attribute bounds,
// ...) by that op's registered CUDA kernel, one launch per step, with each
// intermediate written to the layer's workspace in its storage type, as the unfused
// graph would. pointwise_chain.cpp times it against the generated kernel: fusion is
// not always faster (DESIGN.md, idea 3), so the builder keeps whichever wins.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "ir/pointwise_program.h"

namespace kiln::cuda {

class UnfusedPointwiseChain {
 public:
  ~UnfusedPointwiseChain();

  // Plans the steps for the context's current input shapes and storage types and
  // uploads the inlined constants (a synchronous copy: call outside graph capture).
  // kUnsupported, with the reason, when some step's op has no CUDA kernel for its types.
  static Result<std::unique_ptr<UnfusedPointwiseChain>> create(GpuKernelContext& ctx,
                                                               const PointwiseProgram& program);

  // Runs every step on ctx's stream; the last writes `output` (the layer's output 0).
  Status run(GpuKernelContext& ctx, const DeviceTensor& output);
  size_t kernelCount() const;

 private:
  struct Step;
  UnfusedPointwiseChain() = default;
  std::vector<Step> m_steps;
  std::vector<DeviceTensor> m_values;  // inputs, then step results (data set per run)
  void* m_constants = nullptr;         // device copies of the inlined constants
  size_t m_workspaceBytes = 0;
};

}  // namespace kiln::cuda
