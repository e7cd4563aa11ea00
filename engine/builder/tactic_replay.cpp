// TacticReplay files: {"format": "kiln-tactics", "version": 1,
// "layers": {name: {"tactic": ..., "precision": "float16"}}}.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": tactics file not found");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("format", "") != kFormat)
    return parseError(path + ": not a Kiln tactics file (format '" + kFormat + "')");
  if (doc.value("version", 0) != kVersion)
    return parseError(path + ": tactics file version is not " + std::to_string(kVersion));
  if (!doc.contains("layers") || !doc["layers"].is_object())
    return parseError(path + ": tactics file has no 'layers' object");
  TacticReplay replay;
  for (const auto& [name, value] : doc["layers"].items()) {
    TacticChoice choice;
    if (!value.is_object() || !value.contains("tactic") || !value["tactic"].is_string() ||
        !value.contains("precision") || !value["precision"].is_string() ||
        !parseDataType(value["precision"].get<std::string>(), &choice.precision)) {
      return parseError(path + ": layer '" + name + "' needs string 'tactic' and 'precision'");
    }
    choice.tactic = value["tactic"].get<std::string>();
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
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status(StatusCode::kIoError, path + ": cannot write the tactics file");
  out << doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return out ? Status::ok()
             : Status(StatusCode::kIoError, path + ": writing the tactics file failed");
}

}  // namespace kiln
