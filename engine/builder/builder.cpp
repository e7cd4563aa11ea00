// buildPlan: the steps of a build in order. Passes first (they decide the
// layers), then profiles (every later step needs shapes), then per layer
// precision -> tactic (timed on synthetic inputs of the opt shapes, see
// timing_inputs.cpp), then the backend's generated kernels for the final layers,
// then memory, then trimming to the profiling verbosity.
#include <chrono>
#include <optional>
#include <set>

#include "builder/build_steps.h"
#include "ir/conv_max_pool.h"
#include "builder/plugin_layers.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Status checkConfig(const BuilderConfig& config) {
  if (config.optimizationLevel < 0 || config.optimizationLevel > 5)
    return invalidArgument("builder optimization level " +
                           std::to_string(config.optimizationLevel) + " is outside 0..5");
  if (config.workspaceLimitBytes < 0) return invalidArgument("workspace limit is negative");
  if (config.stronglyTyped &&
      (config.fp16 || config.bf16 || config.int8 || config.fp8 || !config.layerPrecisions.empty() ||
       !config.layerOutputTypes.empty() || config.calibration))
    return invalidArgument(
        "a strongly typed build takes its precisions from the model's types: fp16, bf16, int8, "
        "fp8, calibration and per-layer precision rules do not apply");
  return Status::ok();
}

// The network as the plan keeps it: every node carries its opset.
std::shared_ptr<Network> normalizedCopy(const Network& network) {
  auto copy = std::make_shared<Network>(network);
  for (Node& node : copy->graph.nodes) {
    if (node.opset > 0) continue;
    auto it = copy->opsets.find(node.domain == "ai.onnx" ? "" : node.domain);
    node.opset = it == copy->opsets.end() ? copy->defaultOpset() : it->second;
  }
  return copy;
}

void warnUnmatchedRules(const Network& network, const BuilderConfig& config,
                        std::vector<std::string>* warnings) {
  for (const auto* rules : {&config.layerPrecisions, &config.layerOutputTypes}) {
    for (const LayerPrecisionRule& rule : *rules) {
      if (rule.pattern == "*") continue;
      bool found = false;
      for (const Node& node : network.graph.nodes)
        found = found || findLayerRule({rule}, build::layerNamesOf(node)) != nullptr;
      if (!found) warnings->push_back("precision rule '" + rule.pattern + "' matches no layer");
    }
  }
}

// The record's header: what was asked for (callbacks, cache and replay pointers
// cleared), the bindings, the pass applications, rules that match nothing.
BuildRecord startRecord(const Network& network, const BuilderConfig& config,
                        const PlanIdentity& identity, std::vector<PassApplication> passes) {
  BuildRecord record;
  record.passes = std::move(passes);
  record.backend = identity.backend;
  record.modelName = network.sourcePath;
  record.config = config;
  record.config.callbacks = {};
  record.config.timingCache = nullptr;
  record.config.replay = nullptr;
  record.config.calibration = nullptr;
  for (const ValueInfo& in : network.graph.inputs)
    if (!network.graph.initializers.count(in.name)) record.inputNames.push_back(in.name);
  for (const ValueInfo& out : network.graph.outputs) record.outputNames.push_back(out.name);
  warnUnmatchedRules(network, config, &record.warnings);
  return record;
}

// The part of every timing-cache key that is not the layer's: backend, device,
// library versions, and TF32 and the workspace limit (they change what a library
// may pick).
std::string timingKeyPrefix(const PlanIdentity& identity, const BuilderConfig& config) {
  std::string key = identity.backend + ":" + identity.deviceName + ";";
  for (const auto& [name, version] : identity.libraries) key += name + "=" + version + ";";
  return key + "tf32=" + (config.tf32 ? "1" : "0") +
         ";workspace=" + std::to_string(config.workspaceLimitBytes) + ";";
}

