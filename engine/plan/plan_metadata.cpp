// Plan metadata <-> JSON. Reading treats the document as untrusted: nlohmann's
// type errors are caught here and become one parse error.
#include "plan/plan_metadata.h"

#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/json_reader.h"

namespace kiln::plan {
namespace {
using nlohmann::json;

// Type-checked reads (the fuzzed plan loader found a float read as an integer, which
// nlohmann converts with undefined behaviour): each throws std::invalid_argument naming
// the member ("'tactic_value' must be an unsigned integer, not the number 3.2e+19"),
// which metadataFromJson turns into the plan's parse error.
[[noreturn]] void wrongType(const char* key, const char* want, const json& value) {
  throw std::invalid_argument(std::string("'") + key + "' must be " + want + ", not " +
                              describeJsonValue(value));
}

template <class T>
T as(const json& value, const char* key);

template <class T>
T integerAs(const json& value, const char* key) {
  if (!value.is_number_integer()) wrongType(key, "an integer", value);
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      wrongType(key, "an integer in range", value);
    return static_cast<T>(u);
  }
  const int64_t v = value.get<int64_t>();
  if constexpr (std::is_unsigned_v<T>) {
    if (v < 0) wrongType(key, "a non-negative integer", value);
    if (static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      wrongType(key, "an integer in range", value);
  } else {
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        v > static_cast<int64_t>(std::numeric_limits<T>::max()))
      wrongType(key, "an integer in range", value);
  }
  return static_cast<T>(v);
}

template <>
int as<int>(const json& value, const char* key) {
  return integerAs<int>(value, key);
}
template <>
int64_t as<int64_t>(const json& value, const char* key) {
  return integerAs<int64_t>(value, key);
}
template <>
uint32_t as<uint32_t>(const json& value, const char* key) {
  return integerAs<uint32_t>(value, key);
}
template <>
uint64_t as<uint64_t>(const json& value, const char* key) {
  return integerAs<uint64_t>(value, key);
}
template <>
double as<double>(const json& value, const char* key) {
  if (!value.is_number()) wrongType(key, "a number", value);
  return value.get<double>();
}
template <>
bool as<bool>(const json& value, const char* key) {
  if (!value.is_boolean()) wrongType(key, "true or false", value);
  return value.get<bool>();
}
template <>
std::string as<std::string>(const json& value, const char* key) {
  if (!value.is_string()) wrongType(key, "a string", value);
  return value.get<std::string>();
}
template <>
std::vector<std::string> as<std::vector<std::string>>(const json& value, const char* key) {
  if (!value.is_array()) wrongType(key, "an array of strings", value);
  std::vector<std::string> out;
  for (const json& v : value) out.push_back(as<std::string>(v, key));
  return out;
}
template <>
Shape as<Shape>(const json& value, const char* key) {
  if (!value.is_array()) wrongType(key, "an array of integers", value);
  Shape out;
  for (const json& v : value) out.push_back(as<int64_t>(v, key));
  return out;
}
template <>
std::map<std::string, std::string> as<std::map<std::string, std::string>>(const json& value,
                                                                          const char* key) {
  if (!value.is_object()) wrongType(key, "an object of strings", value);
  std::map<std::string, std::string> out;
  for (const auto& [name, v] : value.items()) out[name] = as<std::string>(v, key);
  return out;
}

// Member `key` of `object` as T.
template <class T>
T field(const json& object, const char* key) {
  if (!object.is_object())
    throw std::invalid_argument(std::string("the object holding '") + key + "' is " +
                                describeJsonValue(object));
  const auto it = object.find(key);
  if (it == object.end()) throw std::invalid_argument(std::string("'") + key + "' is missing");
  return as<T>(*it, key);
}

// A data type code as the file writes it; anything Kiln does not know is damage.
DataType typeFrom(const json& value) {
  const int code = as<int>(value, "type");
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
    rules.push_back({field<std::string>(r, "pattern"), typeFrom(r.at("precision"))});
  return rules;
}

json configToJson(const BuilderConfig& c) {
  return {{"tf32", c.tf32},
          {"fp16", c.fp16},
          {"bf16", c.bf16},
          {"int8", c.int8},
          {"fp8", c.fp8},
          {"strongly_typed", c.stronglyTyped},
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
  c->tf32 = field<bool>(in, "tf32");
  c->fp16 = field<bool>(in, "fp16");
  c->bf16 = field<bool>(in, "bf16");
  c->int8 = field<bool>(in, "int8");
  c->fp8 = field<bool>(in, "fp8");
  c->stronglyTyped = in.value("strongly_typed", false);  // added with TensorRT 11's export
  c->calibrationCachePath = in.value("calibration_cache", std::string());  // added with INT8
  require(parseConstraintMode(field<std::string>(in, "precision_constraints"),
                              &c->precisionConstraints),
          "precision_constraints");
  c->layerPrecisions = rulesFromJson(in.at("layer_precisions"));
  c->layerOutputTypes = rulesFromJson(in.at("layer_output_types"));
  c->optimizationLevel = field<int>(in, "optimization_level");
  c->workspaceLimitBytes = field<int64_t>(in, "workspace_limit_bytes");
  c->tacticSources = field<uint32_t>(in, "tactic_sources");
  require(parseProfilingVerbosity(field<std::string>(in, "profiling_verbosity"),
                                  &c->profilingVerbosity),
          "profiling_verbosity");
  c->seed = field<uint64_t>(in, "seed");
  c->disabledPasses = field<std::vector<std::string>>(in, "disabled_passes");
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
    out.push_back({field<std::string>(t, "name"), field<Shape>(t, "dims"), typeFrom(t.at("type")),
                   field<std::string>(t, "location"), field<std::string>(t, "format")});
  }
  return out;
}

json candidateToJson(const TacticCandidate& c) {
  json out = {{"tactic", c.tactic},     {"value", c.tacticValue},
              {"source", c.source},     {"precision", static_cast<int>(c.precision)},
              {"ms", c.milliseconds},   {"from_cache", c.fromCache},
              {"rejected", c.rejected}, {"detail", c.detail}};
  if (!c.choice.empty()) out["choice"] = c.choice;  // added with the replayed choices
  return out;
}

TacticCandidate candidateFromJson(const json& in) {
  TacticCandidate c;
  c.tactic = field<std::string>(in, "tactic");
  c.tacticValue = field<uint64_t>(in, "value");
  c.source = field<std::string>(in, "source");
  c.precision = typeFrom(in.at("precision"));
  c.milliseconds = field<double>(in, "ms");
  c.fromCache = field<bool>(in, "from_cache");
  c.rejected = field<std::string>(in, "rejected");
  c.detail = field<std::string>(in, "detail");
  if (in.contains("choice")) c.choice = field<std::string>(in, "choice");
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
          {"choice", l.choice},
          {"candidates", candidates},
          {"workspace", l.workspaceBytes},
          {"memory_offset", l.memoryOffset}};
}

