// The BuildRecord: every decision a build made, kept in the plan. Per engine layer:
// the ONNX nodes it came from, the precision and why, every tactic candidate with
// its measured time or the reason it was rejected, the winner, workspace and memory
// offsets. The inspector (kiln_inspector) turns it into reports; nothing else
// decides what the user sees.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/builder_config.h"
#include "kiln/data_type.h"
#include "kiln/passes.h"
#include "kiln/tensor.h"

namespace kiln {

// One implementation the builder considered for a layer at one precision.
struct TacticCandidate {
  std::string tactic;        // "cpu.conv.im2col_blas", "cuda.runtime", ...
  uint64_t tacticValue = 0;  // stable 64-bit id of `tactic` (TensorRT's TacticValue)
  std::string source;        // tacticSourceName(): "blas", "kiln", "cudnn", "cublaslt"
  DataType precision = DataType::kFloat32;
  double milliseconds = -1;  // median of the timed runs; -1 when not timed
  bool fromCache = false;    // the time came from the timing cache
  std::string rejected;      // empty when the candidate is valid; else why it is not
  std::string detail;        // what the backend says about it ("cudnn engine 12, 3 rivals")
  // The backend's own choice inside the tactic, in words its runtime takes back
  // ("cublaslt_gelu_tanh"): a plan's engine replays the winner's instead of choosing
  // again. "" when the layer made none.
  std::string choice;
};

// A tensor a layer reads or writes, at the first profile's opt shapes.
struct TensorRecord {
  std::string name;
  Shape dimensions;
  DataType type = DataType::kFloat32;       // the storage type in the engine
  std::string location = "Device";          // "Device", "Host" (a host-resident shape value)
  std::string format = "Row major linear";  // or kChannelsLastFormat
};
// The format of a tensor a channels-last layer stores NHWC (its dimensions as stored).
constexpr const char* kChannelsLastFormat = "Channels-last linear (NHWC)";

struct LayerRecord {
  std::string name;       // the engine layer's name ("Conv_12", later "Conv_12 + Relu_13")
  std::string layerType;  // TensorRT-style type ("Convolution", "MatrixMultiply", "Shuffle", ...)
  std::string opType;     // the ONNX op type it implements ("Conv")
  std::vector<std::string> sourceNodes;  // ONNX node display names, in graph order
  std::string fusion;                    // the pass that fused them; "" when none
  std::vector<TensorRecord> inputs;
  std::vector<TensorRecord> outputs;
  std::map<std::string, std::string> parameters;  // attributes, weight counts, in words

  DataType precision = DataType::kFloat32;   // compute precision chosen
  std::string precisionReason;               // "fastest of fp32/fp16", "obeys '*:fp16'", ...
  DataType outputType = DataType::kFloat32;  // storage type of its float outputs
  std::string tactic;
  uint64_t tacticValue = 0;
  std::string tacticSource;
  double milliseconds = -1;  // the winner's timed median (-1: untimed)
  // The winner's choice inside its tactic (TacticCandidate::choice): with the tactic and
  // precision it names the winning candidate when a tactic offered several choices.
  std::string choice;
  std::vector<TacticCandidate> candidates;
  int64_t workspaceBytes = 0;
  int64_t memoryOffset = -1;  // arena offset of its first output; -1: not in the arena
};

// How one top-level node runs in a built plan: the tactic the builder chose, its
// compute precision (float32 inputs rounded to it before the kernel runs) and the
// storage type of its float outputs (rounded to it, kept as float32 tensors).
struct LayerImplementation {
  std::string tactic;  // a CPU tactic name ("cpu.reference", "cpu.conv.direct", ...)
  DataType precision = DataType::kFloat32;
  DataType outputType = DataType::kFloat32;
};

struct TimingCacheStats {
  int lookups = 0;
  int hits = 0;
  double hitRate() const { return lookups ? static_cast<double>(hits) / lookups : 0.0; }
};

struct BuildRecord {
  std::string backend;  // "cpu", "cuda"
  std::string modelName;
  BuilderConfig config;  // what was asked for (callbacks, cache and replay pointers cleared)
  std::vector<LayerRecord> layers;
  std::vector<PassApplication> passes;        // every rewrite, in the order the passes made them
  std::vector<std::string> warnings;          // fallbacks under kPrefer, unreplayed layers, ...
  std::vector<std::string> unreplayedLayers;  // --load-tactics entries that did not apply
  TimingCacheStats timingCache;
  int candidatesTimed = 0;
  bool referenceRun = false;  // some layer needed real values: the CPU reference ran once
  double buildSeconds = 0;
  double timingSeconds = 0;
  int64_t activationBytes = 0;  // arena peak at the first profile's opt shapes
  int64_t activationBytesWithoutReuse = 0;
  int64_t weightBytes = 0;
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
};

// The candidate that won `layer`: its tactic, valid, with the layer's choice when the
// layer records one (plans before 11-30 do not), at the layer's precision when one is (a
// strongly typed layer records the type of its inputs, not the one timed); nullptr when
// none matches.
const TacticCandidate* winningCandidate(const LayerRecord& layer);

// Stable 64-bit id of a tactic name (FNV-1a), shown as TacticValue.
uint64_t tacticValueOf(const std::string& tactic);

// Whether `choice` is one a backend writes (TacticCandidate::choice): printable ASCII of at
// most kMaxChoiceBytes. Plans and timing caches holding any other are refused on load (a
// plan's engine acts on the choice and writes it into its implementation text).
constexpr size_t kMaxChoiceBytes = 1024;
// The most choices one tactic offers a layer (BuildBackend::lastTimingChoices); a timing
// cache entry listing more is refused on load.
constexpr size_t kMaxOfferedChoices = 64;
bool isWellFormedChoice(const std::string& choice);
// "0x00000000deadbeef", as trtexec prints TacticValue.
std::string tacticValueHex(uint64_t value);

}  // namespace kiln
