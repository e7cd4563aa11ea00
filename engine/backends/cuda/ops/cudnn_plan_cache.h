// The cuDNN execution plans Kiln's fused graphs chose, kept by an engine's CompiledCode
// (kiln/cuda_generated_kernels.h; thread-safe), keyed by the graph (its text: shapes,
// types, epilogue; never device pointers or scale values). A layer that meets a graph
// some other layer or context of the engines sharing the store already timed builds the
// winner again instead of timing every candidate; a plan file carries the records of its
// layers (stored with the generated kernels, key "<arch>:cudnn-plan:<hash>"), so a
// runtime neither times nor, for engines that compile at run time, compiles again: such
// engines serialize their execution plan (cuDNN's JSON form, which holds the compiled
// kernel) and it is restored as is.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/ops/cudnn_conv.h"
#include "kiln/generated_kernels.h"

namespace kiln::cuda {

struct CudnnPlanRecord {
  CudnnEngineChoice choice;
  std::string json;     // the serialized execution plan; "" when the engine has none
  std::string timings;  // each candidate's time when the choice was made
  // An INT8 layer's race of this plan against Kiln's kernel and cuBLASLt's GEMM
  // (int8_conv_race.cpp): "" not run, else the winner ("cudnn", "gemm", "mma:<tile>")
  // and every candidate's time.
  std::string raceWinner, raceTimings;
  bool fromPlanFile = false;
};

// The records of one CompiledCode, and the layers that used each.
struct CudnnPlanStore {
  struct Entry {
    CudnnPlanRecord record;
    std::set<std::string> layers;
  };
  std::mutex mutex;
  std::map<std::string, Entry> entries;  // by key
};

// The key of `graphText` on this device ("sm_90:cudnn-plan:<FNV-1a 64, 16 hex>";
// the cuDNN version is part of the hashed text). Errors: no device.
Result<std::string> cudnnPlanKey(const std::string& graphText);

// The record of `key`, or false.
bool findCudnnPlanRecord(CudnnPlanStore& store, const std::string& key, CudnnPlanRecord* record);
// Keeps `record` for `key` (a later call for the same key only adds `layer`).
void rememberCudnnPlanRecord(CudnnPlanStore& store, const std::string& key,
                             const CudnnPlanRecord& record, const std::string& layer);

// Keeps `plan` as the record of `key` for `layer` (its serialized form when it is
// runtime-compiled, so that neither a later layer nor the plan file's runtime compiles it
// again); `timings` says how it was chosen.
void rememberCudnnPlan(CudnnPlanStore& store, const std::string& key, const CudnnPlan& plan,
                       const std::string& layer, const std::string& timings = "");

// The plan of a layer's recorded engine configuration (a plan's choice, layer_choice.h) for
// `graph`, built without timing: the serialized plan of the record of `key` when it holds
// the same engine (no compile; the record then names `layer` too), else `choice` finalized
// here; kUnsupported with the reason when cuDNN does not finalize it or it needs more than
// `workspaceLimit` bytes. One finalized here that compiled at run time is recorded for `key`
// and `layer`, so the plan file saved next carries it. `key` "": a graph without records
// (the plain convolution).
Result<std::shared_ptr<CudnnPlan>> planOfRecordedChoice(CudnnPlanStore& store, cudnnHandle_t handle,
                                                        cudnnBackendDescriptor_t graph,
                                                        const std::string& key,
                                                        const CudnnEngineChoice& choice,
                                                        int64_t workspaceLimit,
                                                        const std::string& layer);

// Adds the race's winner and times to the record of `key` (nothing without a record).
void rememberRaceWinner(CudnnPlanStore& store, const std::string& key, const std::string& winner,
                        const std::string& timings);

// The execution plan of `record` for `graph`: its serialized form when it has one
// and cuDNN takes it back, else the engine and knobs finalized again.
Result<std::unique_ptr<CudnnPlan>> planFromRecord(cudnnHandle_t handle,
                                                  cudnnBackendDescriptor_t graph,
                                                  const CudnnPlanRecord& record);
// cuDNN's serialized form of `plan` ("" when the engine does not serialize).
std::string serializeCudnnPlan(const CudnnPlan& plan);

// Plan-file side: the records used by any of `layers`, as plan entries (whether a key
// is a record's: isCudnnPlanKey in kiln/cuda_generated_kernels.h); taking a plan's entry
// back (a damaged one is dropped: its layer times its candidates as without a plan).
std::vector<GeneratedKernelBinary> cudnnPlanEntries(CudnnPlanStore& store,
                                                    const std::set<std::string>& layers);
void preloadCudnnPlanEntry(CudnnPlanStore& store, const GeneratedKernelBinary& entry);

// The entry bytes of a record, and back (untrusted input: false when damaged).
std::vector<char> encodeCudnnPlanRecord(const CudnnPlanRecord& record);
bool decodeCudnnPlanRecord(const std::vector<char>& bytes, CudnnPlanRecord* record);

}  // namespace kiln::cuda
