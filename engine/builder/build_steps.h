// The builder's steps, each in its own file; buildPlan() (builder.cpp) runs them
// in order. Internal to kiln_engine.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/build_backend.h"
#include "kiln/builder.h"
#include "kiln/timing_cache.h"

namespace kiln::build {

// Type and concrete shape of a value at the first profile's opt shapes, from
// shape inference (or from a reference run where shapes depend on data).
struct ValueMeta {
  DataType type = DataType::kUndefined;
  Shape shape;  // -1 for a dim that depends on data
  bool shapeKnown = false;
};
using ValueMetas = std::map<std::string, ValueMeta>;

// Types, shapes and timing inputs of every layer at the first profile's opt shapes
// (timing_inputs.cpp says how they are made).
class TimingInputs {
 public:
  TimingInputs(const Network& network, std::map<std::string, Shape> optShapes, uint64_t seed);
  // Shape inference at the opt shapes: types, shapes, folded constant values.
  Status inferShapes();
  const ValueMetas& metas() const { return m_metas; }
  // The node's inputs for timing: synthetic unless `exact` or the node needs real
  // values, in which case the reference run is made (once). Valid until the next call.
  Result<const LayerInputs*> forNode(const Node& node, bool exact);
  // True when `node` cannot be timed on synthetic inputs (it reads outer-scope
  // values, or an input's shape depends on data); prepareExact() then runs the
  // reference, which also settles the shapes its cache key is made of.
  bool needsExact(const Node& node) const;
  Status prepareExact() { return runReference(); }
  bool lastWasSynthetic() const { return m_lastWasSynthetic; }
  bool ranReference() const { return m_reference.has_value(); }

  // Synthetic inputs repeat one seeded random block of this many elements per type (an
  // odd count, so rows of power-of-two widths do not all see the same values); their
  // cache is dropped at the next forNode() once it holds more than kSyntheticCacheBytes.
  static constexpr int64_t kRandomBlockElements = (int64_t{1} << 20) + 7;
  static constexpr size_t kSyntheticCacheBytes = size_t{2} << 30;

 private:
  Status runReference();
  const Tensor& syntheticTensor(const ValueMeta& meta);
  // A tensor of `shape` filled by repeating the type's random block.
  Tensor repeatedRandom(DataType type, const Shape& shape);

