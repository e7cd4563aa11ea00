// TacticReplay files: {"format": "kiln-tactics", "version": 1,
// "layers": {name: {"tactic": ..., "precision": "float16"}}}.
#include <nlohmann/json.hpp>

#include "kiln/file_io.h"
#include "kiln/json_reader.h"

#include "kiln/builder.h"

namespace kiln {
namespace {
constexpr const char* kFormat = "kiln-tactics";
constexpr int kVersion = 1;
}  // namespace

TacticReplay TacticReplay::fromRecord(const BuildRecord& record) {
  TacticReplay replay;
  for (const LayerRecord& layer : record.layers) {
    if (!layer.tactic.empty()) replay.layers[layer.name] = {layer.tactic, layer.precision};
  }
  return replay;
}

Result<TacticReplay> TacticReplay::load(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(const nlohmann::json doc, readJsonDocument(path, "tactics file"));
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != kFormat)
    return parseError(path + ": not a Kiln tactics file (format '" + kFormat + "')");
  KILN_ASSIGN_OR_RETURN(const int version, jsonMember<int>(doc, "version", path));
  if (version != kVersion)
    return parseError(path + ": tactics file version is not " + std::to_string(kVersion));
  if (!doc.contains("layers") || !doc["layers"].is_object())
    return parseError(path + ": tactics file has no 'layers' object");
  TacticReplay replay;
  for (const auto& [name, value] : doc["layers"].items()) {
    const std::string where = path + ": layer '" + name + "'";
    TacticChoice choice;
    KILN_ASSIGN_OR_RETURN(choice.tactic, jsonMember<std::string>(value, "tactic", where));
    KILN_ASSIGN_OR_RETURN(const std::string precision,
                          jsonMember<std::string>(value, "precision", where));
    if (!parseDataType(precision, &choice.precision))
      return parseError(where + ": 'precision' is not a data type name");
    replay.layers[name] = choice;
  }
  return replay;
}

Status TacticReplay::save(const std::string& path) const {
  nlohmann::json layersJson = nlohmann::json::object();
  for (const auto& [name, choice] : layers) {
    layersJson[name] = {{"tactic", choice.tactic}, {"precision", dataTypeName(choice.precision)}};
  }
  nlohmann::json doc = {{"format", kFormat}, {"version", kVersion}, {"layers", layersJson}};
  return writeFileAtomically(
      path, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
      "the tactics file");
}

}  // namespace kiln
