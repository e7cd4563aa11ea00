// Plan files (.kiln): a built engine on disk. Layout (little-endian):
//
//   bytes 0..7    magic "KILNPLAN"
//   u32           format version (kPlanFormatVersion)
//   u32           header bytes (kPlanHeaderBytes)
//   u64 x 6       offset and size of: metadata (JSON), model (ONNX ModelProto
//                 protobuf, weights external), weights (blobs, 64-byte aligned)
//   u64           FNV-1a 64 checksum of every byte after the header
//
// The metadata holds the identity (device, compute capability, library versions),
// the optimization profiles and the BuildRecord. A plan is untrusted input: every
// offset, size, checksum and field is checked, and any mismatch is a one-line
// error naming the file; nothing crashes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/build_record.h"
#include "kiln/builder_config.h"
#include "kiln/graph.h"
#include "kiln/plan_identity.h"
#include "kiln/status.h"

namespace kiln {

constexpr char kPlanMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};
constexpr uint32_t kPlanFormatVersion = 1;
constexpr uint32_t kPlanHeaderBytes = 72;
constexpr int64_t kPlanWeightAlignment = 64;

struct Plan {
  PlanIdentity identity;
  std::shared_ptr<const Network> network;  // the network as built (after passes)
  std::vector<OptimizationProfile> profiles;
  // What the runtime needs per top-level node, whatever the profiling verbosity.
  std::vector<LayerImplementation> layers;
  // What the inspector shows; trimmed to the build's profiling verbosity.
  BuildRecord record;
};

Result<std::string> serializePlan(const Plan& plan);
Status savePlan(const Plan& plan, const std::string& path);
// Checks the format (magic, version, offsets, checksum, metadata, model) but not
// the identity: the inspector may read a plan built elsewhere; a runtime calls
// checkPlanCompatible() before running it.
Result<Plan> deserializePlan(const std::string& bytes, const std::string& displayName);
Result<Plan> loadPlanFile(const std::string& path);
// True when the file starts with the plan magic (to tell .kiln from .onnx).
bool looksLikePlanFile(const std::string& path);

}  // namespace kiln