// One layer: precision choice, tactic selection, and its record and runtime entry.
Status buildLayer(const Network& network, const Node& node, build::TimingSession& session,
                  build::TimingInputs& timingInputs, const build::Int8Decisions& int8, Plan* plan,
                  std::vector<build::UniformLayer>* uniformInfo) {
  const BuilderConfig& config = session.config;
  BuildRecord& record = plan->record;
  if (timingInputs.needsExact(node)) KILN_RETURN_IF_ERROR(timingInputs.prepareExact());
  std::string whyNot;
  const bool reducible = build::canReducePrecision(node, timingInputs.metas(), &whyNot);
  KILN_ASSIGN_OR_RETURN(build::PrecisionChoice precisions,
                        build::choosePrecisions(node, config, reducible, whyNot, &record.warnings));
  KILN_RETURN_IF_ERROR(
      build::applyInt8Precision(node, config, reducible, int8, &precisions, &record.warnings));
  build::InputsOnDemand inputsOnDemand = [&](bool exact) -> Result<const LayerInputs*> {
    return timingInputs.forNode(node, exact);
  };
  KILN_ASSIGN_OR_RETURN(
      build::TacticSelection selection,
      build::selectTactic(session, node, precisions, timingInputs.metas(), inputsOnDemand));
  LayerRecord layer;
  const TacticCandidate& winner = selection.candidates[selection.winner];
  layer.precision = winner.precision;
  layer.outputType = precisions.outputType != DataType::kFloat32 ? precisions.outputType
                     : reducible                                 ? winner.precision
                                                                 : DataType::kFloat32;
  layer.precisionReason = selection.replayed ? "replayed from the tactics file" : precisions.reason;
  if (!precisions.outputReason.empty()) layer.precisionReason += "; " + precisions.outputReason;
  // Strongly typed: the runtime runs the graph's own types (float32 = no rounding);
  // the record names the type the layer's inputs carry. INT8/FP8 layers keep theirs.
  const bool typedLayer = config.stronglyTyped && winner.precision == DataType::kFloat32;
  const build::StronglyTypedChoice typed =
      typedLayer ? build::stronglyTypedPrecision(node, timingInputs.metas())
                 : build::StronglyTypedChoice{};
  if (typedLayer) {
    layer.precisionReason = typed.reason;
    layer.outputType = DataType::kFloat32;
  }
  layer.tactic = winner.tactic;
  layer.tacticValue = winner.tacticValue;
  layer.tacticSource = winner.source;
  layer.milliseconds = winner.milliseconds;
  layer.choice = winner.choice;
  layer.candidates = selection.candidates;
  build::describeLayer(network, node, timingInputs.metas(), &layer);
  plan->layers.push_back({layer.tactic, layer.precision, layer.outputType});
  if (typedLayer) layer.precision = typed.recorded;  // the record only: the runtime runs as typed
  // A layer that runs in the model's own types (an FP16 model's layers) computes in the
  // type its inputs carry: the record says so (issue 26 item 2: an all-FP16 model read
  // "FP32" everywhere). The runtime entry stays float32, "no rounding": it runs as typed.
  if (!config.stronglyTyped && !reducible && winner.precision == DataType::kFloat32) {
    const build::StronglyTypedChoice own =
        build::stronglyTypedPrecision(node, timingInputs.metas());
    if (own.recorded != DataType::kFloat32) {
      layer.precision = own.recorded;
      layer.precisionReason =
          "computes in the model's own types: " + whyNot + " (" + dataTypeName(own.recorded) + ")";
    }
  }
  if (!selection.replayNote.empty()) {
    record.unreplayedLayers.push_back(layer.name);
    record.warnings.push_back("layer '" + layer.name + "' not replayed: " + selection.replayNote);
  }
  // An INT8 (FP8) layer computes in integers (E4M3) whatever the engine's float
  // precision is: it keeps its own precision, as integer and shape layers do.
  const bool int8Layer =
      precisions.precisions.size() == 1 && (precisions.precisions[0] == DataType::kInt8 ||
                                            precisions.precisions[0] == DataType::kFp8E4M3);
  const DataType pinned = selection.replayed || int8Layer ? winner.precision
                          : reducible && precisions.precisions.size() == 1
                              ? precisions.precisions[0]
                              : DataType::kUndefined;
  uniformInfo->push_back({reducible && !int8Layer, pinned});
  record.layers.push_back(std::move(layer));
  return Status::ok();
}

// Tactics-file entries for layers this network does not have.
void noteMissingReplays(const Network& network, const BuilderConfig& config, BuildRecord* record) {
  if (!config.replay) return;
  std::set<std::string> names;
  for (const Node& node : network.graph.nodes) names.insert(node.displayName());
  for (const auto& [name, choice] : config.replay->layers) {
    if (names.count(name)) continue;
    record->unreplayedLayers.push_back(name);
    record->warnings.push_back("tactics file names layer '" + name + "', which this network lacks");
  }
}

