// Plan files (.kiln): a built engine on disk. Layout (little-endian):
//
//   bytes 0..7    magic "KILNPLAN"
//   u32           format version (kPlanFormatVersion)
//   u32           header bytes (kPlanHeaderBytes)
//   u64 x 8       offset and size of: metadata (JSON), model (ONNX ModelProto
//                 protobuf, weights external), weights (blobs, 64-byte aligned),
//                 generated kernels (may be empty; generated_kernel_section.cpp:
//                 u32 count, then per cubin its architecture, key, layer names
//                 and bytes, each with its length)
//   u64           FNV-1a 64 checksum of every byte after the header
//
// Version 1 (72-byte header, the first three sections) is still read, as a plan
// without generated kernels. The metadata holds the identity (device, compute
// capability, library versions), the optimization profiles and the BuildRecord.
// The generated kernels are NVRTC cubins for the identity's exact architecture
// (kiln/generated_kernels.h); a runtime preloads them so that the plan's
// PointwiseChain layers need not compile at their first run. The same section also
// holds cuDNN execution-plan records (key "<arch>:cudnn-plan:<hash>"; the bytes are a
// text record: engine, knobs, timings and, for engines that compile at run time, the
// serialized plan), which the runtime preloads the same way, so that channels-last
// INT8 layers neither time nor compile their cuDNN engine. A plan is untrusted
// input: every offset, size, count, checksum and field is checked, and any
// mismatch is a one-line error naming the file; nothing crashes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/build_record.h"
#include "kiln/builder_config.h"
#include "kiln/generated_kernels.h"
#include "kiln/graph.h"
#include "kiln/plan_identity.h"
#include "kiln/status.h"

namespace kiln {

struct PlanTrust;  // kiln/plan_signature.h

constexpr char kPlanMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};
constexpr uint32_t kPlanFormatVersion = 2;
constexpr uint32_t kPlanHeaderBytes = 88;
constexpr uint32_t kPlanHeaderBytesV1 = 72;  // format version 1: three sections
constexpr int64_t kPlanWeightAlignment = 64;

struct Plan {
  PlanIdentity identity;
  std::shared_ptr<const Network> network;  // the network as built (after passes)
  std::vector<OptimizationProfile> profiles;
  // What the runtime needs per top-level node, whatever the profiling verbosity.
  std::vector<LayerImplementation> layers;
  // What the inspector shows; trimmed to the build's profiling verbosity.
  BuildRecord record;
  // The NVRTC cubins the build generated for its layers at the first profile's opt
  // shapes (CUDA plans only; BuildBackend::generatedKernels()).
  std::vector<GeneratedKernelBinary> generatedKernels;
};

Result<std::string> serializePlan(const Plan& plan);
Status savePlan(const Plan& plan, const std::string& path);
// Checks the format (magic, version, offsets, checksum, metadata, model, kernels of the
// identity's architecture, profiles, layer precisions) but not the identity against
// this machine: the inspector may read a plan built elsewhere; a runtime calls
// checkPlanCompatible() before running it, then makes its engine with
// cuda::engineOptionsForPlan() (kiln/cuda_plan_options.h), whose CompiledCode holds
// plan.generatedKernels.
Result<Plan> deserializePlan(const std::string& bytes, const std::string& displayName);
// Reads, verifies (kiln/plan_signature.h) and deserializes a plan file; `trust`, when
// given, receives how the plan stood with the signature policy.
Result<Plan> loadPlanFile(const std::string& path, PlanTrust* trust = nullptr);
// True when the file starts with the plan magic (to tell .kiln from .onnx).
bool looksLikePlanFile(const std::string& path);

}  // namespace kiln
