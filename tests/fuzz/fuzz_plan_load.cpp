// Fuzz target: the plan loader (deserializePlan), then, for a plan whose inputs are
// small, a CPU reference run of its network with the plan's layer choices.
//
// A plan carries an FNV-1a checksum of everything after its header, so nearly every
// byte mutation would stop at the checksum test. The harness recomputes it first (as a
// hostile plan's author would), and the custom mutator (plan_mutator.h) changes the
// metadata's values and the model's structure and re-lays the sections, so the loader's
// field checks are reached; the checksum test itself is a comparison the unit tests cover.
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "common/fnv1a.h"
#include "fuzz_support.h"
#include "plan_mutator.h"
#include "kiln/plan.h"
#include "kiln/reference_backend.h"
#include "kiln/tensor_size.h"

namespace {

// Rewrites the checksum field of a plan header (format 1 or 2) to match the body.
void fixChecksum(std::string* bytes) {
  if (bytes->size() < 16 || std::memcmp(bytes->data(), kiln::kPlanMagic, 8) != 0) return;
  uint32_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes->data() + 12, sizeof(headerBytes));
  if (headerBytes != kiln::kPlanHeaderBytes && headerBytes != kiln::kPlanHeaderBytesV1) return;
  if (bytes->size() < headerBytes) return;
  const uint64_t checksum = kiln::fnv1a64(bytes->data() + headerBytes, bytes->size() - headerBytes);
  std::memcpy(bytes->data() + headerBytes - 8, &checksum, sizeof(checksum));
}

// The first profile's opt shape per dynamic input, the declared dims otherwise.
bool makeInputs(const kiln::Plan& plan, std::map<std::string, kiln::Tensor>* inputs) {
  for (const kiln::ValueInfo& input : plan.network->graph.inputs) {
    kiln::Shape shape;
    const auto* range = plan.profiles.empty() ? nullptr : &plan.profiles[0].inputs;
    if (range && range->count(input.name)) {
      shape = range->at(input.name).opt;
    } else {
      for (const kiln::DimExpr& dim : input.shape) {
        if (!dim.isConst()) return false;
        shape.push_back(dim.constValue());
      }
    }
    if (!kiln::fuzz::addRandomInput(input, shape, inputs)) return false;
  }
  return true;
}

}  // namespace

// Structure-aware (plan_mutator.h): metadata values, the model, the weights and kernels,
// re-laid with a correct header.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  return kiln::fuzz::mutatePlan(data, size, maxSize, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  fixChecksum(&bytes);
  auto plan = kiln::deserializePlan(bytes, "fuzz.kiln");
  if (!plan.isOk() || !plan.value().network) return 0;
  std::map<std::string, kiln::Tensor> inputs;
  if (!makeInputs(plan.value(), &inputs)) return 0;
  kiln::ReferenceRunOptions options;
  options.layerImplementations = plan.value().layers;
  kiln::fuzz::runReference(*plan.value().network, inputs, options);
  return 0;
}
