// What every fuzz target shares: process setup (tensor caps small enough that an
// input claiming gigabytes is refused, not allocated) and a per-process scratch
// file for the readers whose public entry point takes a path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <map>

#include "kiln/reference_backend.h"

namespace kiln::fuzz {

// Graph inputs larger than this are not run (import and shapes still are).
constexpr int64_t kMaxRunInputBytes = int64_t{64} << 10;

// Per tensor; anything larger is the checked-size error path, which the unit tests
// cover, and would otherwise only exercise the allocator.
constexpr int64_t kFuzzMaxTensorBytes = int64_t{64} << 20;

// Lowers the tensor limits (kiln/tensor_size.h) for the process. This library's
// LLVMFuzzerInitialize calls it, so every target linking it starts that way.
void initFuzzProcess();

// Writes `data` to this process's scratch file ending in `suffix` (".npy", ".json")
// and returns its path. The file is rewritten on every call; a write failure aborts
// (the harness, not the engine, is broken then).
std::string writeScratchFile(const uint8_t* data, size_t size, const std::string& suffix);

// Reads every byte of the tensor's storage (strings: every string), so that a
// storage smaller than its shape claims is an ASan report here, in the harness.
void touchTensor(const Tensor& tensor);

// Adds seeded random data for `input` at `shape` to `inputs`; false when the shape
// is invalid or larger than kMaxRunInputBytes (then the network is not run).
bool addRandomInput(const ValueInfo& input, const Shape& shape,
                    std::map<std::string, Tensor>* inputs);

// Runs `network` on the CPU reference backend and touches every output.
void runReference(const Network& network, const std::map<std::string, Tensor>& inputs,
                  const ReferenceRunOptions& options = {});

}  // namespace kiln::fuzz