// What the backend needs to generate kernels for the finished layers: each node
// with its final precision and its inputs' types and shapes at the opt shapes.
std::vector<BuiltLayer> builtLayers(const Network& network, const build::ValueMetas& metas,
                                    const std::vector<LayerImplementation>& layers) {
  std::vector<BuiltLayer> built;
  for (size_t i = 0; i < network.graph.nodes.size() && i < layers.size(); ++i) {
    const Node& node = network.graph.nodes[i];
    BuiltLayer layer{&node, layers[i].precision, {}, {}, true};
    for (const std::string& name : node.inputs) {
      auto it = name.empty() ? metas.end() : metas.find(name);
      const bool found = it != metas.end();
      layer.inputTypes.push_back(found ? it->second.type : DataType::kUndefined);
      layer.inputShapes.push_back(found ? it->second.shape : Shape{});
      layer.shapesKnown = layer.shapesKnown && (name.empty() || (found && it->second.shapeKnown));
    }
    built.push_back(std::move(layer));
  }
  return built;
}

// True when a precision rule (prefer or obey) pins a FusedConvMaxPool, by any of the
// layers it was made from, to float32.
bool isHalfFloat(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// A strongly typed model computes in half precision where it holds float16/bfloat16 values:
// an input, an initializer or a Cast to one. Such a build runs the passes as a --fp16 build
// does (the stem fusion's kernel is a half-precision one).
bool typedModelComputesInHalf(const Network& network) {
  for (const ValueInfo& in : network.graph.inputs)
    if (isHalfFloat(in.type)) return true;
  for (const auto& [name, t] : network.graph.initializers)
    if (isHalfFloat(t.type())) return true;
  for (const Node& n : network.graph.nodes)
    if (n.opType == "Cast" && isHalfFloat(static_cast<DataType>(n.attrInt("to", 0)))) return true;
  return false;
}

// A fused stem (FusedConvMaxPool, half precision only) whose layer would run in float32: a
// precision rule pins it, or (strongly typed) its input is float32.
bool stemPinnedToFloat32(const Network& network, const BuilderConfig& config) {
  std::optional<ShapeInferenceResult> types;
  for (const Node& node : network.graph.nodes) {
    if (!isFusedConvMaxPool(node)) continue;
    if (config.stronglyTyped) {
      if (!types) {
        auto inferred = inferShapes(network);
        if (!inferred.isOk()) return true;  // unknown types: keep the stem unfused
        types = std::move(inferred.value());
      }
      auto it = types->values.find(node.inputs.empty() ? std::string() : node.inputs[0]);
      if (it == types->values.end() || !isHalfFloat(it->second.type)) return true;
      continue;
    }
    if (config.precisionConstraints == ConstraintMode::kNone) continue;
    const LayerPrecisionRule* rule =
        findLayerRule(config.layerPrecisions, build::layerNamesOf(node));
    if (rule && rule->precision == DataType::kFloat32) return true;
  }
  return false;
}

}  // namespace

