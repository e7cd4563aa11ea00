// Plan metadata <-> JSON. Reading treats the document as untrusted: nlohmann's
// type errors are caught here and become one parse error.
#include "plan/plan_metadata.h"

#include <stdexcept>

namespace kiln::plan {
namespace {
using nlohmann::json;

// A data type code as the file writes it; anything Kiln does not know is damage.
DataType typeFrom(const json& value) {
  const int code = value.get<int>();
  if (code < 0 || code > kLastDataTypeCode)
    throw std::invalid_argument("data type code " + std::to_string(code) + " is unknown");
  return static_cast<DataType>(code);
}

// Throws when a name field holds something its parser does not accept.
void require(bool parsed, const char* field) {
  if (!parsed) throw std::invalid_argument(std::string("field '") + field + "' is not valid");
}

json rulesToJson(const std::vector<LayerPrecisionRule>& rules) {
  json out = json::array();
  for (const LayerPrecisionRule& r : rules)
    out.push_back({{"pattern", r.pattern}, {"precision", static_cast<int>(r.precision)}});
  return out;
}

std::vector<LayerPrecisionRule> rulesFromJson(const json& in) {
  std::vector<LayerPrecisionRule> rules;
  for (const json& r : in)
    rules.push_back({r.at("pattern").get<std::string>(), typeFrom(r.at("precision"))});
  return rules;
}

json configToJson(const BuilderConfig& c) {
  return {{"tf32", c.tf32},
          {"fp16", c.fp16},
          {"bf16", c.bf16},
          {"int8", c.int8},
          {"fp8", c.fp8},
          {"calibration_cache", c.calibrationCachePath},
          {"precision_constraints", constraintModeName(c.precisionConstraints)},
          {"layer_precisions", rulesToJson(c.layerPrecisions)},
          {"layer_output_types", rulesToJson(c.layerOutputTypes)},
          {"optimization_level", c.optimizationLevel},
          {"workspace_limit_bytes", c.workspaceLimitBytes},
          {"tactic_sources", c.tacticSources},
          {"profiling_verbosity", profilingVerbosityName(c.profilingVerbosity)},
          {"seed", c.seed},
          {"disabled_passes", c.disabledPasses}};
}

void configFromJson(const json& in, BuilderConfig* c) {
  c->tf32 = in.at("tf32").get<bool>();
  c->fp16 = in.at("fp16").get<bool>();
  c->bf16 = in.at("bf16").get<bool>();
  c->int8 = in.at("int8").get<bool>();
  c->fp8 = in.at("fp8").get<bool>();
  c->calibrationCachePath = in.value("calibration_cache", std::string());  // added with INT8
  require(parseConstraintMode(in.at("precision_constraints").get<std::string>(),
                              &c->precisionConstraints),
          "precision_constraints");
  c->layerPrecisions = rulesFromJson(in.at("layer_precisions"));
  c->layerOutputTypes = rulesFromJson(in.at("layer_output_types"));
  c->optimizationLevel = in.at("optimization_level").get<int>();
  c->workspaceLimitBytes = in.at("workspace_limit_bytes").get<int64_t>();
  c->tacticSources = in.at("tactic_sources").get<uint32_t>();
  require(parseProfilingVerbosity(in.at("profiling_verbosity").get<std::string>(),
                                  &c->profilingVerbosity),
          "profiling_verbosity");
  c->seed = in.at("seed").get<uint64_t>();
  c->disabledPasses = in.at("disabled_passes").get<std::vector<std::string>>();
}

json tensorsToJson(const std::vector<TensorRecord>& tensors) {
  json out = json::array();
  for (const TensorRecord& t : tensors) {
    out.push_back({{"name", t.name},
                   {"dims", t.dimensions},
                   {"type", static_cast<int>(t.type)},
                   {"location", t.location},
                   {"format", t.format}});
  }
  return out;
}

std::vector<TensorRecord> tensorsFromJson(const json& in) {
  std::vector<TensorRecord> out;
  for (const json& t : in) {
    out.push_back({t.at("name").get<std::string>(), t.at("dims").get<Shape>(),
                   typeFrom(t.at("type")), t.at("location").get<std::string>(),
                   t.at("format").get<std::string>()});
  }
  return out;
}

json candidateToJson(const TacticCandidate& c) {
  return {{"tactic", c.tactic},     {"value", c.tacticValue},
          {"source", c.source},     {"precision", static_cast<int>(c.precision)},
          {"ms", c.milliseconds},   {"from_cache", c.fromCache},
          {"rejected", c.rejected}, {"detail", c.detail}};
}

TacticCandidate candidateFromJson(const json& in) {
  TacticCandidate c;
  c.tactic = in.at("tactic").get<std::string>();
  c.tacticValue = in.at("value").get<uint64_t>();
  c.source = in.at("source").get<std::string>();
  c.precision = typeFrom(in.at("precision"));
  c.milliseconds = in.at("ms").get<double>();
  c.fromCache = in.at("from_cache").get<bool>();
  c.rejected = in.at("rejected").get<std::string>();
  c.detail = in.at("detail").get<std::string>();
  return c;
}

json layerToJson(const LayerRecord& l) {
  json candidates = json::array();
  for (const TacticCandidate& c : l.candidates) candidates.push_back(candidateToJson(c));
  return {{"name", l.name},
          {"layer_type", l.layerType},
          {"op_type", l.opType},
          {"source_nodes", l.sourceNodes},
          {"fusion", l.fusion},
          {"inputs", tensorsToJson(l.inputs)},
          {"outputs", tensorsToJson(l.outputs)},
          {"parameters", l.parameters},
          {"precision", static_cast<int>(l.precision)},
          {"precision_reason", l.precisionReason},
          {"output_type", static_cast<int>(l.outputType)},
          {"tactic", l.tactic},
          {"tactic_value", l.tacticValue},
          {"tactic_source", l.tacticSource},
          {"ms", l.milliseconds},
          {"candidates", candidates},
          {"workspace", l.workspaceBytes},
          {"memory_offset", l.memoryOffset}};
}

LayerRecord layerFromJson(const json& in) {
  LayerRecord l;
  l.name = in.at("name").get<std::string>();
  l.layerType = in.at("layer_type").get<std::string>();
  l.opType = in.at("op_type").get<std::string>();
  l.sourceNodes = in.at("source_nodes").get<std::vector<std::string>>();
  l.fusion = in.at("fusion").get<std::string>();
  l.inputs = tensorsFromJson(in.at("inputs"));
  l.outputs = tensorsFromJson(in.at("outputs"));
  l.parameters = in.at("parameters").get<std::map<std::string, std::string>>();
  l.precision = typeFrom(in.at("precision"));
  l.precisionReason = in.at("precision_reason").get<std::string>();
  l.outputType = typeFrom(in.at("output_type"));
  l.tactic = in.at("tactic").get<std::string>();
  l.tacticValue = in.at("tactic_value").get<uint64_t>();
  l.tacticSource = in.at("tactic_source").get<std::string>();
  l.milliseconds = in.at("ms").get<double>();
  for (const json& c : in.at("candidates")) l.candidates.push_back(candidateFromJson(c));
  l.workspaceBytes = in.at("workspace").get<int64_t>();
  l.memoryOffset = in.at("memory_offset").get<int64_t>();
  return l;
}

json passesToJson(const std::vector<PassApplication>& passes) {
  json out = json::array();
  for (const PassApplication& p : passes)
    out.push_back({{"pass", p.pass}, {"nodes", p.nodes}, {"layer", p.layer}});
  return out;
}

json recordToJson(const BuildRecord& r) {
  json layers = json::array();
  for (const LayerRecord& l : r.layers) layers.push_back(layerToJson(l));
  return {{"backend", r.backend},
          {"model", r.modelName},
          {"config", configToJson(r.config)},
          {"layers", layers},
          {"passes", passesToJson(r.passes)},
          {"warnings", r.warnings},
          {"unreplayed_layers", r.unreplayedLayers},
          {"cache_lookups", r.timingCache.lookups},
          {"cache_hits", r.timingCache.hits},
          {"candidates_timed", r.candidatesTimed},
          {"reference_run", r.referenceRun},
          {"build_seconds", r.buildSeconds},
          {"timing_seconds", r.timingSeconds},
          {"activation_bytes", r.activationBytes},
          {"activation_bytes_without_reuse", r.activationBytesWithoutReuse},
          {"weight_bytes", r.weightBytes},
          {"inputs", r.inputNames},
          {"outputs", r.outputNames}};
}

void recordFromJson(const json& in, BuildRecord* r) {
  r->backend = in.at("backend").get<std::string>();
  r->modelName = in.at("model").get<std::string>();
  configFromJson(in.at("config"), &r->config);
  for (const json& l : in.at("layers")) r->layers.push_back(layerFromJson(l));
  for (const json& p : in.at("passes")) {
    r->passes.push_back({p.at("pass").get<std::string>(),
                         p.at("nodes").get<std::vector<std::string>>(),
                         p.at("layer").get<std::string>()});
  }
  r->warnings = in.at("warnings").get<std::vector<std::string>>();
  r->unreplayedLayers = in.at("unreplayed_layers").get<std::vector<std::string>>();
  r->timingCache.lookups = in.at("cache_lookups").get<int>();
  r->timingCache.hits = in.at("cache_hits").get<int>();
  r->candidatesTimed = in.at("candidates_timed").get<int>();
  r->referenceRun = in.at("reference_run").get<bool>();
  r->buildSeconds = in.at("build_seconds").get<double>();
  r->timingSeconds = in.at("timing_seconds").get<double>();
  r->activationBytes = in.at("activation_bytes").get<int64_t>();
  r->activationBytesWithoutReuse = in.at("activation_bytes_without_reuse").get<int64_t>();
  r->weightBytes = in.at("weight_bytes").get<int64_t>();
  r->inputNames = in.at("inputs").get<std::vector<std::string>>();
  r->outputNames = in.at("outputs").get<std::vector<std::string>>();
}

json profilesToJson(const std::vector<OptimizationProfile>& profiles) {
  json out = json::array();
  for (const OptimizationProfile& p : profiles) {
    json inputs = json::object();
    for (const auto& [name, range] : p.inputs)
      inputs[name] = {{"min", range.min}, {"opt", range.opt}, {"max", range.max}};
    out.push_back(inputs);
  }
  return out;
}

json implementationsToJson(const std::vector<LayerImplementation>& layers) {
  json out = json::array();
  for (const LayerImplementation& l : layers) {
    out.push_back({{"tactic", l.tactic},
                   {"precision", static_cast<int>(l.precision)},
                   {"output_type", static_cast<int>(l.outputType)}});
  }
  return out;
}

}  // namespace

json metadataToJson(const Plan& plan) {
  const PlanIdentity& id = plan.identity;
  return {{"identity",
           {{"backend", id.backend},
            {"device", id.deviceName},
            {"compute_major", id.computeMajor},
            {"compute_minor", id.computeMinor},
            {"libraries", id.libraries},
            {"kiln_version", id.kilnVersion}}},
          {"profiles", profilesToJson(plan.profiles)},
          {"layers", implementationsToJson(plan.layers)},
          {"record", recordToJson(plan.record)}};
}

Status metadataFromJson(const json& doc, Plan* plan) {
  try {
    const json& id = doc.at("identity");
    plan->identity.backend = id.at("backend").get<std::string>();
    plan->identity.deviceName = id.at("device").get<std::string>();
    plan->identity.computeMajor = id.at("compute_major").get<int>();
    plan->identity.computeMinor = id.at("compute_minor").get<int>();
    plan->identity.libraries = id.at("libraries").get<std::map<std::string, std::string>>();
    plan->identity.kilnVersion = id.at("kiln_version").get<std::string>();
    for (const json& p : doc.at("profiles")) {
      OptimizationProfile profile;
      for (const auto& [name, range] : p.items()) {
        profile.inputs[name] = {range.at("min").get<Shape>(), range.at("opt").get<Shape>(),
                                range.at("max").get<Shape>()};
      }
      plan->profiles.push_back(profile);
    }
    for (const json& l : doc.at("layers")) {
      plan->layers.push_back({l.at("tactic").get<std::string>(), typeFrom(l.at("precision")),
                              typeFrom(l.at("output_type"))});
    }
    recordFromJson(doc.at("record"), &plan->record);
  } catch (const std::exception& e) {  // json's type errors and the checks above
    return parseError(std::string("plan metadata is damaged: ") + e.what());
  }
  return Status::ok();
}

}  // namespace kiln::plan