  const Network& m_network;
  std::map<std::string, Shape> m_optShapes;
  uint64_t m_seed;
  ValueMetas m_metas;
  std::map<std::string, Tensor> m_folded;
  std::set<std::string> m_constants;
  std::optional<std::map<std::string, Tensor>> m_reference;
  LayerInputs m_current;
  std::map<std::string, Tensor> m_synthetic;  // by type and shape
  size_t m_syntheticBytes = 0;
  std::map<DataType, Tensor> m_randomBlocks;  // kRandomBlockElements seeded values each
  bool m_lastWasSynthetic = false;
};

// Checks the profiles against the network (every dynamic input covered, ranks and
// fixed dims agree, min <= opt <= max, shapes infer at min and max) and returns
// the first profile's opt shape per input (fixed inputs included).
Result<std::map<std::string, Shape>> resolveProfiles(
    const Network& network, const std::vector<OptimizationProfile>& profiles);
// The part of resolveProfiles() that needs no shape inference, also run on every
// plan load: each range names an input, one rank for min/opt/max (the declared
// one), 0 <= min <= opt <= max, fixed dims as the model's, a max shape within the
// tensor size limits (kiln/tensor_size.h).
Status validateProfiles(const Network& network, const std::vector<OptimizationProfile>& profiles);

// Gives each dynamic graph input that every profile pins to one shape (min == opt ==
// max, the same in each profile; `kiln run --shapes` makes such profiles) that shape as
// constant dims, so the exporters' shape subgraphs (Shape, Gather, Concat, Range,
// Equal, Where on the input dims) fold into constants and the fusion patterns see
// static shapes. Inputs whose range is not fixed, or whose rank disagrees, are left
// as they are (resolveProfiles reports them). Returns the names of the inputs fixed.
std::vector<std::string> fixPinnedInputs(Network& network,
                                         const std::vector<OptimizationProfile>& profiles);

// The precisions a layer may be timed in, and why, after flags and constraints.
struct PrecisionChoice {
  std::vector<DataType> precisions;  // the order is the heuristic's (lowest first)
  std::string reason;                // why these ("fp16 enabled", "obeys '*:fp16'", ...)
  DataType outputType = DataType::kFloat32;
  std::string outputReason;
};
// The names precision rules may use for a layer: those of the ONNX nodes fused
// into it, then its own.
std::vector<std::string> layerNamesOf(const Node& node);

// True when `node` computes on float32 values only (so float16/bfloat16 may
// replace them); `why` says what stops it otherwise.
bool canReducePrecision(const Node& node, const ValueMetas& values, std::string* why);
// Applies flags and rules. Fails (kObey) or warns (kPrefer) when a rule cannot hold.
Result<PrecisionChoice> choosePrecisions(const Node& node, const BuilderConfig& config,
                                         bool reducible, const std::string& whyNot,
                                         std::vector<std::string>* warnings);

// A strongly typed build's choice: float32 to the runtime (the graph's own types, no
// rounding) and, for the record, the float type of the node's first float input (else
// output), with the reason. Not for layers fold_qdq made INT8/FP8.
struct StronglyTypedChoice {
  DataType recorded = DataType::kFloat32;
  std::string reason;
};
StronglyTypedChoice stronglyTypedPrecision(const Node& node, const ValueMetas& values);

// What an INT8 build decided about layers that stay float, by ONNX node name.
struct Int8Decisions {
  std::map<std::string, std::string> fallbacks;  // why the layer is not INT8
  std::map<std::string, DataType> pins;          // fp16/fp32 from a pinned cache entry
};
// Implicit INT8 (implicit_int8.cpp): with config.int8 and a calibration table, puts a
// QuantizeLinear/DequantizeLinear pair from the table on the input of every Conv,
// MatMul and Gemm that may run in INT8, and on the residual input of each Add that an
// INT8 Conv's epilogue will take (an int8 Z), for fold_qdq to fold; records why the
// layers that may not run in INT8 do not. Errors: --int8 with neither a table nor Q/DQ
// nodes in the model.
// Ungrouped convolutions with fewer than `minConvChannels` input channels stay float
// (BuildBackend::minInt8ConvInputChannels), unless a precision rule asks for INT8
// under --precision-constraints obey/prefer.
Status insertCalibratedQdq(Network& network, const BuilderConfig& config, Int8Decisions* decisions,
                           int minConvChannels = 0);
// --fp8 (explicit quantization only, as TensorRT's): the model must have float8e4m3fn
// QuantizeLinear/DequantizeLinear nodes, which fold_qdq folds with or without the flag;
// kUnsupported otherwise (Kiln has no FP8 calibration).
Status checkFp8Build(const Network& network, const BuilderConfig& config);
// INT8 layers (fold_qdq's) run in int8 and Fp8MatMul layers in fp8 (a FusedConvMaxPool
// with y_scale computes in float and writes int8: its output type); under an INT8 build
// every other float layer says why it is not INT8 (a float layer after a float8 DQ why
// it is not FP8), and a pinned cache entry pins its readers' precision. Fails (kObey)
// or warns (kPrefer) when a rule asks a Q/DQ-quantized layer for another precision.
Status applyInt8Precision(const Node& node, const BuilderConfig& config, bool reducible,
                          const Int8Decisions& decisions, PrecisionChoice* choice,
                          std::vector<std::string>* warnings);

// Times every enabled candidate of one layer (through the timing cache) and picks
// the fastest; a replayed choice is taken untimed when it is valid.
struct TacticSelection {
  std::vector<TacticCandidate> candidates;
  int winner = -1;         // index into candidates
  std::string replayNote;  // why a replay entry did not apply ("" when it did or none)
  bool replayed = false;
};
struct TimingSession {
  BuildBackend& backend;
  const BuilderConfig& config;
  std::string deviceKey;  // identity part of every cache key
  TimingCacheStats stats;
  int timed = 0;
  // Every time measured in this build, by the same keys as the timing cache: a layer
  // identical to one already timed is not timed again (with or without a cache file).
  TimingCache sameBuild;
};
// A layer's timing inputs, made only when a candidate must be timed (a warm timing
// cache needs none); `exact` asks for the reference run's values.
using InputsOnDemand = std::function<Result<const LayerInputs*>(bool exact)>;
Result<TacticSelection> selectTactic(TimingSession& session, const Node& node,
                                     const PrecisionChoice& precisions, const ValueMetas& values,
                                     const InputsOnDemand& inputs);

// For backends that run one precision per engine: picks the precision whose
// layers' best times add up to the least (rules under kObey must agree on it),
// then moves every layer that can run in it to its fastest candidate there.
struct UniformLayer {
  bool computesInFloat = false;            // false: keeps its own types
  DataType pinned = DataType::kUndefined;  // the one precision a rule or replay allows
};
Status unifyPrecision(const BuilderConfig& config, const std::vector<UniformLayer>& info,
                      BuildRecord* record, std::vector<LayerImplementation>* layers);

// An attribute in words ("[1,1]", "0.5", "float32[3x3]"), cut to `maxLength`
// characters with "..." (std::string::npos: whole, for cache keys).
std::string attributeText(const Attribute& attribute, size_t maxLength);

// `status` about the layer `node` builds: the layer's name, and as node the node itself
// or, for a fused node, the first ONNX node it replaced (by name; its index and op type
// are not known here). Fields already set stay.
Status aboutLayer(const Status& status, const Node& node);

// The report side of a layer: TensorRT-style type, tensors and parameters.
void describeLayer(const Network& network, const Node& node, const ValueMetas& values,
                   LayerRecord* layer);

// Packs activation lifetimes (at the opt shapes) and fills each layer's memory
// offset and the record's activation totals.
void assignMemory(const Network& network, const ValueMetas& values, BuildRecord* record);

// Drops what the verbosity does not keep (TensorRT's kNONE / kLAYER_NAMES_ONLY).
void trimToVerbosity(ProfilingVerbosity verbosity, BuildRecord* record);

}  // namespace kiln::build
