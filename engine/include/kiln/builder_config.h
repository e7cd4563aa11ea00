// What a build may do: precisions, per-layer constraints, optimization profiles,
// tactic sources, search effort, and the hooks a caller uses to follow and cancel
// it. Mirrors TensorRT's IBuilderConfig and trtexec's flags (see trtexecCommandLine()
// in kiln/builder.h for the mapping).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/data_type.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

class TimingCache;
struct TacticReplay;
struct CalibrationTable;

// How per-layer precision and output-type rules bind (TensorRT guide 6.5.2).
enum class ConstraintMode {
  kNone,    // rules are ignored; the builder picks what is fastest among the enabled precisions
  kPrefer,  // rules win where the layer can run that way; otherwise a warning and a fallback
  kObey,    // rules must hold; a layer that cannot run that way fails the build, named
};
const char* constraintModeName(ConstraintMode mode);
bool parseConstraintMode(const std::string& text, ConstraintMode* out);

// One rule of a --layer-precisions / --layer-output-types spec: "*" matches every
// layer, anything else one layer by its name (the ONNX node's display name).
struct LayerPrecisionRule {
  std::string pattern;
  DataType precision = DataType::kFloat32;
};

// Parses trtexec's spec syntax "*:fp16,Conv_3:fp32" (fp32, fp16, bf16, int8, fp8).
// Later rules win over earlier ones for the layers they both match; an exact name
// wins over "*" whatever the order.
Result<std::vector<LayerPrecisionRule>> parseLayerPrecisionSpec(const std::string& spec);
std::string layerPrecisionSpecToString(const std::vector<LayerPrecisionRule>& rules);
// "fp32", "fp16", "bf16", "int8", "fp8" as the spec writes them; dataTypeName() otherwise.
std::string precisionSpelling(DataType type);
// The rule that applies to `layerName`, or nullptr.
const LayerPrecisionRule* findLayerRule(const std::vector<LayerPrecisionRule>& rules,
                                        const std::string& layerName);
// The same for a layer known by several names: its own and those of the ONNX nodes
// fused into it (a rule written for "Conv_3" still applies to "Conv_3 + Relu_4").
const LayerPrecisionRule* findLayerRule(const std::vector<LayerPrecisionRule>& rules,
                                        const std::vector<std::string>& layerNames);

// Where tactics come from. The builder only times tactics whose source is enabled.
enum TacticSource : uint32_t {
  kTacticCudnn = 1u << 0,     // cuDNN engine configurations (CUDA)
  kTacticCublasLt = 1u << 1,  // cuBLASLt algorithms (CUDA)
  kTacticKiln = 1u << 2,      // Kiln's own kernels (CUDA kernels, CPU reference and loop kernels)
  kTacticBlas = 1u << 3,      // the host BLAS library (CPU backend)
  kAllTacticSources = kTacticCudnn | kTacticCublasLt | kTacticKiln | kTacticBlas,
};
const char* tacticSourceName(uint32_t source);
// Parses trtexec's "--tacticSources=-CUDNN,+CUBLAS_LT" style (also lower case and
// Kiln's "kiln", "blas") applied to `base`.
Result<uint32_t> parseTacticSources(const std::string& spec, uint32_t base = kAllTacticSources);
std::string tacticSourcesToString(uint32_t sources);

// How much the plan remembers about its layers for the inspector (TensorRT's
// ProfilingVerbosity): kNone keeps only the layer count and the bindings,
// kLayerNamesOnly names and types, kDetailed everything (shapes, formats,
// parameters, tactics and every candidate).
enum class ProfilingVerbosity { kNone, kLayerNamesOnly, kDetailed };
const char* profilingVerbosityName(ProfilingVerbosity verbosity);
bool parseProfilingVerbosity(const std::string& text, ProfilingVerbosity* out);

