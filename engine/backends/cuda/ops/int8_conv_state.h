// What the channels-last INT8 convolution's two files share (internal to them): the
// per-layer state that int8_conv_cudnn.cpp builds and runs, and the race of cuBLASLt's
// GEMM and Kiln's MMA kernel against the chosen cuDNN plan (int8_conv_race.cpp).
// Not an interface for other kernels: the public entry is int8_conv_cudnn.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/int8_conv_mma.h"
#include "backends/cuda/ops/int8_pointwise_gemm.h"

namespace kiln::cuda::int8conv {

// One QuantizedConv layer's choice, kept in the context's layer state: the fused
// graph's shape and epilogue, its device constants and plan, and, when one beat the
// plan, the GEMM or MMA tile that runs instead. Rebuilt when the geometry changes.
struct CudnnInt8State {
  ConvGeometry geometry;
  DataType yType = DataType::kInt8;
  DataType zType = DataType::kFloat32;  // the engine's float storage, or int8 (z_scale)
  bool residual = false;
  bool quantizedOutput = false;
  bool scaledOutput = false;  // the graph ends with * o (int8 Y or int8 Z)
  bool relu = false;
  DeviceBuffer scale, bias, outScale;  // float [K], [K], [1]
  std::shared_ptr<CudnnPlan> plan;
  float planMs = -1;  // the plan's time when it was timed in this context
  // A 1x1 layer's cuBLASLt GEMM (int8_pointwise_gemm.h) or a tile of Kiln's MMA
  // kernel (int8_conv_mma.h) when one beat the plan: alpha = scale * o, bias * o and
  // beta = o, in units of Y's scale.
  std::shared_ptr<Int8PointwiseGemm> gemm;
  int kilnTile = -1;
  Int8ConvMmaShape mmaShape;
  DeviceBuffer gemmAlpha, gemmBias;
  float gemmBeta = 0.f;
  std::vector<float> hostScale, hostBias;  // kept until the choice is made
  float hostOutScale = 1.f;
};

// Allocates `buffer` for `host` and copies it there, synchronously. `what` names the
// buffer in errors (allocation or copy).
inline Status uploadFloats(DeviceBuffer* buffer, const std::vector<float>& host, const char* what) {
  KILN_RETURN_IF_ERROR(buffer->allocate(static_cast<int64_t>(host.size() * sizeof(float)), what));
  // Once per shape, at the first enqueue: a synchronous copy keeps `host` simple.
  KILN_CUDA_CHECK(
      cudaMemcpy(buffer->data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return Status::ok();
}

// Y int8 and Z int8 or absent, one group, 2-D: the layers Kiln's own kernels and
// cuBLASLt's GEMM may take.
bool int8EpilogueLayer(const CudnnInt8State& s);

// cuBLASLt's GEMM (1x1 layers) and the tiles of Kiln's MMA kernel timed against the
// chosen plan; the fastest runs (`forced`: "gemm" or "mma" takes the fastest of that
// kind when it exists). `how` gains every time. Needs s->plan and the host scales
// (hostScale, hostBias, hostOutScale); sets gemmAlpha, gemmBias, gemmBeta, mmaShape,
// planMs (when not yet timed) and, for a winner other than the plan, gemm or
// kilnTile. x, w, z and y are the layer's buffers, written while timing.
// Unforced, a race recorded for the graph `key` (`earlier`, or null) is taken as it
// is, without timing, when its winner still applies; else the race runs and its
// winner is recorded for `key` (cudnn_plan_cache.h: it travels in the plan file).
Status raceTheOtherKernels(GpuKernelContext& ctx, cudnnHandle_t handle,
                           const CudnnBindings& bindings, const DeviceTensor& x,
                           const DeviceTensor& w, const void* z, void* y, const std::string& forced,
                           const std::string& key, const CudnnPlanRecord* earlier,
                           CudnnInt8State* s, std::string* how);

// A recorded race that cuBLASLt's GEMM or Kiln's kernel won, taken without cuDNN's plan
// (a plan file's layer then loads without restoring or finalizing cuDNN's execution
// plan): sets what raceTheOtherKernels sets for that winner, and appends the record's
// race to `how`. False (nothing adopted, s->gemm and kilnTile untouched) when the record
// has no race, cuDNN won it, or its winner no longer applies here; the caller then
// takes the plan path. Needs the host scales, as raceTheOtherKernels.
Result<bool> adoptRecordedWinner(GpuKernelContext& ctx, const CudnnPlanRecord& record,
                                 CudnnInt8State* s, std::string* how);

// A plan's recorded race winner ("gemm", "mma:<tile>": layer_choice.h) set up for `s`
// without timing and without cuDNN's plan; false when it is "cudnn" or does not apply to
// this layer (not an int8-epilogue layer, no cuBLASLt algorithm, no such tile). Needs the
// host scales, as raceTheOtherKernels.
Result<bool> adoptPlannedWinner(GpuKernelContext& ctx, const std::string& winner,
                                CudnnInt8State* s);

}  // namespace kiln::cuda::int8conv