LayerRecord layerFromJson(const json& in) {
  LayerRecord l;
  l.name = field<std::string>(in, "name");
  l.layerType = field<std::string>(in, "layer_type");
  l.opType = field<std::string>(in, "op_type");
  l.sourceNodes = field<std::vector<std::string>>(in, "source_nodes");
  l.fusion = field<std::string>(in, "fusion");
  l.inputs = tensorsFromJson(in.at("inputs"));
  l.outputs = tensorsFromJson(in.at("outputs"));
  l.parameters = field<std::map<std::string, std::string>>(in, "parameters");
  l.precision = typeFrom(in.at("precision"));
  l.precisionReason = field<std::string>(in, "precision_reason");
  l.outputType = typeFrom(in.at("output_type"));
  l.tactic = field<std::string>(in, "tactic");
  l.tacticValue = field<uint64_t>(in, "tactic_value");
  l.tacticSource = field<std::string>(in, "tactic_source");
  l.milliseconds = field<double>(in, "ms");
  if (in.contains("choice")) l.choice = field<std::string>(in, "choice");  // since 11-30
  for (const json& c : in.at("candidates")) l.candidates.push_back(candidateFromJson(c));
  l.workspaceBytes = field<int64_t>(in, "workspace");
  l.memoryOffset = field<int64_t>(in, "memory_offset");
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
  r->backend = field<std::string>(in, "backend");
  r->modelName = field<std::string>(in, "model");
  configFromJson(in.at("config"), &r->config);
  for (const json& l : in.at("layers")) r->layers.push_back(layerFromJson(l));
  for (const json& p : in.at("passes")) {
    r->passes.push_back({field<std::string>(p, "pass"), field<std::vector<std::string>>(p, "nodes"),
                         field<std::string>(p, "layer")});
  }
  r->warnings = field<std::vector<std::string>>(in, "warnings");
  r->unreplayedLayers = field<std::vector<std::string>>(in, "unreplayed_layers");
  r->timingCache.lookups = field<int>(in, "cache_lookups");
  r->timingCache.hits = field<int>(in, "cache_hits");
  r->candidatesTimed = field<int>(in, "candidates_timed");
  r->referenceRun = field<bool>(in, "reference_run");
  r->buildSeconds = field<double>(in, "build_seconds");
  r->timingSeconds = field<double>(in, "timing_seconds");
  r->activationBytes = field<int64_t>(in, "activation_bytes");
  r->activationBytesWithoutReuse = field<int64_t>(in, "activation_bytes_without_reuse");
  r->weightBytes = field<int64_t>(in, "weight_bytes");
  r->inputNames = field<std::vector<std::string>>(in, "inputs");
  r->outputNames = field<std::vector<std::string>>(in, "outputs");
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
    plan->identity.backend = field<std::string>(id, "backend");
    plan->identity.deviceName = field<std::string>(id, "device");
    plan->identity.computeMajor = field<int>(id, "compute_major");
    plan->identity.computeMinor = field<int>(id, "compute_minor");
    plan->identity.libraries = field<std::map<std::string, std::string>>(id, "libraries");
    plan->identity.kilnVersion = field<std::string>(id, "kiln_version");
    for (const json& p : doc.at("profiles")) {
      OptimizationProfile profile;
      for (const auto& [name, range] : p.items()) {
        profile.inputs[name] = {field<Shape>(range, "min"), field<Shape>(range, "opt"),
                                field<Shape>(range, "max")};
      }
      plan->profiles.push_back(profile);
    }
    for (const json& l : doc.at("layers")) {
      plan->layers.push_back({field<std::string>(l, "tactic"), typeFrom(l.at("precision")),
                              typeFrom(l.at("output_type"))});
    }
    recordFromJson(doc.at("record"), &plan->record);
  } catch (const std::exception& e) {  // json's type errors and the checks above
    return parseError(std::string("plan metadata is damaged: ") + e.what());
  }
  return Status::ok();
}

}  // namespace kiln::plan