Result<Plan> buildPlan(std::shared_ptr<const Network> source, const BuilderConfig& config,
                       BuildBackend& backend) {
  const Clock::time_point start = Clock::now();
  KILN_RETURN_IF_ERROR(checkConfig(config));
  std::shared_ptr<Network> network;
  build::Int8Decisions int8;
  std::vector<PassApplication> applied;
  std::vector<std::string> disabledPasses = config.disabledPasses;
  // Fusions the backend cannot run are never made; why each was kept apart goes to
  // the record's warnings. The backend is asked about the types the layers will store:
  // in a half-precision build, float32 values as fp16 / bf16.
  std::vector<std::string> refusedFusions;
  const DataType half = config.fp16   ? DataType::kFloat16
                        : config.bf16 ? DataType::kBFloat16
                                      : DataType::kUndefined;
  const FusionTarget target{[&backend, half](const Node& fused, std::vector<DataType> types,
                                             const std::vector<Shape>& shapes) {
                              for (DataType& t : types)
                                if (t == DataType::kFloat32 && half != DataType::kUndefined)
                                  t = half;
                              return backend.fusedNodeSupport(fused, types, shapes);
                            },
                            &refusedFusions};
  // Checked before any dim is fixed: a profile's sizes reach the passes from here.
  KILN_RETURN_IF_ERROR(build::validateProfiles(*source, config.profiles));
  for (int attempt = 0; attempt < 2; ++attempt) {
    refusedFusions.clear();
    network = normalizedCopy(*source);
    build::fixPinnedInputs(*network, config.profiles);
    KILN_RETURN_IF_ERROR(build::checkFp8Build(*network, config));
    int8 = {};
    KILN_RETURN_IF_ERROR(
        build::insertCalibratedQdq(*network, config, &int8, backend.minInt8ConvInputChannels()));
    applied.clear();
    KILN_RETURN_IF_ERROR(
        runPasses(*network, config.optimizationLevel, disabledPasses, &applied,
                  backend.prefersChannelsLast(config.fp16 || config.bf16 || config.tf32),
                  /*halfPrecision=*/config.fp16 || config.bf16 ||
                      (config.stronglyTyped && typedModelComputesInHalf(*source)),
                  &target));
    // A fused stem computes in half precision only: when a precision rule pins one of
    // its layers to float32 the passes run again without fuse_conv_max_pool (the layer
    // would otherwise run on the host fallback).
    if (!stemPinnedToFloat32(*network, config)) break;
    disabledPasses.push_back(kConvMaxPoolPass);
  }
  const BuildCallbacks& callbacks = config.callbacks;
  auto progress = [&callbacks](const std::string& phase, int done, int total,
                               const std::string& item) {
    if (callbacks.onProgress) callbacks.onProgress({phase, done, total, item});
  };
  auto cancelled = [&callbacks] { return callbacks.cancel && callbacks.cancel->load(); };

  Plan plan;
  plan.identity = backend.identity();
  plan.profiles = config.profiles;
  plan.record = startRecord(*network, config, plan.identity, std::move(applied));
  BuildRecord& record = plan.record;
  record.warnings.insert(record.warnings.end(), refusedFusions.begin(), refusedFusions.end());

  progress("shapes", 0, 1, "");
  KILN_ASSIGN_OR_RETURN(auto optShapes, build::resolveProfiles(*network, config.profiles));
  build::TimingInputs timingInputs(*network, optShapes, config.seed);
  KILN_RETURN_IF_ERROR(timingInputs.inferShapes());
  if (cancelled()) return Status(StatusCode::kCancelled, "build cancelled");

  build::TimingSession session{backend, config, timingKeyPrefix(plan.identity, config), {}, 0, {}};
  const Clock::time_point timingStart = Clock::now();
  std::vector<build::UniformLayer> uniformInfo;  // for backends of one precision per engine
  const int layerCount = static_cast<int>(network->graph.nodes.size());
  for (int i = 0; i < layerCount; ++i) {
    if (cancelled()) return Status(StatusCode::kCancelled, "build cancelled");
    const Node& node = network->graph.nodes[i];
    progress("timing", i, layerCount, node.displayName());
    if (Status s = buildLayer(*network, node, session, timingInputs, int8, &plan, &uniformInfo);
        !s.isOk())
      return build::aboutLayer(s, node);
  }
  noteMissingReplays(*network, config, &record);
  progress("timing", layerCount, layerCount, "");
  if (backend.uniformPrecision() && !config.stronglyTyped) {
    KILN_RETURN_IF_ERROR(build::unifyPrecision(config, uniformInfo, &record, &plan.layers));
  }
  KILN_RETURN_IF_ERROR(
      build::finishPluginLayers(*network, config.profiles, timingInputs.metas(), &record));
  record.timingSeconds = secondsSince(timingStart);
  record.timingCache = session.stats;
  record.candidatesTimed = session.timed;
  record.referenceRun = timingInputs.ranReference();

  // Asked of the finished plan, not collected while timing: a warm timing cache or
  // a tactics file times nothing (so nothing compiles then), and timing compiles
  // every candidate precision while the plan keeps one. The backend compiles what
  // no timing compiled in this process and finds the rest in its registry.
  if (cancelled()) return Status(StatusCode::kCancelled, "build cancelled");
  progress("kernels", 0, 1, "");
  plan.generatedKernels = backend.generatedKernels(
      builtLayers(*network, timingInputs.metas(), plan.layers), &record.warnings);

  progress("memory", 0, 1, "");
  build::assignMemory(*network, timingInputs.metas(), &record);
  build::trimToVerbosity(config.profilingVerbosity, &record);
  if (callbacks.onWarning)
    for (const std::string& w : record.warnings) callbacks.onWarning(w);
  plan.network = network;
  record.buildSeconds = secondsSince(start);
  progress("plan", 1, 1, "");
  return plan;
}

}  // namespace kiln
