#include "kiln/constraints_file.h"

#include <nlohmann/json.hpp>

#include "kiln/file_io.h"
#include "kiln/json_reader.h"

namespace kiln {
namespace {

constexpr const char* kFormat = "kiln-constraints";
constexpr int kVersion = 1;

bool parsePrecision(const std::string& text, DataType* out) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
                     DataType::kFp8E4M3}) {
    if (precisionSpelling(t) == text) {
      *out = t;
      return true;
    }
  }
  return false;
}

Status parseRules(const nlohmann::json& doc, const std::string& key, const std::string& path,
                  std::vector<LayerPrecisionRule>* rules) {
  if (!doc.contains(key)) return Status::ok();
  if (!doc[key].is_array()) return parseError(path + ": '" + key + "' is not an array");
  for (size_t i = 0; i < doc[key].size(); ++i) {
    const nlohmann::json& rule = doc[key][i];
    LayerPrecisionRule parsed;
    if (!rule.is_object() || !rule.contains("layer") || !rule["layer"].is_string() ||
        !rule.contains("precision") || !rule["precision"].is_string() ||
        rule["layer"].get<std::string>().empty() ||
        !parsePrecision(rule["precision"].get<std::string>(), &parsed.precision)) {
      return parseError(
          path + ": " + key + "[" + std::to_string(i) +
          "] needs a 'layer' name and a 'precision' of fp32, fp16, bf16, int8 or fp8");
    }
    parsed.pattern = rule["layer"].get<std::string>();
    rules->push_back(parsed);
  }
  return Status::ok();
}

nlohmann::json rulesJson(const std::vector<LayerPrecisionRule>& rules) {
  nlohmann::json out = nlohmann::json::array();
  for (const LayerPrecisionRule& r : rules)
    out.push_back({{"layer", r.pattern}, {"precision", precisionSpelling(r.precision)}});
  return out;
}

}  // namespace

Result<PrecisionConstraints> loadPrecisionConstraints(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(const nlohmann::json doc, readJsonDocument(path, "constraints file"));
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != kFormat)
    return parseError(path + ": not a Kiln constraints file (format '" + kFormat + "')");
  KILN_ASSIGN_OR_RETURN(const int version, jsonMember<int>(doc, "version", path));
  if (version != kVersion)
    return parseError(path + ": constraints file version is not " + std::to_string(kVersion));
  PrecisionConstraints constraints;
  KILN_ASSIGN_OR_RETURN(const std::string mode,
                        jsonMemberOr<std::string>(doc, "precision_constraints", "obey", path));
  if (!parseConstraintMode(mode, &constraints.mode))
    return parseError(path + ": 'precision_constraints' takes none, prefer or obey");
  KILN_RETURN_IF_ERROR(parseRules(doc, "layer_precisions", path, &constraints.layerPrecisions));
  KILN_RETURN_IF_ERROR(parseRules(doc, "layer_output_types", path, &constraints.layerOutputTypes));
  KILN_ASSIGN_OR_RETURN(constraints.note, jsonMemberOr<std::string>(doc, "note", "", path));
  return constraints;
}

Status savePrecisionConstraints(const PrecisionConstraints& c, const std::string& path) {
  const nlohmann::json doc = {{"format", kFormat},
                              {"version", kVersion},
                              {"precision_constraints", constraintModeName(c.mode)},
                              {"layer_precisions", rulesJson(c.layerPrecisions)},
                              {"layer_output_types", rulesJson(c.layerOutputTypes)},
                              {"note", c.note}};
  return writeFileAtomically(
      path, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
      "the constraints file");
}

void applyPrecisionConstraints(const PrecisionConstraints& c, BuilderConfig* config) {
  config->precisionConstraints = c.mode;
  auto prepend = [](const std::vector<LayerPrecisionRule>& first,
                    std::vector<LayerPrecisionRule>* rules) {
    rules->insert(rules->begin(), first.begin(), first.end());
  };
  prepend(c.layerPrecisions, &config->layerPrecisions);
  prepend(c.layerOutputTypes, &config->layerOutputTypes);
  for (const auto* rules : {&c.layerPrecisions, &c.layerOutputTypes}) {
    for (const LayerPrecisionRule& r : *rules) {
      config->fp16 = config->fp16 || r.precision == DataType::kFloat16;
      config->bf16 = config->bf16 || r.precision == DataType::kBFloat16;
    }
  }
}

}  // namespace kiln