// min/opt/max of one dynamic input. Tactics are timed at `opt` and must hold for
// every shape in [min, max] (element-wise).
struct ShapeRange {
  Shape min, opt, max;
};
// One optimization profile: a range per dynamic input (inputs with only fixed dims
// need no entry).
struct OptimizationProfile {
  std::map<std::string, ShapeRange> inputs;
};
// Ok when `shape` lies inside the profile's range for `input`; otherwise an error
// naming the input, the shape and the allowed range.
Status checkShapeInProfile(const OptimizationProfile& profile, int profileIndex,
                           const std::string& input, const Shape& shape);

// One step of a build, reported to BuildCallbacks::onProgress.
struct BuildProgress {
  std::string phase;  // "shapes", "timing", "kernels", "memory", "plan"
  int done = 0;
  int total = 0;
  std::string item;  // the layer being timed, when there is one
};

struct BuildCallbacks {
  std::function<void(const BuildProgress&)> onProgress;  // called from the building thread
  std::function<void(const std::string&)> onWarning;     // also recorded in the BuildRecord
  const std::atomic<bool>* cancel = nullptr;             // polled between layers
};

struct BuilderConfig {
  // Precisions the builder may choose from; FP32 is always allowed.
  bool tf32 = true;  // float32 GEMMs/convolutions may use TF32 tensor cores (CUDA)
  bool fp16 = false;
  bool bf16 = false;
  // INT8 layers: implicit (activation ranges from `calibration`, weights per channel)
  // or explicit (the model's QuantizeLinear/DequantizeLinear pairs, which fold
  // whether or not this is set). Layers without an INT8 implementation fall back.
  bool int8 = false;
  // FP8 layers, explicit only: the model's float8e4m3fn QuantizeLinear/DequantizeLinear
  // around GEMMs fold into Fp8MatMul whether or not this is set; set, a model without
  // them is refused. CUDA runs them on compute capability >= 8.9 (else host fallback).
  bool fp8 = false;

  // Strongly typed (trtexec's --stronglyTyped, TensorRT 11): the model's tensor types
  // are the precisions. Each layer computes in the float type its inputs carry (a
  // strongly typed export's Casts and fp16 weights set them) and runs as the graph types
  // it, without rounding; fp16/bf16/int8/fp8 and precision rules must be off (the
  // model's Q/DQ still fold). The CPU backend runs such a plan; CUDA does not yet.
  bool stronglyTyped = false;

  // The activation ranges of an implicit INT8 build (a loaded `kiln calibrate` cache,
  // kiln/calibration.h); not owned. Its path is kept for the command lines a plan's
  // record reproduces ("" when the table did not come from a file).
  const CalibrationTable* calibration = nullptr;
  std::string calibrationCachePath;

  ConstraintMode precisionConstraints = ConstraintMode::kNone;
  std::vector<LayerPrecisionRule> layerPrecisions;   // compute precision per layer
  std::vector<LayerPrecisionRule> layerOutputTypes;  // storage type of each layer's outputs

  // 0: no timing, each layer takes its first (heuristic) tactic at the lowest
  // enabled precision; 1..5: every supported candidate is timed, with more
  // iterations per candidate as the level rises (see tacticTimingIterations()).
  int optimizationLevel = 3;
  int64_t workspaceLimitBytes = 1LL << 30;  // a tactic needing more scratch is rejected
  uint32_t tacticSources = kAllTacticSources;
  // Kiln keeps everything by default (TensorRT defaults to layer names only).
  ProfilingVerbosity profilingVerbosity = ProfilingVerbosity::kDetailed;

  // At least one profile per build when the network has dynamic inputs; the first
  // profile's opt shapes are the ones the timings (and the report's shapes) use.
  std::vector<OptimizationProfile> profiles;

  // Graph passes (kiln/passes.h) not to run, by name.
  std::vector<std::string> disabledPasses;

  TimingCache* timingCache = nullptr;    // read and extended when set
  const TacticReplay* replay = nullptr;  // pins tactics of named layers when set
  uint64_t seed = 1;                     // random timing inputs
  BuildCallbacks callbacks;
};

// Timed iterations per candidate at an optimization level (after one warm-up run).
int tacticTimingIterations(int optimizationLevel);

}  // namespace kiln
